"""`kosmos tui` as a user starts it: a real process in a real terminal (tmux), keys sent to it."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from tests.chatkit import example_chat
from tests.llmserver import ScriptedLLM
from tests.tmux import Terminal, wait


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
