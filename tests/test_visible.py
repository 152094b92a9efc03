"""Text kosmos did not write draws its control characters visibly: what the operator reads at
the approval prompt is what runs, and a name from a file cannot redraw a table."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import unicodedata
from collections.abc import Callable
from pathlib import Path

from kosmos.engine.guard import visible, visible_output
from kosmos.tui.focus import REACT_S
from tests.conftest import pseudo_terminal, run_cli
from tests.helpers import read_until
from tests.llmserver import ScriptedLLM
from tests.tmux import Terminal, wait

ESC = "\x1b"
# An LLM reply that, drawn raw, moves to column 1 and erases the line: the operator would
# see only `python3 --version` and approve a write.
SPOOF = (
    f'[CMD] {ESC}[1G{ESC}[2Kpython3 -c \'open("victim.txt", "w").write("x")\''
    f"{ESC}[1G{ESC}[2Kpython3 --version"
)


def test_every_character_a_terminal_does_not_draw_is_shown_as_a_symbol() -> None:
    # Unicode's own categories are the oracle: controls, format characters (bidi overrides
    # and isolates, zero-width characters, tags) and the line and paragraph separators.
    hidden = [
        chr(c) for c in range(0x110000) if unicodedata.category(chr(c)) in ("Cc", "Cf", "Zl", "Zp")
    ]
    assert len(hidden) > 200
    for ch in hidden:
        shown = visible(ch, one_line=True)
        assert shown != ch, f"U+{ord(ch):04X}"
        assert all(unicodedata.category(s) not in ("Cc", "Cf", "Zl", "Zp") for s in shown)
    # Tabs and line feeds stay in text of many lines; a carriage return never does.
    assert visible("a\tb\nc\rd\x1b[2K\u202egnp.exe") == "a\tb\nc␍d␛[2K⟨U+202E⟩gnp.exe"
    assert visible("web1\n", one_line=True) == "web1␊"
    # A command's output keeps its colours and its line ends, nothing else.
    assert visible_output("\x1b[1;31mred\x1b[0m\r\n\x1b[2J\x1b]0;t\x07") == (
        "\x1b[1;31mred\x1b[0m\r\n␛[2J␛]0;t␇"
    )
    assert visible_output("\x1b[31mred", colours=False) == "␛[31mred"


# Marks that draw as nothing, yet carry a byte each: a payload hidden behind a visible `exec(`
# (one variation selector per byte: U+FE00..FE0F for 0..15, U+E0100.. for 16..255).
def hide(payload: bytes) -> str:
    return "".join(chr(0xFE00 + b if b < 16 else 0xE0100 + b - 16) for b in payload)


PAYLOAD = hide(b'open("victim.txt", "w")')
HIDDEN_EXEC = (
    "[CMD] python3 -c 'exec(bytes((ord(c)-0xFE00 if ord(c)<0xE0000 else ord(c)-0xE0100+16)"
    f' for c in "{PAYLOAD}"))\''
)
MARKS = "\u034f\ufe0f\U000e0101\u180b\u17b4\x9b"


def test_marks_that_draw_as_nothing_are_shown_as_symbols() -> None:
    # Not format characters to Unicode (they are combining marks or letters), yet a terminal
    # draws nothing for them: each is a symbol of its own.
    shown = visible(f"exec({MARKS})")
    assert shown == "exec(⟨U+034F⟩⟨U+FE0F⟩⟨U+E0101⟩⟨U+180B⟩⟨U+17B4⟩⟨U+009B⟩)"
    for code in (*range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0), *range(0x80, 0xA0)):
        assert visible(chr(code), one_line=True) == f"⟨U+{code:04X}⟩"


def test_a_payload_hidden_in_variation_selectors_shows_at_the_approval_prompt(
    llm: ScriptedLLM, cli_env: dict, tmp_path: Path
) -> None:
    llm.script(HIDDEN_EXEC, "[DONE] nothing ran")
    with pseudo_terminal() as (keyboard, tty):
        proc = subprocess.Popen(
            [sys.executable, "-m", "kosmos", "run", "system-overview"],
            env=cli_env,
            cwd=tmp_path,
            stdin=tty,
            stdout=tty,
            stderr=tty,
        )
        try:
            shown = read_until(keyboard, b"Run? [y/N/e/a] ").decode()
            os.write(keyboard, b"n\n")
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    # Every hidden byte is there to read, as a symbol; none reaches the screen bare.
    assert "exec(bytes(" in shown and "⟨U+E015F⟩⟨U+E0160⟩" in shown  # "op" of open(
    assert not any(0xFE00 <= ord(c) <= 0xFE0F or ord(c) >= 0xE0000 for c in shown)
    assert not (tmp_path / "victim.txt").exists()


def test_line_mode_shows_the_escapes_of_a_command_instead_of_obeying_them(
    llm: ScriptedLLM, cli_env: dict, tmp_path: Path, terminal: Callable[..., Terminal]
) -> None:
    fenced = "[CMD] ```bash\necho one\nrm -f victim.txt\u202e\necho three\n```"
    llm.script(SPOOF, fenced, "[DONE] nothing ran")
    env = {**cli_env, "TERM": "xterm-256color", "LANG": "C.UTF-8"}
    # The shell keeps the window (and the last screen) after kosmos has ended.
    command = f"{sys.executable} -m kosmos run system-overview; echo exit=$?; sleep 60"
    term = terminal(["sh", "-c", command], env=env, cwd=tmp_path)
    wait(lambda: "Run? [y/N/e/a]" in term.screen(), "the first approval prompt")
    screen = term.screen()
    assert '[1] $ ␛[1G␛[2Kpython3 -c \'open("victim.txt", "w").write("x")\'␛[1G' in screen
    term.keys("n", "Enter")
    wait(lambda: term.screen().count("Run? [y/N/e/a]") == 2, "the second approval prompt")
    lines = term.screen().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("[2] $ "))
    # Every line of what would run, the hidden bidi override shown.
    assert lines[at : at + 3] == [
        "[2] $ echo one",
        "    │ rm -f victim.txt⟨U+202E⟩",
        "    │ echo three",
    ]
    term.keys("n", "Enter")
    wait(lambda: "exit=0" in term.screen(), "the run's end")
    assert "[3] DONE nothing ran" in term.screen()
    assert not (tmp_path / "victim.txt").exists()


def test_the_tui_shows_the_escapes_of_a_command(
    llm: ScriptedLLM, cli_env: dict, tmp_path: Path, terminal: Callable[..., Terminal]
) -> None:
    llm.script(SPOOF, "[DONE] nothing ran")
    env = {**cli_env, "TERM": "xterm-256color", "LANG": "C.UTF-8"}
    command = [sys.executable, "-m", "kosmos", "tui", "--skill", "system-overview"]
    term = terminal(command, env=env, cwd=tmp_path)
    wait(lambda: "system-overview" in term.screen(), "the skill's form")
    term.keys("C-r")
    wait(lambda: "awaiting approval" in term.screen(), "the approval")
    screen = term.screen()
    assert "␛[1G␛[2Kpython3 -c" in screen, screen
    # The step has the focus once the footer offers its keys; only from that frame on does
    # a key answer it, and not within REACT_S: read before deciding, a key sooner is none.
    wait(lambda: "s Skip" in term.screen(), "the step focused, its keys in the footer")
    time.sleep(REACT_S + 0.1)
    term.keys("s")
    wait(lambda: "nothing ran" in term.screen(), "the run's end")
    assert not (tmp_path / "victim.txt").exists()
    term.keys("C-q")


def sealed(result: dict) -> str:
    """A fleet.json as a shard seals it (its hosts name no transcript)."""
    from kosmos.seal import seal_document

    return json.dumps(seal_document(result, {}, None))


def test_names_from_files_cannot_redraw_a_table(cli_env: dict, tmp_path: Path) -> None:
    # A fleet.json and a skill folder someone else wrote.
    run = tmp_path / "run-shard-1-of-1"
    run.mkdir()
    evil = f"web1{ESC}[2K{ESC}[1A"
    (run / "fleet.json").write_text(
        sealed(
            {
                "type": "result",
                "scope": "fleet",
                "status": "done",
                "exit_code": 0,
                "message": f"1 of 1 hosts done {ESC}]0;owned{ESC}\\",
                "duration_s": 1.0,
                "counts": {"done": 1},
                "hosts": [
                    {
                        "host": evil,
                        "target": evil,
                        "status": "done",
                        "steps": 1,
                        "duration_s": 1.0,
                        "last_exit_code": 0,
                        "exit_code": 0,
                        "commands_run": 0,
                        "message": "ok",
                        "mode": "llm",
                    }
                ],
                "skill": "probe",
                "shard": "1/1",
            }
        )
    )
    merged = run_cli(["fleet", "merge", str(run)], env=cli_env, cwd=tmp_path)
    assert ESC not in merged.stdout + merged.stderr
    assert "web1␛[2K␛[1A" in merged.stdout

    skill = tmp_path / "skills" / "probe"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        f"---\nname: probe{ESC}[2K\ndescription: looks\u202e harmless\a\n---\nbody\n"
    )
    listed = run_cli(
        ["skills", "list", "--skills-dir", str(skill.parent)], env=cli_env, cwd=tmp_path
    )
    assert ESC not in listed.stdout and "\u202e" not in listed.stdout
    assert "probe␛[2K" in listed.stdout and "looks⟨U+202E⟩ harmless␇" in listed.stdout


async def test_the_tui_fleet_bar_and_table_show_escapes(llm: ScriptedLLM, home: Path) -> None:
    from textual.widgets import Static

    from tests.fleethelpers import scripted
    from tests.test_tui_fleet import SIZE, fleet_app, start_fleet, waiting_on
    from tests.tuihelpers import until

    command = f"{ESC}[2K\u202erm -rf x"
    names = ["web1", "web2"]
    llm.default = scripted([f"[CMD] {command}", "[DONE] ok"])
    app = fleet_app(llm, home, names)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.main.query("#params-form Input"), "the form")
        await start_fleet(pilot, app)
        await until(pilot, waiting_on(app, command, 2), "the command waiting on both hosts")
        shown = str(app.screen.query_one("#approval-text", Static).render())
        assert "$ ␛[2K⟨U+202E⟩rm -rf x" in shown and ESC not in shown
        await pilot.press("s")
