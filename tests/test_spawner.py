"""The local spawner (hosts/spawner.py, prelude/spawn.py): locked commands on `local` start from
one process per runner, which enters the kernel lock between fork and exec and keeps nothing of
a command behind: when the command ends, when kosmos is killed, when the spawner itself dies."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from kosmos.errors import HostError
from kosmos.hosts.local import LocalRunner
from kosmos.hosts.lock import HostLock, LockStatus
from kosmos.hosts.lock_rules import ARCH_NAMES
from kosmos.hosts.runner import Lock
from kosmos.hosts.spawner import Spawner, spawner_works
from tests.helpers import need

pytestmark = pytest.mark.skipif(
    not spawner_works() or os.uname().machine not in ARCH_NAMES,
    reason="the spawner and the lock are Linux's",
)


def alive(marker: str) -> list[str]:
    """Live processes (zombies are not) whose command line is `marker`: the command's sleeps,
    not the process whose arguments only hold it."""
    need("ps", "procps")
    out = subprocess.run(["ps", "-ww", "-eo", "pid=,stat=,args="], capture_output=True, text=True)
    found = []
    for line in out.stdout.splitlines():
        fields = line.split(None, 2)
        if len(fields) == 3 and fields[1][0] != "Z" and fields[2].strip() == marker:
            found.append(line)
    return found


def gone_within(marker: str, seconds: float) -> list[str]:
    deadline = time.monotonic() + seconds
    while alive(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive(marker)


def children(pid: int) -> list[tuple[int, str]]:
    need("ps", "procps")
    out = subprocess.run(["ps", "-ww", "-o", "pid=,args=", "--ppid", str(pid)], capture_output=True)
    rows = [line.split(None, 1) for line in out.stdout.decode().splitlines()]
    return [(int(row[0]), row[1]) for row in rows if len(row) == 2]


async def _locked_runner(tmp_path: Path) -> LocalRunner:
    runner = LocalRunner(cwd=tmp_path)
    await runner.learn_host(timeout=10)
    status = runner.host_lock.status
    if status is None or not status.held:
        pytest.skip(f"no kernel lock here: {status.describe() if status else 'no probe'}")
    return runner


async def test_a_locked_command_runs_inside_the_lock_and_its_group_ends_with_it(
    tmp_path: Path,
) -> None:
    runner = await _locked_runner(tmp_path)
    marker = f"sleep 300{uuid.uuid4().int % 1000}"
    # A process of the group that outlives the command and holds no output.
    command = f"(exec {marker} >/dev/null 2>&1 &); touch {tmp_path}/w; echo ran $?"
    result = await runner.run(command, timeout=20, lock=Lock())
    assert result.locked and result.exit_code == 0
    assert result.output.text().endswith("ran 1\n")  # touch was refused
    assert not (tmp_path / "w").exists()
    assert gone_within(marker, 5) == []
    fed = await runner.run("read x; echo got $x", timeout=20, lock=Lock(), stdin=b"line")
    assert fed.output.text() == "got line\n"
    await runner.close()


@pytest.mark.parametrize(
    "escape",
    [
        "(setsid {marker} &)",  # a session of its own, holding the output
        "setsid -f {marker} >/dev/null 2>&1",
        "bash -c 'set -m; {marker} >/dev/null 2>&1 & disown'",  # job control: a group of its own
        "perl -e 'fork and exit; setpgrp(0, 0); fork and exit; exec q({marker})'",
        "setsid sh -c 'setsid {marker} & {marker}' >/dev/null 2>&1 &",  # a stray's own stray
    ],
)
async def test_what_leaves_a_locked_commands_group_is_ended_with_it(
    tmp_path: Path, escape: str
) -> None:
    """A daemon escapes the signals to its command's group: the spawner is the subreaper of
    what it starts and ends what a locked command left, once the command's process has ended
    (the command is not held to its timeout when the daemon holds the output). An approved
    command's daemon runs on, as it always has."""
    need("pkill", "procps")
    runner = await _locked_runner(tmp_path)
    marker = f"sleep 310{uuid.uuid4().int % 1000}"
    started = time.monotonic()
    result = await runner.run(escape.format(marker=marker), timeout=30, lock=Lock())
    assert result.locked and result.exit_code == 0 and not result.timed_out
    assert time.monotonic() - started < 10
    assert gone_within(marker, 5) == []
    approved = await runner.run(f"setsid -f {marker} >/dev/null 2>&1", timeout=30)
    assert not approved.locked and approved.exit_code == 0
    try:
        await asyncio.sleep(1.5)  # a look for strays came and went
        assert len(alive(marker)) == 1
    finally:
        subprocess.run(["pkill", "-f", f"^{marker}$"])
        await runner.close()


async def test_a_lock_the_spawner_cannot_set_runs_nothing(tmp_path: Path) -> None:
    arch = ARCH_NAMES[os.uname().machine]
    kit = HostLock(status=LockStatus(abi=7, seccomp=True, interpreter="perl", arch=arch))
    words = kit.words(Lock(), "/bin/sh")
    assert words is not None
    spec = words[-3].replace("path=", "path=4:/no/such/dir path=", 1)
    marker = tmp_path / "ran"
    spawner = Spawner()
    read_out, write_out = os.pipe()
    stdin = os.open(os.devnull, os.O_RDONLY)
    spawned = await spawner.spawn(
        ["/bin/sh", "-c", f"echo ran > {marker}; echo ran"],
        env={"PATH": "/usr/bin:/bin"},
        cwd=tmp_path,
        spec=spec,
        stdin=stdin,
        output=write_out,
    )
    os.close(write_out)
    os.close(stdin)
    code = await spawned.exited
    with os.fdopen(read_out, "rb") as out:
        said = out.read().decode()
    spawned.end()
    spawner.close()
    assert code == 126 and not marker.exists()
    assert said.startswith("kosmos: the kernel lock could not be set (open /no/such/dir")


KOSMOS = """
import asyncio, sys
from kosmos.hosts.local import LocalRunner
from kosmos.hosts.runner import Lock

async def main():
    runner = LocalRunner()
    def said(text):
        print(text, end="", flush=True)
    await runner.run(sys.argv[1], timeout=600, lock=Lock(), on_output=said)

asyncio.run(main())
"""


@pytest.mark.parametrize("how", ["process", "group"])
def test_killing_kosmos_ends_every_locked_command_it_started(how: str) -> None:
    """kill -9 of kosmos (or of its whole process group, as a terminal's hang-up would): the
    spawner ends the command's group, a member that ignores TERM included, then exits."""
    marker = f"sleep 400{uuid.uuid4().int % 1000}"
    command = f"trap '' TERM; {marker} & echo started; {marker}"
    kosmos = subprocess.Popen(
        [sys.executable, "-c", KOSMOS, command],
        stdout=subprocess.PIPE,
        start_new_session=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
    )
    assert kosmos.stdout is not None
    try:
        assert kosmos.stdout.readline() == b"started\n"
        assert len(alive(marker)) == 2
        spawners = [pid for pid, args in children(kosmos.pid) if "spawn.py" in args]
        assert len(spawners) == 1
        if how == "group":
            os.killpg(kosmos.pid, signal.SIGKILL)
        else:
            kosmos.kill()
        kosmos.wait(timeout=10)
        # TERM, a second's grace, then KILL.
        assert gone_within(marker, 10) == []
        assert not _running(spawners[0])
    finally:
        kosmos.kill()
        kosmos.wait()
        kosmos.stdout.close()


def _running(pid: int) -> bool:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return False
        if state == "Z":
            return False
        time.sleep(0.05)
    return True


async def test_a_spawner_that_dies_stops_its_command_with_a_clear_error(tmp_path: Path) -> None:
    runner = await _locked_runner(tmp_path)
    marker = f"sleep 500{uuid.uuid4().int % 1000}"
    started = asyncio.Event()
    task = asyncio.ensure_future(
        runner.run(
            f"echo go; {marker} & {marker}",
            timeout=60,
            lock=Lock(),
            on_output=lambda _: started.set(),
        )
    )
    await asyncio.wait_for(started.wait(), 10)
    spawners = [pid for pid, args in children(os.getpid()) if "spawn.py" in args]
    assert spawners
    for pid in spawners:
        os.kill(pid, signal.SIGKILL)
    with pytest.raises(HostError, match="local commands ended"):
        await asyncio.wait_for(task, 10)
    assert await asyncio.to_thread(gone_within, marker, 5) == []
    # The next command starts a spawner again.
    again = await runner.run("echo again", timeout=20, lock=Lock())
    assert again.output.text() == "again\n" and again.locked
    await runner.close()


def test_a_runner_used_by_two_event_loops_starts_a_spawner_in_each(tmp_path: Path) -> None:
    runner = LocalRunner(cwd=tmp_path)
    for _ in range(2):
        result = asyncio.run(runner.run("echo hi", timeout=20, lock=Lock()))
        assert result.output.text() == "hi\n"
    asyncio.run(runner.close())


async def test_a_locked_command_cannot_reach_the_spawner(tmp_path: Path) -> None:
    """Its parent is the spawner, outside the lock: no signal reaches it (Landlock's scopes),
    no trace, and none of its descriptors can be taken (the lock's ptrace rule)."""
    runner = await _locked_runner(tmp_path)
    status = runner.host_lock.status
    assert status is not None
    take = (
        "import ctypes, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "import sys\n"
        "pidfd = os.pidfd_open(int(sys.argv[1]))\n"
        "taken = [n for n in range(64) if libc.syscall(438, pidfd, n, 0) >= 0]\n"
        "print('taken', taken)\n"
    )
    (tmp_path / "take.py").write_text(take)
    result = await runner.run(
        f"python3 {tmp_path}/take.py $PPID; kill -STOP $PPID; echo stop $?; kill -9 $PPID; echo kill $?",
        timeout=20,
        lock=Lock(),
    )
    said = result.output.text()
    assert "taken []\n" in said
    if status.abi >= 6:
        assert "stop 1\n" in said and "kill 1\n" in said
    again = await runner.run("echo still", timeout=20, lock=Lock())
    assert again.output.text() == "still\n"
    await runner.close()
