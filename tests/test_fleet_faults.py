"""A fleet's faults as an operator meets them: hosts that cannot be reached, a run folder
used twice, hosts that never started, long host lists."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from msgspec.structs import replace

from kosmos.fleet.results import HostSummary, fleet_result, names
from kosmos.transcript import read_transcript
from tests.conftest import pseudo_terminal, run_cli
from tests.fleethelpers import scripted
from tests.llmserver import ScriptedLLM

SKILL = "---\nname: probe\ndescription: a test skill\n---\nCheck the host.\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    (path / ".kosmos/skills/probe").mkdir(parents=True)
    (path / ".kosmos/skills/probe/SKILL.md").write_text(SKILL)
    return path


def inventory(path: Path, *, live: int = 1, dead: int = 1) -> Path:
    """`live` hosts on this machine (h1 ..) and `dead` ones whose port refuses (dead1 ..)."""
    inv = path / "hosts.yml"
    text = "all:\n  hosts:\n"
    text += f"    h[1:{live}]:\n      ansible_host: local\n" if live else ""
    text += (
        f"    dead[1:{dead}]:\n      ansible_host: 127.0.0.1\n      ansible_port: 1\n"
        if dead
        else ""
    )
    inv.write_text(text)
    return inv


def test_an_unreachable_host_is_unreachable_everywhere_and_its_file_is_named(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    llm.default = scripted(["[CMD] echo hi", "[DONE] fine"])
    run_dir = project / "run"
    done = run_cli(
        ["run", "probe", "-i", str(inventory(project)), "--non-interactive", "--yes"]
        + ["--transcript", str(run_dir)],
        env=cli_env,
        cwd=project,
    )
    assert done.returncode == 6, done.stderr
    # The live line, the host's transcript, the table and fleet.json agree.
    assert "dead1  ■ unreachable: " in done.stdout
    table = [line.split() for line in done.stdout.splitlines()]
    table = table[table.index(["HOST", "STATUS", "STEPS", "DURATION", "LAST", "EXIT"]) :]
    assert next(row for row in table if row[0] == "dead1")[1] == "unreachable"
    last = read_transcript(run_dir / "dead1.jsonl")[-1]
    assert last.type == "result" and last.status == "unreachable" and last.exit_code == 6
    fleet = json.loads((run_dir / "fleet.json").read_text())
    entry = next(h for h in fleet["hosts"] if h["host"] == "dead1")
    assert entry["status"] == "unreachable"
    assert entry["transcript"] == str(run_dir / "dead1.jsonl")
    assert fleet["counts"] == {"done": 1, "unreachable": 1}


def test_the_summary_says_why_a_host_was_not_done_at_a_terminal_too(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    llm.default = scripted(["[CMD] echo hi", "[DONE] fine"])
    with pseudo_terminal() as (_, tty):
        # stderr at a terminal: the live table is drawn there and the event log is not.
        proc = subprocess.run(
            [sys.executable, "-m", "kosmos", "run", "probe", "-i", str(inventory(project))]
            + ["--non-interactive", "--yes", "--transcript", str(project / "run")],
            env=cli_env,
            cwd=project,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=tty,
            text=True,
            timeout=60,
        )
    assert proc.returncode == 6
    assert "■ unreachable" not in proc.stdout  # no event log: only the summary
    reason = next(line for line in proc.stdout.splitlines() if line.startswith("  dead1: "))
    assert "127.0.0.1" in reason and "refused" in reason


def test_a_long_host_list_is_counted_not_cut(llm: ScriptedLLM, cli_env: dict, project: Path):
    llm.default = scripted(["[DONE] fine"])
    run_dir = project / "run"
    done = run_cli(
        ["run", "probe", "-i", str(inventory(project, live=1, dead=60)), "--forks", "20"]
        + ["--non-interactive", "--yes", "--transcript", str(run_dir)],
        env=cli_env,
        cwd=project,
        timeout=120,
    )
    assert done.returncode == 6
    message = json.loads((run_dir / "fleet.json").read_text())["message"]
    listed = message[message.index("60 unreachable (") + len("60 unreachable (") : -1]
    shown, more = listed.rsplit(" and ", 1)
    assert more.endswith(" more")
    assert len(shown.split(", ")) + int(more.split()[0]) == 60
    assert not shown.endswith(",") and len(shown) <= 120


def test_names_fit_their_width_and_count_the_rest() -> None:
    assert names(["a", "b"]) == "a, b"
    hosts = [f"web{i:03d}" for i in range(1, 201)]
    text = names(hosts, 40)
    assert text == "web001, web002, web003 and 197 more"
    assert len(names(hosts, 43)) <= 43 and "web004 and 196 more" in names(hosts, 43)
    summary = HostSummary(
        host="x", target="x", status="failed", steps=1, duration_s=1.0, last_exit_code=1,
        exit_code=1, commands_run=1, message="", mode="llm",
    )  # fmt: skip
    result = fleet_result([replace(summary, host=h) for h in hosts], 1.0)
    assert result.message.endswith(", web013 and 187 more)") and len(result.message) < 160


def test_a_run_folder_that_holds_an_earlier_run_is_refused(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    llm.default = scripted(["[DONE] fine"])
    run_dir = project / "run"
    args = ["run", "probe", "-i", str(inventory(project, live=2, dead=0)), "--non-interactive"]
    args += ["--yes", "--transcript", str(run_dir)]
    assert run_cli(args, env=cli_env, cwd=project).returncode == 0
    before = {p.name: p.read_bytes() for p in run_dir.iterdir()}
    again = run_cli(args, env=cli_env, cwd=project)
    assert again.returncode == 2
    assert again.stderr.strip().splitlines() == [
        f"kosmos: --transcript {run_dir}: holds an earlier fleet run (fleet-plan.json, "
        "fleet.json, h1.jsonl, h2.jsonl); give a new directory, or leave --transcript out for "
        "a fresh one"
    ]
    assert {p.name: p.read_bytes() for p in run_dir.iterdir()} == before
    # An empty folder, or one holding other files, is fine.
    other = project / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine\n")
    args[-1] = str(other)
    assert run_cli(args, env=cli_env, cwd=project).returncode == 0
    assert (other / "notes.txt").read_text() == "mine\n"


def test_resuming_a_host_that_never_started_runs_it_anew(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    llm.default = scripted(["[CMD] echo hi", "[DONE] fine"])
    run_dir = project / "run"
    (project / ".kosmos/skills/probe/SKILL.md").write_text(
        SKILL.replace("---\nCheck", "params:\n  - name: what\n    required: true\n---\nCheck")
    )
    done = run_cli(
        ["run", "probe", "-i", str(inventory(project)), "--non-interactive", "--yes"]
        + ["--param", "what=disks", "--transcript", str(run_dir)],
        env=cli_env,
        cwd=project,
    )
    assert done.returncode == 6
    # The host comes back (here: the same name, now on this machine) and is resumed.
    file = run_dir / "dead1.jsonl"
    events = [json.loads(line) for line in file.read_text().splitlines()]
    assert [e["type"] for e in events] == ["run_planned", "result"]
    planned = events[0]
    assert planned["skill"] == "probe" and planned["params"] == {"what": "disks"}
    assert planned["target"] == "127.0.0.1:1"
    # Still unreachable: said, then tried anew (and unreachable again).
    again = run_cli(["run", "--resume", str(file), "--non-interactive"], env=cli_env, cwd=project)
    assert again.returncode == 6
    note = f"{file}: dead1 never started in its fleet run (unreachable); running probe on it anew"
    assert note in again.stderr
    # The host is back (here: on this machine): the plan runs there, into the same file.
    again = run_cli(
        ["run", "--resume", str(file), "--host", "local", "--non-interactive", "--yes"],
        env=cli_env,
        cwd=project,
    )
    assert again.returncode == 0, again.stderr
    assert note in again.stderr
    events = read_transcript(file)
    started = [e for e in events if e.type == "run_started"]
    assert len(started) == 1 and started[0].params == {"what": "disks"}
    assert events[-1].type == "result" and events[-1].status == "done"
