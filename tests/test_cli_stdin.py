"""`kosmos run` with no terminal on standard input: from cron, `</dev/null`, a pipe that stays
open and silent. With nothing to answer with, the run is non-interactive, as with
`--non-interactive`; answers piped in are still read."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kosmos.frontends.stdin import NOTICE
from tests.conftest import run_cli
from tests.helpers import wait_until
from tests.llmserver import ScriptedLLM

PROBE = """---
name: probe
description: Look at one thing
params:
  - name: target
    required: true
---
Run one command and report.
"""


# select(2) and pselect6(2), by number, as /proc/PID/syscall names the call a process waits in.
SELECT_CALLS = {"x86_64": ("23", "270"), "aarch64": ("72",)}


def waits_on_stdin(pid: int) -> bool:
    """True while the process `pid` waits in select for its standard input alone (nfds 1)."""
    try:
        call = Path(f"/proc/{pid}/syscall").read_text().split()
    except OSError:
        return False
    calls = SELECT_CALLS.get(os.uname().machine, ())
    return len(call) > 1 and call[0] in calls and call[1] == "0x1"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    (path / ".kosmos/skills/probe").mkdir(parents=True)
    (path / ".kosmos/skills/probe/SKILL.md").write_text(PROBE)
    return path


def silent_pipe(
    args: list[str], env: dict, cwd: Path, *, later: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run kosmos with a pipe on standard input that stays open (`sleep 1000 | kosmos ...`);
    `later`: written to it once kosmos waits for the pipe's first byte, as a writer still
    starting up would (within the grace kosmos gives it)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "kosmos", *args],
        env=env,
        cwd=cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    try:
        if later is not None:
            wait_until(
                lambda: waits_on_stdin(proc.pid) or proc.poll() is not None,
                what="kosmos to wait for its standard input's first byte",
                every=0.01,
            )
            proc.stdin.write(later)
            proc.stdin.flush()
        proc.wait(timeout=30)  # the pipe is still open: the run must end on its own
        return subprocess.CompletedProcess(
            proc.args, proc.returncode, proc.stdout.read(), proc.stderr.read()
        )
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdin.close()
        proc.stdout.close()
        proc.stderr.close()


def devnull(args: list[str], env: dict, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kosmos", *args],
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )


def errors(stderr: str) -> list[str]:
    """The one-line errors a run printed, the notice about standard input left out."""
    return [line for line in stderr.splitlines() if line.startswith("kosmos:") and line != NOTICE]


@pytest.mark.parametrize("start", [devnull, silent_pipe], ids=["devnull", "open-pipe"])
def test_a_missing_param_with_no_one_to_ask_is_exit_2_as_headless(
    start, cli_env: dict, project: Path
) -> None:
    headless = run_cli(["run", "probe", "--non-interactive"], env=cli_env, cwd=project)
    proc = start(["run", "probe"], cli_env, project)
    assert (proc.returncode, headless.returncode) == (2, 2)
    assert proc.stderr.strip().splitlines() == [NOTICE, *headless.stderr.strip().splitlines()]
    assert "target (" not in proc.stderr and ": " + "\n" not in proc.stderr  # nothing was asked


@pytest.mark.parametrize("start", [devnull, silent_pipe], ids=["devnull", "open-pipe"])
def test_a_proposed_command_with_no_one_to_approve_is_exit_4_as_headless(
    start, llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    llm.script("[CMD] echo one", "[CMD] echo one")
    args = ["run", "probe", "--param", "target=x"]
    headless = run_cli([*args, "--non-interactive"], env=cli_env, cwd=project)
    proc = start(args, cli_env, project)
    assert (proc.returncode, headless.returncode) == (4, 4)
    assert proc.stderr.count(NOTICE) == 1
    assert errors(proc.stderr) == errors(headless.stderr)
    assert "pass --yes" in errors(proc.stderr)[0]
    assert "Run? [" not in proc.stderr


def test_an_open_pipe_with_yes_runs_to_the_end(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    llm.script("[CMD] echo from-the-pipe-run", "[ASK:optional] Anything else?", "[DONE] fine")
    proc = silent_pipe(["run", "probe", "--param", "target=x", "--yes"], cli_env, project)
    assert proc.returncode == 0, proc.stderr
    assert "from-the-pipe-run" in proc.stdout
    # The optional question is skipped (an empty answer), as headless does, with no waiting.
    assert llm.requests[2].last_user_text.startswith("User response: \n")


def test_an_unreachable_llm_with_no_one_to_ask_does_not_offer_a_retry(
    cli_env: dict, project: Path
) -> None:
    env = {**cli_env, "AI_KOSMOS_MODEL_BASE_URL": "http://127.0.0.1:9/v1"}
    proc = silent_pipe(["run", "probe", "--param", "target=x"], env, project)
    assert proc.returncode == 5
    assert "Retry?" not in proc.stderr
    assert "connection refused" in errors(proc.stderr)[0]


def test_answers_piped_in_are_read(llm: ScriptedLLM, cli_env: dict, project: Path) -> None:
    """`printf 'disk\\ny\\n' | kosmos run probe`: the param, then the approval."""
    # Without tool calling the plain prompt asks for the param (with it, a dialogue: seed 003).
    (project / "kosmos.yaml").write_text("providers: {openai: {capabilities: {tools: false}}}\n")
    llm.script("[CMD] echo piped-approval", "[DONE] fine")
    proc = run_cli(["run", "probe"], env=cli_env, cwd=project, stdin="disk\ny\n")
    assert proc.returncode == 0, proc.stderr
    assert NOTICE not in proc.stderr
    assert "Run? [y/N/e/a]" in proc.stderr
    assert "piped-approval" in proc.stdout
    assert "- target: disk" in llm.requests[0].messages[1]["content"]


def test_a_writer_that_starts_a_moment_late_is_still_read(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    llm.script("[CMD] echo late-approval", "[DONE] fine")
    proc = silent_pipe(["run", "probe", "--param", "target=x"], cli_env, project, later="y\n")
    assert proc.returncode == 0, proc.stderr
    assert NOTICE not in proc.stderr
    assert "late-approval" in proc.stdout


def test_non_interactive_given_says_nothing_about_standard_input(
    cli_env: dict, project: Path
) -> None:
    proc = devnull(["run", "probe", "--non-interactive"], cli_env, project)
    assert proc.returncode == 2
    assert NOTICE not in proc.stderr
