"""`kosmos mcp`: resolve what it was started with, then serve on stdio or streamable HTTP."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from msgspec.structs import replace

from kosmos.config import Settings
from kosmos.engine.approval import Policy
from kosmos.mcp.options import DEFAULT_POLICY, McpOptions

# After Ctrl-C, how long the stdio server has to end what it runs before the process ends
# regardless: the SDK reads standard input in a thread that no cancellation reaches, so
# without this a server started by hand outlived two Ctrl-C. What it ran on a host ends with it
# all the same (the lock server and the spawner end their commands when kosmos goes).
STOP_GRACE_S = 1.0


def _interrupt_within(grace: float) -> Callable[[int, FrameType | None], None]:
    def interrupted(signum: int, frame: FrameType | None) -> None:
        timer = threading.Timer(grace, os._exit, args=(130,))
        timer.daemon = True
        timer.start()
        raise KeyboardInterrupt

    return interrupted


@dataclass(frozen=True)
class McpRequest:
    """What `kosmos mcp` was asked for on the command line."""

    http: str | None = None
    token_file: Path | None = None
    policy: Policy | None = None
    skills_dirs: Sequence[Path] = ()
    inventory: Path | None = None
    forks: int = 10
    log: Path | None = None
    verbose: bool = False
    transcript_dir: Path | None = None


def mcp_command(
    request: McpRequest, settings: Settings, *, env: Mapping[str, str], home: Path
) -> int:
    """Serve until the client leaves (stdio) or Ctrl-C / SIGTERM (HTTP); 0 then."""
    from kosmos.mcp.address import parse_address, read_token

    # The cheap checks first: a missing token is one line at once, not after the SDK's import.
    address = parse_address(request.http) if request.http is not None else None
    token = read_token(env, request.token_file) if address is not None else None

    from kosmos.mcp.http import serve_http
    from kosmos.mcp.server import build_server, configure_logging, serve_stdio

    if request.transcript_dir is not None:
        settings = replace(settings, transcript_dir=request.transcript_dir)
    options = McpOptions(
        settings=settings,
        env=dict(env),
        home=home,
        policy=request.policy or DEFAULT_POLICY,
        skills_dirs=tuple(request.skills_dirs),
        inventory=request.inventory,
        forks=request.forks,
    )
    options.hosts_inventory  # noqa: B018 - a bad inventory fails now, not at the first call
    configure_logging(str(request.log) if request.log else None, verbose=request.verbose)
    server = build_server(options)
    if address is None:
        if sys.stdin.isatty():
            print(by_hand_notice(), file=sys.stderr, flush=True)
        signal.signal(signal.SIGINT, _interrupt_within(STOP_GRACE_S))
        asyncio.run(serve_stdio(server))
    else:
        assert token is not None
        asyncio.run(serve_http(server, *address, token))
    return 0


def client_entry() -> dict[str, object]:
    """How an MCP client starts this kosmos: its absolute path, so that the client needs no
    PATH of the venv kosmos was installed in."""
    beside = Path(sys.executable).parent / "kosmos"
    if beside.is_file():
        return {"command": str(beside), "args": ["mcp"]}
    return {"command": sys.executable, "args": ["-m", "kosmos", "mcp"]}


def by_hand_notice() -> str:
    """The one line `kosmos mcp` says when a person, not a client, started it."""
    entry = json.dumps(client_entry())
    return (
        "kosmos mcp: an MCP server on standard input and output, waiting for a client; "
        f"give the client {entry} (Ctrl-C stops it)"
    )
