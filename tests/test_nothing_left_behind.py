"""When kosmos dies, or its connection does, while a command runs: nothing runs on afterwards.

OpenSSH sends no signal to a command without a terminal when its client goes; the wrapper
around every command (kosmos/hosts/wrapper.py) ends the command's process group when its
stdin reaches end-of-file, which sshd delivers once the connection is gone. The same wrapper
runs local commands.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from kosmos.hosts.runner import Lock
from kosmos.hosts.ssh import SSHRunner
from kosmos.hosts.target import parse_target
from kosmos.transcript import read_transcript
from tests.conftest import run_cli
from tests.helpers import need
from tests.llmserver import ScriptedLLM
from tests.sshd import Sshd, write_client_home
from tests.sshserver import FreezableProxy

# The ends of a dead command: it must be gone from the host within this long.
GONE_WITHIN_S = 10.0


def _running(lines: list[str], marker: str) -> list[str]:
    """`ps` lines (pid, stat, args) of processes whose command line starts with `marker`."""
    return [x for x in lines if x.split(None, 2)[2:3] and x.split(None, 2)[2].startswith(marker)]


def _local(marker: str) -> list[str]:
    need("ps", "procps")
    out = subprocess.run(["ps", "-eo", "pid=,stat=,args="], capture_output=True, text=True)
    return [
        x for x in _running(out.stdout.splitlines(), marker) if not x.split()[1].startswith("Z")
    ]


def _wait_for(found: Callable[[], list[str]], count: int, what: str) -> None:
    for _ in range(400):
        if len(found()) >= count:
            return
        time.sleep(0.05)
    raise AssertionError(f"{what} never started")


def _gone_within(found: Callable[[], list[str]], seconds: float) -> list[str]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not found():
            return []
        time.sleep(0.1)
    return found()


def _start_run(args: list[str], env: dict, cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "kosmos", "run", *args],
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _kill_9(proc: subprocess.Popen[str]) -> None:
    proc.kill()
    proc.communicate(timeout=10)


def test_kill_9_of_kosmos_ends_the_command_on_the_host_and_resume_says_so(
    llm: ScriptedLLM, ssh_cli_env: dict, remote: Sshd, tmp_path: Path
) -> None:
    marker = "sleep 1000"
    llm.script(f"[CMD] {marker} & {marker}")
    transcript = tmp_path / "run.jsonl"
    args = ["system-overview", "--host", "box", "--non-interactive", "--yes"]
    proc = _start_run([*args, "--transcript", str(transcript)], ssh_cli_env, tmp_path)
    try:
        _wait_for(lambda: _running(remote.user_processes(), marker), 2, "the remote command")
    finally:
        _kill_9(proc)
    assert _gone_within(lambda: _running(remote.user_processes(), marker), GONE_WITHIN_S) == []

    # The killed run's command started and never finished: --resume does not run it again,
    # and says (to the operator and the LLM) that it was ended on the host.
    llm.script("[DONE] checked")
    resumed = run_cli(
        ["run", "system-overview", "--resume", str(transcript), "--non-interactive", "--yes"],
        env=ssh_cli_env,
        cwd=tmp_path,
    )
    # The LLM finished without it: the run says the command was not run again, and that a
    # person at a terminal can allow it (exit 4), instead of ending done.
    assert resumed.returncode == 4, resumed.stderr
    assert "ended on the host when kosmos stopped" in resumed.stderr
    assert (
        f"kosmos: 1 command the skill needed was refused and nothing ran in its place: {marker} "
        f"& {marker} (kosmos was interrupted while it ran earlier"
    ) in resumed.stderr
    assert "); run at a terminal to be asked\n" in resumed.stderr
    told = llm.requests[-1].last_user_text
    assert "ended it on the host" in told
    assert _running(remote.user_processes(), marker) == []
    events = read_transcript(transcript)
    assert [e.command for e in events if e.type == "command_started"] == [f"{marker} & {marker}"]


def test_kill_9_of_kosmos_ends_a_local_command(
    llm: ScriptedLLM, cli_env: dict, tmp_path: Path
) -> None:
    marker = "sleep 1917"
    llm.script(f"[CMD] {marker} & {marker}")
    proc = _start_run(
        ["system-overview", "--host", "local", "--non-interactive", "--yes"], cli_env, tmp_path
    )
    try:
        _wait_for(lambda: _local(marker), 2, "the local command")
    finally:
        _kill_9(proc)
    assert _gone_within(lambda: _local(marker), GONE_WITHIN_S) == []


def test_kill_9_of_kosmos_ends_a_local_command_inside_the_kernel_lock(
    llm: ScriptedLLM, cli_env: dict, tmp_path: Path
) -> None:
    # Run unasked under read-only, so inside the lock's prelude, with sh as the wrapper.
    marker = "sleep 1918"
    llm.script(f"[CMD] {marker} & {marker}")
    transcript = tmp_path / "run.jsonl"
    proc = _start_run(
        ["system-overview", "--host", "local", "--non-interactive", "--policy", "read-only"]
        + ["--transcript", str(transcript)],
        cli_env,
        tmp_path,
    )
    try:
        _wait_for(lambda: _local(marker), 2, "the local command")
        # The kernel says it runs locked: a seccomp filter (mode 2) and no_new_privs.
        for line in _local(marker):
            status = Path(f"/proc/{line.split()[0]}/status").read_text()
            assert "\nSeccomp:\t2\n" in status and "\nNoNewPrivs:\t1\n" in status
    finally:
        _kill_9(proc)
    assert _gone_within(lambda: _local(marker), GONE_WITHIN_S) == []
    started = [e for e in read_transcript(transcript) if e.type == "command_started"]
    assert [e.command for e in started] == [f"{marker} & {marker}"]


# The perl prelude's own command line: it is the watcher too when the command runs locked.
PRELUDE = "perl -e # kosmos's kernel lock"


@pytest.mark.parametrize("lock", [None, Lock()], ids=["unlocked", "locked"])
async def test_a_cut_connection_ends_the_command_on_the_host(
    remote: Sshd, ssh_home: Path, lock: Lock | None
) -> None:
    proxy = await FreezableProxy(remote.port).start()
    write_client_home(
        ssh_home,
        remote,
        extra_config=(
            f"Host viaproxy\n  HostName 127.0.0.1\n  Port {proxy.port}\n  User {remote.user}\n"
        ),
    )
    known = ssh_home / ".ssh" / "known_hosts"
    known.write_text(
        known.read_text() + remote.known_hosts_line().replace(str(remote.port), str(proxy.port))
    )
    runner = SSHRunner(parse_target("viaproxy"), connect_timeout=5)
    marker = "sleep 1001"
    started = asyncio.Event()
    try:
        task = asyncio.ensure_future(
            runner.run(f"{marker} & {marker}", timeout=60, on_output=lambda t: None, lock=lock)
        )
        for _ in range(200):
            if len(_running(remote.user_processes(), marker)) >= 2:
                started.set()
                break
            await asyncio.sleep(0.05)
        assert started.is_set(), "the remote command never started"
        # Locked, the watcher is the prelude's process, outside the lock; else a shell's.
        assert len(_running(remote.user_processes(), PRELUDE)) == (lock is not None)
        proxy.cut()
        result = await asyncio.wait_for(task, 30)
        assert result.connection_lost
        left = await asyncio.to_thread(
            _gone_within, lambda: _running(remote.user_processes(), marker), GONE_WITHIN_S
        )
        assert left == []
        # The watcher (the prelude itself, when locked) goes too, after the grace it gives.
        watcher = await asyncio.to_thread(
            _gone_within, lambda: _running(remote.user_processes(), PRELUDE), GONE_WITHIN_S
        )
        assert watcher == []
        if lock is not None:
            assert runner.host_lock.watches and result.locked
    finally:
        with contextlib.suppress(Exception):
            await runner.close()
        await proxy.stop()
