"""A fleet killed with SIGKILL is finished by `kosmos run --resume DIR`: every host once."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

from kosmos.events import CommandFinished, LLMRequest, RunFinished, RunStarted
from kosmos.fleet.journal import host_file_name
from kosmos.transcript import read_transcript
from tests.conftest import run_cli
from tests.fleethelpers import steps_of
from tests.llmserver import Recorded, ScriptedLLM

SKILL = "---\nname: probe\ndescription: a test skill\n---\nCheck the host.\n"
HOSTS = [f"h{i}" for i in range(1, 9)]


def setup(tmp_path: Path) -> tuple[list[str], Path]:
    d = tmp_path / "skills" / "probe"
    d.mkdir(parents=True)
    (d / "SKILL.md").write_text(SKILL)
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(
        "all:\n  hosts:\n    h[1:8]:\n      ansible_host: local\n",
    )
    return ["--skills-dir", str(tmp_path / "skills"), "-i", str(inventory)], inventory


def slow_llm(llm: ScriptedLLM, side: Path, gate: threading.Event) -> None:
    """Each host appends one token of its own to `side`, then is done; every reply waits a
    moment while `gate` is clear (the run to be killed), none after."""

    def reply(record: Recorded) -> str:
        if not gate.is_set():
            time.sleep(0.4)
        if steps_of(record) == 1:
            return f"[CMD] echo tok-{uuid.uuid4().hex[:12]} >> {side}"
        return "[DONE] checked"

    llm.default = reply


def states(run_dir: Path) -> dict[str, str]:
    """Each host's state as its transcript says: ended, asking (the LLM), started, absent."""
    found = {}
    for host in HOSTS:
        path = run_dir / host_file_name(host)
        if not path.exists():
            found[host] = "absent"
            continue
        events = read_transcript(path)
        if any(isinstance(e, RunFinished) for e in events):
            found[host] = "ended"
        elif any(isinstance(e, LLMRequest) for e in events):
            found[host] = "asking"
        else:
            found[host] = "started"
    return found


def test_a_killed_fleet_resumes_whole(
    llm: ScriptedLLM, cli_env: dict[str, str], tmp_path: Path
) -> None:
    flags, _ = setup(tmp_path)
    side = tmp_path / "side.txt"
    gate = threading.Event()
    slow_llm(llm, side, gate)
    run_dir = tmp_path / "run"
    args = [sys.executable, "-m", "kosmos", "run", "probe", *flags, "--forks", "2"]
    args += ["--non-interactive", "--yes", "--transcript", str(run_dir)]
    with subprocess.Popen(
        args, env=cli_env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    ) as proc:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            now = states(run_dir) if run_dir.is_dir() else {}
            if list(now.values()).count("ended") >= 2 and "asking" in now.values():
                break
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    before = states(run_dir)
    assert not (run_dir / "fleet.json").exists()
    assert (run_dir / "fleet-plan.json").exists()
    absent = [h for h, s in before.items() if s == "absent"]
    assert list(before.values()).count("ended") >= 2 and len(absent) >= 2, before
    assert "asking" in before.values(), before
    # A full disk leaves a 0-byte transcript, or one cut in its first line: never started.
    (run_dir / host_file_name(absent[0])).write_bytes(b"")
    (run_dir / host_file_name(absent[1])).write_bytes(b'{"type": "run_planned", "host')
    ran_before = side.read_text().splitlines() if side.exists() else []

    gate.set()
    r = run_cli(
        ["run", "--resume", str(run_dir), "--non-interactive", "--yes"],
        env=cli_env,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    ended = list(before.values()).count("ended")
    assert f"resuming the fleet in {run_dir}: {ended} ended (kept)" in r.stderr
    tokens = side.read_text().splitlines()
    assert len(tokens) == len(HOSTS) and len(set(tokens)) == len(HOSTS), tokens
    assert tokens[: len(ran_before)] == ran_before
    for host in HOSTS:  # each host ran its one command once, the one its token names
        events = read_transcript(run_dir / host_file_name(host))
        ran = [e for e in events if isinstance(e, CommandFinished)]
        assert len(ran) == 1, (host, ran)
        assert ran[0].command.split()[1] in tokens
        starts = [e for e in events if isinstance(e, RunStarted)]
        assert len(starts) == (2 if before[host] == "asking" else 1), host
    fleet = json.loads((run_dir / "fleet.json").read_text())
    assert [h["host"] for h in fleet["hosts"]] == HOSTS
    assert {h["host"]: h["status"] for h in fleet["hosts"]} == dict.fromkeys(HOSTS, "done")
    assert fleet["exit_code"] == 0

    # A fleet that ended whole has nothing left to resume.
    again = run_cli(
        ["run", "--resume", str(run_dir), "--non-interactive"], env=cli_env, cwd=tmp_path
    )
    assert again.returncode == 2
    assert "nothing to resume" in again.stderr
