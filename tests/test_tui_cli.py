"""`kosmos tui` as a user starts it: a real process in a real terminal (tmux), keys sent to it."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.chatkit import example_chat
from tests.llmserver import ScriptedLLM


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
    if shutil.which("tmux") is None:
        pytest.fail("tmux is needed for this test (apt-get install tmux)")
    opened: list[Terminal] = []

    def open_terminal(command: list[str], **kwargs: Any) -> Terminal:
        opened.append(Terminal(command, **kwargs))
        return opened[-1]

    yield open_terminal
    for term in opened:
        term.close()


def wait(check: Callable[[], object], what: str, limit: float = 30) -> None:
    deadline = time.monotonic() + limit
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"never got to: {what}")
        time.sleep(0.1)


def test_tui_chat_takes_lang_and_log(
    llm: ScriptedLLM,
    services: Any,
    cli_env: dict[str, str],
    tmp_path: Path,
    terminal: Callable[..., Terminal],
) -> None:
    chat = example_chat(services.base_url, skills=False)
    (tmp_path / "kosmos.yaml").write_text(yaml.safe_dump({"chat": chat}), encoding="utf-8")
    log = tmp_path / "logs" / "tui-chat.log"
    # The locale says English: only --lang makes the chat speak Russian.
    env = {**cli_env, "LANG": "C.UTF-8", "TERM": "xterm-256color"}
    env.pop("LC_ALL", None)
    env.pop("LC_MESSAGES", None)
    command = [sys.executable, "-m", "kosmos", "tui", "--chat", "--lang", "ru", "--log", str(log)]
    term = terminal(command, env=env, cwd=tmp_path)

    def greeted() -> bool:
        assert term.running, "kosmos tui ended at start (a flag it does not take?)"
        return "Привет! Я агент kosmos" in term.screen()

    wait(greeted, "the greeting, in Russian")
    term.keys("/quit", "Enter")
    wait(lambda: "AgentEnd" in (log.read_text() if log.exists() else ""), "the chat's end, logged")
    assert log.read_text().count("AgentStart") == 1
    # No log went to the default place.
    assert not (Path(cli_env["HOME"]) / ".local/state/kosmos/chat").exists()
    term.keys("C-q")
    wait(lambda: not term.running, "kosmos tui quit")
