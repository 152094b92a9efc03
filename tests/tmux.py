"""A real terminal for tests: a tmux server of its own, keys sent, the screen read back."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import need, wait_until


class Terminal:
    """A tmux server of its own, running one command in a 120x40 window."""

    def __init__(self, command: list[str], *, env: dict[str, str], cwd: Path) -> None:
        self.socket = f"kosmos-test-{uuid.uuid4().hex[:8]}"
        # A new tmux server: the command gets exactly this environment.
        self._tmux("new-session", "-d", "-x", "120", "-y", "40", "-c", str(cwd), *command, env=env)

    def _tmux(self, *args: str, env: dict[str, str] | None = None) -> str:
        done = subprocess.run(
            ["tmux", "-u", "-L", self.socket, *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=10,
        )
        return done.stdout

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p")

    def keys(self, *keys: str) -> None:
        self._tmux("send-keys", *keys)

    @property
    def running(self) -> bool:
        return bool(self._tmux("list-sessions"))

    def close(self) -> None:
        self._tmux("kill-server")


@pytest.fixture
def terminal() -> Iterator[Callable[..., Terminal]]:
    need("tmux", "tmux")
    opened: list[Terminal] = []

    def open_terminal(command: list[str], **kwargs: Any) -> Terminal:
        opened.append(Terminal(command, **kwargs))
        return opened[-1]

    yield open_terminal
    for term in opened:
        term.close()


def wait(check: Callable[[], object], what: str, limit: float = 30) -> None:
    wait_until(check, what=what, timeout=limit, every=0.1)
