"""The JSON reply envelope (docs/protocol.md), and its built-in app actions as OS commands.

A reply may be `{"text": ...}`, a JSON string, or an action
`{"session_id", "command", "args", "text"}`. An action that breaks the envelope's rules is dropped
and its text kept; `text` is always a string, possibly empty.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from typing import Any

from kosmos.hosts.own import run_own
from kosmos.hosts.runner import Runner

ACTIONS = ("open_app", "close_app")


@dataclass(frozen=True)
class Envelope:
    """A JSON reply: its text, and the action if it passed validation (else why it was dropped)."""

    text: str
    action: str | None = None
    args: dict[str, Any] = field(default_factory=dict)
    session_id: str | None = None
    dropped: str | None = None


def _filled(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def parse_envelope(reply: str) -> Envelope | None:
    """The envelope in `reply`, or None when the reply is not a JSON envelope at all."""
    stripped = reply.strip()
    if not stripped or stripped[0] not in '{"':
        return None
    try:
        data = json.loads(stripped)
    except json.JSONDecodeError:
        return None
    if isinstance(data, str):
        return Envelope(text=data)
    if not isinstance(data, dict) or not ({"text", "command"} & set(data)):
        return None
    raw_text = data.get("text", "")
    text = raw_text if isinstance(raw_text, str) else ""
    if "command" not in data or data["command"] in (None, ""):
        return Envelope(text=text)
    command, args, session = data.get("command"), data.get("args"), data.get("session_id")
    problem = None
    if not _filled(session):
        problem = "no session_id"
    elif command not in ACTIONS:
        problem = f"unknown command {command!r} (known: {', '.join(ACTIONS)})"
    elif not isinstance(args, dict):
        problem = "args is not an object"
    elif command == "open_app" and not (
        _filled(args.get("app_name")) or _filled(args.get("app_path"))
    ):
        problem = "open_app needs args.app_name or args.app_path"
    elif command == "close_app" and not _filled(args.get("app_name")):
        problem = "close_app needs args.app_name"
    if problem is not None:
        return Envelope(text=text, dropped=problem)
    assert isinstance(args, dict) and isinstance(command, str)
    return Envelope(text=text, action=command, args=args, session_id=session)


def app_command(action: str, args: dict[str, Any], os_name: str) -> str:
    """The shell command an app action becomes on the target: macOS or a Linux desktop."""
    name = str(args.get("app_name") or "").strip()
    path = str(args.get("app_path") or "").strip()
    mac = os_name.lower().startswith("darwin")
    if action == "open_app":
        if mac:
            return f"open {shlex.quote(path)}" if path else f"open -a {shlex.quote(name)}"
        if path:
            return f"xdg-open {shlex.quote(path)}"
        # gtk-launch takes a .desktop id (usually the lower-case name).
        return f"gtk-launch {shlex.quote(name.lower())} || xdg-open {shlex.quote(name)}"
    if mac:
        script = 'quit app "' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'
        return f"osascript -e {shlex.quote(script)}"
    return f"pkill -x {shlex.quote(name)}"


async def target_os(runner: Runner, *, timeout: float) -> str:
    """The host's kernel name (`Darwin`, `Linux`), from the runner if it knows, else `uname -s`."""
    known = getattr(runner, "os", None)
    if isinstance(known, str) and known:
        return known
    probe = await run_own(runner, "uname -s", purpose="target os", timeout=timeout)
    return probe.output.text().strip() or "Linux"
