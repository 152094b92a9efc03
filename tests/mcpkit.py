"""Driving `kosmos mcp` through the MCP SDK's own client: a server per module, a scripted person.

`McpSession` owns one `Client` in a task of its own (the SDK's client must be entered and left
in one task), over stdio (the client starts `python -m kosmos mcp ...`) or over HTTP. `Person`
answers elicitations from a script and records what it was asked.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import mcp_types as t
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.conftest import ROOT
from tests.helpers import need
from tests.llmserver import ScriptedLLM
from tests.sshd import Sshd, write_client_home

PROBE_SKILL = """---
name: probe
description: Look at one thing on the host
params:
  - name: what
    description: what to look at
    required: false
    default: kernel
---
Run one command, then report with [DONE].
"""


class Person:
    """The client's person: answers each elicitation with the next scripted answer."""

    def __init__(self) -> None:
        self.answers: list[tuple[str, dict[str, Any] | None]] = []
        self.asked: list[t.ElicitRequestFormParams] = []

    def will(self, action: str, content: dict[str, Any] | None = None) -> Person:
        self.answers.append((action, content))
        return self

    async def __call__(self, ctx: Any, params: Any) -> t.ElicitResult:
        self.asked.append(params)
        action, content = self.answers.pop(0) if self.answers else ("decline", None)
        return t.ElicitResult(action=action, content=content)


class McpSession:
    """One MCP client connected to `kosmos mcp`, usable from any task of the loop."""

    def __init__(self, make: Callable[[], AbstractAsyncContextManager[Client]]) -> None:
        self.make = make
        self.client: Client | None = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def _own(self) -> None:
        async with self.make() as client:
            self.client = client
            self._ready.set()
            await self._stop.wait()

    async def start(self) -> Client:
        self._task = asyncio.ensure_future(self._own())
        ready = asyncio.ensure_future(self._ready.wait())
        await asyncio.wait({ready, self._task}, timeout=60, return_when="FIRST_COMPLETED")
        if self._task.done():
            self._task.result()  # the connection failed: say why
        assert self.client is not None, "kosmos mcp did not answer within 60 s"
        return self.client

    async def close(self) -> None:
        self._stop.set()
        if self._task is not None:
            await asyncio.wait_for(self._task, 30)


def server_env(home: Path, llm: ScriptedLLM) -> dict[str, str]:
    """The server's environment: its own HOME, the scripted LLM, no keys of ours."""
    import os

    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("KOSMOS_", "OPENAI_", "GEMINI_", "AI_", "XDG_", "SSH_AUTH"))
    }
    env.update(HOME=str(home), AI_KOSMOS_MODEL_BASE_URL=llm.base_url, PYTHONPATH=str(ROOT))
    return env


def fleet_home(home: Path, sshd: Sshd) -> None:
    """~/.ssh for `box`, `box2` and `box3`: three aliases of the one loopback sshd."""
    extra = "".join(
        f"Host {name}\n  HostName 127.0.0.1\n  Port {sshd.port}\n  User {sshd.user}\n"
        for name in ("box2", "box3")
    )
    write_client_home(home, sshd, extra_config=extra)


def skills_dir(root: Path) -> Path:
    folder = root / "skills"
    (folder / "probe").mkdir(parents=True, exist_ok=True)
    (folder / "probe" / "SKILL.md").write_text(PROBE_SKILL)
    return folder


def stdio_client(args: list[str], env: dict[str, str], cwd: Path, person: Person | None) -> Client:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "kosmos", "mcp", *args], env=env, cwd=str(cwd)
    )
    return Client(params, elicitation_callback=person)


def running(sshd: Sshd, marker: str) -> list[str]:
    """The sshd user's processes whose command line starts with `marker`."""
    return [
        x
        for x in sshd.user_processes()
        if x.split(None, 2)[2:3] and x.split(None, 2)[2].startswith(marker)
    ]


def gone_within(found: Callable[[], list[str]], seconds: float) -> list[str]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not found():
            return []
        time.sleep(0.1)
    return found()


def local_processes(marker: str) -> list[str]:
    need("ps", "procps")
    out = subprocess.run(["ps", "-eww", "-o", "pid=,stat=,args="], capture_output=True, text=True)
    return [x for x in out.stdout.splitlines() if marker in x and not x.split()[1].startswith("Z")]
