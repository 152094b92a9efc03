"""`kosmos log` as a user runs it: the recorded runs listed, one run or one fleet host shown."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli
from tests.llmserver import Recorded, ScriptedLLM

SKILL = "---\nname: probe\ndescription: a test skill\n---\nCheck the host.\n"


def _reply(record: Recorded) -> str:
    said = [m for m in record.messages if m["role"] == "assistant"]
    return "[CMD] echo hello-log" if not said else "[DONE] it said hello"


def test_log_lists_runs_and_shows_a_run_and_a_fleet_host(
    llm: ScriptedLLM, cli_env: dict[str, str], home: Path, tmp_path: Path
) -> None:
    (tmp_path / "skills" / "probe").mkdir(parents=True)
    (tmp_path / "skills" / "probe" / "SKILL.md").write_text(SKILL)
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(
        "all:\n  hosts:\n    web1:\n      ansible_host: local\n    web2:\n      ansible_host: local\n"
    )
    llm.default = _reply
    base = ["run", "probe", "--skills-dir", str(tmp_path / "skills"), "--non-interactive", "--yes"]
    # Nothing recorded yet: said so, and no error.
    empty = run_cli(["log"], env=cli_env, cwd=tmp_path)
    assert empty.returncode == 0 and "no runs in" in empty.stderr, empty.stderr
    one = run_cli([*base, "--host", "local"], env=cli_env, cwd=tmp_path)
    assert one.returncode == 0, one.stderr
    fleet = run_cli([*base, "-i", str(inventory), "--canary", "web1"], env=cli_env, cwd=tmp_path)
    assert fleet.returncode == 0, fleet.stderr
    # The fleet's end at the terminal names where its transcripts are and how to read them.
    where = next(line for line in fleet.stderr.splitlines() if "transcripts:" in line)
    run_dir = Path(where.split("transcripts: ")[1].split(" (")[0])
    assert f"kosmos log {run_dir}" in where
    # --yes is the auto policy: what ran unasked ran outside the lock, and the end says so.
    tail = fleet.stdout[fleet.stdout.index("without the kernel lock:") :].splitlines()
    assert tail[1] == "  web1, web2: policy auto: commands that ran unasked ran outside the lock"

    listed = run_cli(["log"], env=cli_env, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0].split() == ["RUN", "WHEN", "SKILL", "HOST", "STATUS", "REPORT"]
    # Newest first: the fleet, then the single run on local.
    assert lines[1].startswith(run_dir.name) and "2 hosts" in lines[1]
    assert lines[1].endswith("done    2 hosts (web1, web2): done: it said hello")
    assert "probe" in lines[2] and "local" in lines[2] and "it said hello" in lines[2]
    single = lines[2].split()[0]
    as_json = run_cli(["log", "--json"], env=cli_env, cwd=tmp_path)
    runs = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert [(r["kind"], r["status"]) for r in runs] == [("fleet", "done"), ("run", "done")]
    assert runs[1]["name"] == single and runs[1]["message"] == "it said hello"

    # One run, by a unique part of its name (its id): steps, command, output, who decided.
    run_id = single.removesuffix(".jsonl").rsplit("-", 1)[1]
    shown = run_cli(["log", run_id], env=cli_env, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert "[1] $ echo hello-log" in out
    assert "\nhello-log\n" in out
    assert "decided by policy (unasked)" in out
    assert "ran inside the kernel lock" in out or "ran without the kernel lock" in out
    assert "[2] DONE it said hello" in out and "report: it said hello" in out

    # The fleet: its table and report; then one host, whose report came from the canary's.
    summary = run_cli(["log", run_dir.name], env=cli_env, cwd=tmp_path)
    assert summary.returncode == 0, summary.stderr
    assert "2 hosts (web1, web2): done: it said hello" in summary.stdout
    assert "made from web1's identical outputs: web2" in summary.stdout
    host = run_cli(["log", run_dir.name, "--host", "web2"], env=cli_env, cwd=tmp_path)
    assert host.returncode == 0, host.stderr
    assert "[1] $ echo hello-log" in host.stdout and "\nhello-log\n" in host.stdout
    assert "decided by policy (unasked)" in host.stdout  # --yes: the policy is auto
    assert "report: it said hello (made from web1's identical outputs)" in host.stdout
    events = run_cli(["log", str(run_dir), "--host", "web2", "--json"], env=cli_env, cwd=tmp_path)
    parsed = [json.loads(line) for line in events.stdout.splitlines()]
    assert parsed[-1]["type"] == "result" and parsed[-1]["report_from"] == "web1"
    fleet_json = run_cli(["log", run_dir.name, "--json"], env=cli_env, cwd=tmp_path)
    assert json.loads(fleet_json.stdout)["report"]["groups"][0]["hosts"] == ["web1", "web2"]

    # What cannot be shown is one line and exit 2.
    for args, said in (
        (["log", "nosuch"], "no run 'nosuch' in"),
        (["log", run_dir.name, "--host", "db9"], "no host 'db9' in the fleet run"),
        (["log", run_id, "--host", "web1"], "a single run, not a fleet's"),
    ):
        bad = run_cli(args, env=cli_env, cwd=tmp_path)
        assert bad.returncode == 2 and said in bad.stderr, (args, bad.stderr)
        assert len(bad.stderr.strip().splitlines()) == 1
