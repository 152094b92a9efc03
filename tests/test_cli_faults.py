"""Faults around kosmos, not in it: a closed pipe, a path that cannot hold a transcript, a
full disk, no terminal for the TUI. Each is one line (or silence) and a documented exit code,
never a traceback; a run under way stops cleanly."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from kosmos.errors import EXIT_PIPE, EXIT_RECORD, EXIT_USAGE
from kosmos.seal import seal_document
from kosmos.transcript import read_transcript
from tests.conftest import run_cli
from tests.fleethelpers import scripted
from tests.helpers import need
from tests.llmserver import ScriptedLLM

SKILL = "---\nname: probe\ndescription: a test skill\n---\nCheck the host.\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    (path / ".kosmos/skills/probe").mkdir(parents=True)
    (path / ".kosmos/skills/probe/SKILL.md").write_text(SKILL)
    return path


def inventory(path: Path, count: int) -> Path:
    """`count` hosts that all run on this machine, h1 .. hN."""
    inv = path / "hosts.yml"
    inv.write_text(f"all:\n  hosts:\n    h[1:{count}]:\n      ansible_host: local\n")
    return inv


def closed_pipe() -> int:
    """The write end of a pipe whose reader is already gone: the first write fails (EPIPE)."""
    read, write = os.pipe()
    os.close(read)
    return write


def kosmos(args: list[str], *, env: dict, cwd: Path, stdout: int) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(
            [sys.executable, "-m", "kosmos", *args],
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    finally:
        os.close(stdout)


def gone(marker: str, limit: float = 15) -> bool:
    """True once no process's command line holds `marker`."""
    need("pgrep", "procps")
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        found = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
        if not found.stdout.strip():
            return True
        time.sleep(0.1)
    return False


# -- a closed pipe -------------------------------------------------------------------------


def test_every_subcommand_exits_quietly_with_141_when_its_reader_is_gone(
    llm: ScriptedLLM, cli_env: dict, project: Path, tmp_path: Path
) -> None:
    llm.default = "[DONE] ok"
    merged = tmp_path / "run"
    merged.mkdir()
    result = {
        "type": "result",
        "scope": "fleet",
        "status": "done",
        "exit_code": 0,
        "message": "1 of 1 hosts done",
        "duration_s": 1.0,
        "counts": {"done": 1},
        "hosts": [],
        "skill": "probe",
    }
    (merged / "fleet.json").write_text(json.dumps(seal_document(result, {}, None)))
    for args in (
        ["skills", "list"],
        ["skills", "show", "probe"],
        ["hosts"],
        ["--help"],
        ["run", "--help"],
        ["fleet", "merge", str(merged), "--json"],
        ["run", "probe", "--non-interactive", "--yes", "--json"],
        ["run", "probe", "--non-interactive", "--yes"],
    ):
        done = kosmos(args, env=cli_env, cwd=project, stdout=closed_pipe())
        assert done.returncode == EXIT_PIPE, (args, done.stderr)
        assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr, args
        if args[0] != "run" or "--help" in args:
            assert done.stderr == "", (args, done.stderr)


def test_a_run_whose_reader_goes_away_stops_its_command_and_closes_the_transcript(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    marker = f"tick-{uuid.uuid4().hex[:8]}"
    llm.script(f"[CMD] for i in $(seq 1 600); do echo {marker} $i; sleep 0.05; done", "[DONE] x")
    transcript = project / "t.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "kosmos", "run", "probe", "--non-interactive", "--yes"]
        + ["--transcript", str(transcript)],
        env=cli_env,
        cwd=project,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    # `| head -n 3` once the command is under way: the reader reads a little and goes.
    with proc:
        seen = [proc.stdout.readline() for _ in range(3)]
        while f"{marker} 2" not in "".join(seen):
            seen.append(proc.stdout.readline())
        proc.stdout.close()
        err = proc.stderr.read()
        proc.wait(timeout=30)
    assert proc.returncode == EXIT_PIPE, err
    assert "Traceback" not in err
    assert "standard output was closed" in err
    assert gone(marker), "the command outlived the run"
    events = read_transcript(transcript)
    assert events[-1].type == "result"
    assert events[-1].status == "aborted" and events[-1].exit_code == EXIT_PIPE
    assert "standard output was closed" in events[-1].message


def test_a_fleet_whose_reader_is_gone_stops_and_still_writes_fleet_json(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    llm.default = scripted(["[CMD] echo hi", "[DONE] fine"])
    run_dir = project / "run"
    args = ["run", "probe", "-i", str(inventory(project, 4)), "--non-interactive", "--yes"]
    args += ["--json", "--transcript", str(run_dir)]
    done = kosmos(args, env=cli_env, cwd=project, stdout=closed_pipe())
    assert done.returncode == EXIT_PIPE, done.stderr
    assert "Traceback" not in done.stderr
    fleet = json.loads((run_dir / "fleet.json").read_text())
    assert fleet["exit_code"] == EXIT_PIPE
    assert sorted(h["host"] for h in fleet["hosts"]) == ["h1", "h2", "h3", "h4"]


# -- a path that cannot hold a transcript --------------------------------------------------


def test_a_transcript_path_under_a_file_is_one_line_and_exit_2(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    llm.default = "[DONE] ok"
    afile = project / "afile"
    afile.write_text("")
    done = run_cli(
        ["run", "probe", "--non-interactive", "--transcript", str(afile / "x.jsonl"), "--json"],
        env=cli_env,
        cwd=project,
    )
    assert done.returncode == EXIT_USAGE
    assert done.stderr.strip().splitlines() == [
        f"kosmos: cannot create the transcript {afile}/x.jsonl: {afile} is a file, not a "
        "directory; give --transcript a path in a directory you can write (or set "
        "transcript_dir in the config)"
    ]
    assert json.loads(done.stdout.splitlines()[-1])["exit_code"] == EXIT_USAGE
    # The same folder named in the config file.
    (project / "kosmos.yaml").write_text(f"transcript_dir: {afile}/runs\n")
    done = run_cli(["run", "probe", "--non-interactive"], env=cli_env, cwd=project)
    assert done.returncode == EXIT_USAGE
    assert "Traceback" not in done.stderr
    assert f"{afile} is a file, not a directory" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    # A directory where a fleet's run directory would go: a fleet gets one line too.
    done = run_cli(
        ["run", "probe", "-i", str(inventory(project, 2)), "--non-interactive"]
        + ["--transcript", str(afile / "run")],
        env=cli_env,
        cwd=project,
    )
    assert done.returncode == EXIT_USAGE, done.stderr
    assert f"{afile} is a file, not a directory" in done.stderr
    assert "Traceback" not in done.stderr


# -- a full disk ----------------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MB filesystem of the test's own (tmpfs), unmounted after."""
    where = tmp_path / "small"
    where.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {mounted.stderr.strip()}")
    try:
        yield where
    finally:
        with contextlib.suppress(OSError):
            subprocess.run(["umount", "-l", str(where)], check=False)


# Each command prints about 590 KB: the transcript keeps it, and two fill the disk.
BIG = "[CMD] seq 1 100000"


def whole_lines(path: Path) -> list[dict]:
    text = path.read_text()
    assert text.endswith("\n"), "the transcript ends with a torn line"
    return [json.loads(line) for line in text.splitlines()]


def test_a_full_disk_stops_a_run_with_one_line_and_exit_7(
    llm: ScriptedLLM, cli_env: dict, project: Path, small_disk: Path
) -> None:
    llm.default = BIG
    transcript = small_disk / "t.jsonl"
    done = run_cli(
        ["run", "probe", "--non-interactive", "--yes", "--json", "--transcript", str(transcript)],
        env=cli_env,
        cwd=project,
    )
    assert done.returncode == EXIT_RECORD, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines()[0] == (
        f"kosmos: cannot write the transcript {transcript}: No space left on device; the run "
        f"stopped there. Free space on that disk, then `kosmos run --resume {transcript}` goes "
        "on from its last whole event"
    )
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["type"] == "result" and result["exit_code"] == EXIT_RECORD
    lines = whole_lines(transcript)
    assert lines[0]["type"] == "run_started"


def test_a_full_disk_stops_a_fleet_and_lists_the_hosts_never_run(
    llm: ScriptedLLM, cli_env: dict, project: Path, small_disk: Path
) -> None:
    llm.default = BIG
    run_dir = small_disk / "run"
    done = run_cli(
        ["run", "probe", "-i", str(inventory(project, 30)), "--forks", "3"]
        + ["--non-interactive", "--yes", "--transcript", str(run_dir)],
        env=cli_env,
        cwd=project,
        timeout=120,
    )
    assert done.returncode == EXIT_RECORD, done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    summary = done.stdout[done.stdout.index("HOST  STATUS") :].splitlines()
    rows = {line.split()[0]: line.split()[1] for line in summary[1:31]}
    assert sorted(rows, key=lambda h: int(h[1:])) == [f"h{i}" for i in range(1, 31)]
    never = [host for host, status in rows.items() if status == "skipped"]
    assert len(never) >= 20, rows  # no new host started once the disk was full
    assert "cannot write the transcript" in summary[31] and "No space left" in summary[31]
    fleet_json = run_dir / "fleet.json"
    if fleet_json.exists():
        assert json.loads(fleet_json.read_text())["exit_code"] == EXIT_RECORD
    else:
        assert f"cannot write {fleet_json}" in done.stderr
    for path in run_dir.glob("*.jsonl"):
        whole_lines(path)


# -- no terminal for the TUI ------------------------------------------------------------------


def test_tui_without_a_terminal_says_so_and_exits_2(cli_env: dict, project: Path) -> None:
    done = run_cli(["tui"], env=cli_env, cwd=project, timeout=30)
    assert done.returncode == EXIT_USAGE
    assert done.stdout == ""
    assert done.stderr.startswith("kosmos: kosmos tui needs a terminal")
    assert len(done.stderr.strip().splitlines()) == 1
