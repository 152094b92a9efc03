"""Colour is for a person at a terminal: not in a file or a pipe, and not with NO_COLOR set."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import pseudo_terminal
from tests.llmserver import ScriptedLLM

# A colour (SGR) sequence; the spinner's line erase (`ESC [K`) is not one.
COLOUR = re.compile(rb"\x1b\[[0-9;]*m")
SKILL = "---\nname: probe\ndescription: probe\n---\nRun one command.\n"


def run_at_a_terminal(
    llm: ScriptedLLM, env: dict[str, str], project: Path, out: Path
) -> tuple[int, bytes]:
    """`kosmos run` with stderr on a terminal and stdout in a file: (exit code, the terminal's
    bytes)."""
    llm.script("[CMD] echo hello", "[DONE] all **fine**")
    with pseudo_terminal() as (screen, tty), out.open("wb") as file:
        done = subprocess.run(
            [sys.executable, "-m", "kosmos", "run", "probe", "--non-interactive", "--yes"]
            + ["--transcript", str(project / "run.jsonl")],
            env=env,
            cwd=project,
            stdin=subprocess.DEVNULL,
            stdout=file,
            stderr=tty,
            timeout=60,
        )
        os.set_blocking(screen, False)
        shown = b""
        while True:
            try:
                chunk = os.read(screen, 65536)
            except (BlockingIOError, OSError):
                break
            if not chunk:
                break
            shown += chunk
    return done.returncode, shown


def project_with_skill(tmp_path: Path) -> Path:
    (tmp_path / ".kosmos/skills/probe").mkdir(parents=True)
    (tmp_path / ".kosmos/skills/probe/SKILL.md").write_text(SKILL)
    return tmp_path


def test_a_run_redirected_to_a_file_writes_no_escapes_there(
    llm: ScriptedLLM, cli_env: dict, tmp_path: Path
) -> None:
    project = project_with_skill(tmp_path)
    code, shown = run_at_a_terminal(llm, cli_env, project, tmp_path / "run.log")
    assert code == 0, shown
    written = (tmp_path / "run.log").read_text()
    assert "hello" in written and "fine" in written
    assert "\x1b[" not in written
    # The terminal still gets its colours (so this test can fail).
    assert COLOUR.search(shown)


def test_no_color_leaves_the_terminal_plain(
    llm: ScriptedLLM, cli_env: dict, tmp_path: Path
) -> None:
    project = project_with_skill(tmp_path)
    env = {**cli_env, "NO_COLOR": "1"}
    code, shown = run_at_a_terminal(llm, env, project, tmp_path / "run.log")
    assert code == 0, shown
    assert not COLOUR.search(shown) and b"hello" in (tmp_path / "run.log").read_bytes()
