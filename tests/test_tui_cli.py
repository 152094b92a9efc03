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


def test_the_screen_lists_the_ssh_config_hosts_without_loading_ssh(
    cli_env: dict[str, str], tmp_path: Path, terminal: Callable[..., Terminal]
) -> None:
    """The screen starts with the hosts of ~/.ssh/config (and of the files it includes) in its
    list; reading their names takes no SSH library: asyncssh (and the cryptography under it)
    load with the first host kosmos connects to, not with the screen; the chat loads when
    it is opened."""
    ssh = Path(cli_env["HOME"]) / ".ssh"
    (ssh / "conf.d").mkdir(parents=True)
    (ssh / "config").write_text(
        "Include conf.d/*.conf\nHost web-one web-two\n  Port 2222\nHost *\n  User ops\n"
    )
    (ssh / "conf.d" / "db.conf").write_text("Host db-three\n  HostName 10.0.0.3\n")
    trace = tmp_path / "modules.txt"
    # `python -m kosmos tui`, writing the names of the modules it loaded as it exits (the
    # screen draws on stderr, so no `-X importtime` there).
    code = (
        "import atexit, runpy, sys\n"
        f"atexit.register(lambda: open({str(trace)!r}, 'w').write('\\n'.join(sys.modules)))\n"
        "sys.argv = ['kosmos', 'tui']\n"
        "runpy.run_module('kosmos', run_name='__main__')\n"
    )
    command = [sys.executable, "-c", code]
    env = {**cli_env, "LANG": "C.UTF-8", "TERM": "xterm-256color"}
    term = terminal(command, env=env, cwd=tmp_path)

    def listed() -> bool:
        assert term.running, "kosmos tui ended at start"
        screen = term.screen()
        return all(name in screen for name in ("web-one", "web-two", "db-three"))

    wait(listed, "the ssh_config hosts in the host list")
    term.keys("C-q")
    wait(lambda: not term.running, "kosmos tui quit")
    wait(trace.exists, "the list of modules the screen loaded")
    loaded = set(trace.read_text().splitlines())
    assert "textual.app" in loaded  # the trace is the screen's
    assert not {m for m in loaded if m.split(".")[0] in ("asyncssh", "cryptography")}
    assert not {m for m in loaded if m.startswith(("kosmos.chat", "kosmos.tui.screens.chat"))}
