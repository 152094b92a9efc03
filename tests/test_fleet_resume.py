"""A fleet killed with SIGKILL is finished by `kosmos run --resume DIR`: every host once."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from kosmos.events import (
    CommandDecision,
    CommandFinished,
    CommandStarted,
    LLMRequest,
    RunFinished,
    RunStarted,
)
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
    """Each host's state as its transcript says: ended, asking (the LLM), started (or stopped
    by a full disk, exit 7), absent."""
    found = {}
    for host in HOSTS:
        path = run_dir / host_file_name(host)
        if not path.exists():
            found[host] = "absent"
            continue
        events = read_transcript(path)
        ends = [e for e in events if isinstance(e, RunFinished)]
        if not any(isinstance(e, RunStarted) for e in events):
            found[host] = "absent"  # nothing written, or only its plan (not started)
        elif ends and ends[-1].exit_code != 7:
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
    # Its seal covers the first run's lines and the resumed ones: the merge takes it.
    merged = run_cli(["fleet", "merge", str(run_dir)], env=cli_env, cwd=tmp_path)
    assert merged.returncode == 0, merged.stderr
    assert f"{len(HOSTS)} of {len(HOSTS)} hosts done" in merged.stdout

    # A fleet that ended whole has nothing left to resume.
    again = run_cli(
        ["run", "--resume", str(run_dir), "--non-interactive"], env=cli_env, cwd=tmp_path
    )
    assert again.returncode == 2
    assert "nothing to resume" in again.stderr


def test_a_command_the_kill_cut_is_not_run_again_headless(
    llm: ScriptedLLM, cli_env: dict[str, str], tmp_path: Path
) -> None:
    flags, _ = setup(tmp_path)
    side = tmp_path / "side.txt"

    def reply(record: Recorded) -> str:
        if steps_of(record) == 1:
            return f"[CMD] echo tok-{uuid.uuid4().hex[:12]} >> {side}; sleep 5"
        return "[DONE] checked"

    llm.default = reply
    run_dir = tmp_path / "run"
    args = [sys.executable, "-m", "kosmos", "run", "probe", *flags, "--hosts", "h1:h2"]
    args += ["--non-interactive", "--yes", "--transcript", str(run_dir)]
    with subprocess.Popen(
        args, env=cli_env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    ) as proc:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            if side.exists() and len(side.read_text().splitlines()) == 2:
                break
            time.sleep(0.02)
        # While the fleet runs, its plan is held: a resume would run its hosts twice.
        early = run_cli(["run", "--resume", str(run_dir), "--yes"], env=cli_env, cwd=tmp_path)
        assert early.returncode == 2
        assert "that fleet is still running" in early.stderr
        assert proc.poll() is None
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert len(side.read_text().splitlines()) == 2

    r = run_cli(
        ["run", "--resume", str(run_dir), "--non-interactive", "--yes"], env=cli_env, cwd=tmp_path
    )
    # Headless, as `--resume` of one run: the LLM is told the result is unknown, and the
    # command it needed is refused (exit 4), never run again.
    assert r.returncode == 4, r.stdout + r.stderr
    assert "0 ended (kept), 2 interrupted (resumed), 0 not started" in r.stderr
    assert len(side.read_text().splitlines()) == 2  # neither command ran again
    for host in ("h1", "h2"):
        events = read_transcript(run_dir / host_file_name(host))
        refused = [e for e in events if isinstance(e, CommandDecision)][-1]
        assert refused.decision == "refused", host
    fleet = json.loads((run_dir / "fleet.json").read_text())
    assert [(h["host"], h["status"]) for h in fleet["hosts"]] == [
        ("h1", "needs_input"),
        ("h2", "needs_input"),
    ]


def test_a_fleet_whose_canary_ended_resumes_replaying_it(
    llm: ScriptedLLM, cli_env: dict[str, str], tmp_path: Path
) -> None:
    flags, _ = setup(tmp_path)
    side = tmp_path / "side.txt"
    llm.default = lambda record: (
        f"[CMD] echo one >> {side}; sleep 0.3" if steps_of(record) == 1 else "[DONE] checked"
    )
    run_dir = tmp_path / "run"
    args = [sys.executable, "-m", "kosmos", "run", "probe", *flags, "--canary", "h1"]
    args += ["--forks", "2", "--non-interactive", "--yes", "--transcript", str(run_dir)]
    with subprocess.Popen(
        args, env=cli_env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    ) as proc:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            if run_dir.is_dir() and states(run_dir)["h1"] == "ended":
                break
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    before = states(run_dir)
    assert before["h1"] == "ended" and "absent" in before.values(), before

    r = run_cli(
        ["run", "--resume", str(run_dir), "--non-interactive", "--yes"], env=cli_env, cwd=tmp_path
    )
    assert r.returncode in (0, 4), r.stdout + r.stderr  # 4: a command the kill cut, refused
    fleet = {h["host"]: h for h in json.loads((run_dir / "fleet.json").read_text())["hosts"]}
    assert fleet["h1"]["mode"] == "canary" and fleet["h1"]["status"] == "done"
    finished = 0
    for host in HOSTS:  # every host's command started once, never twice
        events = read_transcript(run_dir / host_file_name(host))
        assert sum(isinstance(e, CommandStarted) for e in events) == 1, host
        finished += any(isinstance(e, CommandFinished) for e in events)
        if before[host] == "absent":
            assert fleet[host]["mode"] == "replay" and fleet[host]["status"] == "done", host
    # A command the kill cut may have been killed before its echo ran, never run twice.
    assert finished <= len(side.read_text().splitlines()) <= len(HOSTS)


def test_a_folder_without_a_plan_is_refused_with_what_to_do(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    old = tmp_path / "old-fleet"
    old.mkdir()
    (old / "h1.jsonl").write_bytes(b"")
    r = run_cli(["run", "--resume", str(old), "--non-interactive"], env=cli_env, cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines()[-1] == (
        f"kosmos: --resume {old}: no fleet-plan.json there; a fleet run by an older kosmos "
        "cannot be resumed whole, resume each host's HOST.jsonl with --resume FILE"
    )
    assert (old / "h1.jsonl").read_bytes() == b""


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
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_a_fleet_stopped_by_a_full_disk_resumes_whole_once_there_is_space(
    llm: ScriptedLLM, cli_env: dict[str, str], tmp_path: Path, small_disk: Path
) -> None:
    flags, _ = setup(tmp_path)
    side = tmp_path / "side.txt"
    # Each command prints about 350 KB, which its host's transcript keeps: the disk fills.
    llm.default = lambda record: (
        f"[CMD] echo tok-{uuid.uuid4().hex[:12]} >> {side}; seq 1 60000"
        if steps_of(record) == 1
        else "[DONE] checked"
    )
    run_dir = small_disk / "run"
    args = ["run", "probe", *flags, "--forks", "2", "--non-interactive", "--yes"]
    full = run_cli([*args, "--transcript", str(run_dir)], env=cli_env, cwd=tmp_path)
    assert full.returncode == 7, full.stdout + full.stderr
    assert (
        not (run_dir / "fleet.json").exists()
        or json.loads((run_dir / "fleet.json").read_text())["exit_code"] == 7
    )
    before = states(run_dir)
    assert "ended" in before.values() and set(before.values()) != {"ended"}, before
    subprocess.run(["mount", "-o", "remount,size=64m", str(small_disk)], check=True)

    r = run_cli(
        ["run", "--resume", str(run_dir), "--non-interactive", "--yes"], env=cli_env, cwd=tmp_path
    )
    assert r.returncode in (0, 4), r.stdout + r.stderr  # 4: a command whose result was lost
    tokens = side.read_text().splitlines()
    assert len(tokens) == len(HOSTS) and len(set(tokens)) == len(HOSTS), tokens
    fleet = {h["host"]: h for h in json.loads((run_dir / "fleet.json").read_text())["hosts"]}
    assert sorted(fleet) == HOSTS
    for host in HOSTS:
        events = read_transcript(run_dir / host_file_name(host))
        assert sum(isinstance(e, CommandStarted) for e in events) == 1, host
        assert fleet[host]["status"] in ("done", "needs_input"), fleet[host]
        if before[host] in ("absent", "ended"):
            assert fleet[host]["status"] == "done", fleet[host]


def test_a_host_that_ended_unreachable_is_kept_and_fleet_json_written_again(
    llm: ScriptedLLM, cli_env: dict[str, str], tmp_path: Path
) -> None:
    flags, inventory = setup(tmp_path)
    inventory.write_text(
        "all:\n  hosts:\n    h1:\n      ansible_host: local\n"
        "    dead:\n      ansible_host: 127.0.0.1\n      ansible_port: 1\n"
    )
    llm.default = lambda record: "[DONE] checked"
    run_dir = tmp_path / "run"
    args = ["run", "probe", *flags, "--non-interactive", "--yes", "--transcript", str(run_dir)]
    first = run_cli(args, env=cli_env, cwd=tmp_path)
    assert first.returncode == 6, first.stderr
    (run_dir / "fleet.json").unlink()  # killed as it was about to write it
    dead = (run_dir / "dead.jsonl").read_bytes()

    r = run_cli(["run", "--resume", str(run_dir), "--non-interactive"], env=cli_env, cwd=tmp_path)
    assert r.returncode == 6, r.stderr
    assert "2 ended (kept), 0 interrupted (resumed), 0 not started" in r.stderr
    assert (run_dir / "dead.jsonl").read_bytes() == dead  # not tried again
    fleet = json.loads((run_dir / "fleet.json").read_text())
    assert [(h["host"], h["status"]) for h in fleet["hosts"]] == [
        ("h1", "done"),
        ("dead", "unreachable"),
    ]
    assert fleet["exit_code"] == 6
