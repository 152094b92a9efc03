"""The lock server on an SSH host (hosts/ssh_serve.py, prelude/lock.pl `serve=1`): one session
carries a connection's locked commands, and the guarantees of a session a command stay.

Debian's sshd on loopback, its unprivileged user; each check looks at the host's processes
and at what the commands themselves report, not at kosmos's own state.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from kosmos.hosts.knowledge import KNOWLEDGE_PATHS
from kosmos.hosts.runner import READ_FILE_LIMIT, FileUnreadable, Lock
from kosmos.hosts.ssh import SSHRunner
from kosmos.hosts.target import parse_target
from tests.sshd import Sshd, write_client_home

GONE_WITHIN_S = 10.0
SERVER = "perl -e # kosmos's kernel lock"


def _alive(server: Sshd, marker: str) -> list[str]:
    return [line for line in server.user_processes() if marker in line.split(None, 2)[2]]


async def _gone(server: Sshd, marker: str) -> list[str]:
    deadline = time.monotonic() + GONE_WITHIN_S
    while time.monotonic() < deadline:
        if not _alive(server, marker):
            return []
        await asyncio.sleep(0.1)
    return _alive(server, marker)


@pytest.fixture
async def runner(remote: Sshd, ssh_home: Path) -> AsyncIterator[SSHRunner]:
    write_client_home(ssh_home, remote)
    ssh = SSHRunner(parse_target("box"), connect_timeout=10)
    try:
        yield ssh
    finally:
        await ssh.close()


async def _parent(runner: SSHRunner) -> int:
    result = await runner.run("echo $PPID", timeout=20, lock=Lock())
    assert result.exit_code == 0 and result.locked, result.output.text()
    return int(result.output.text())


async def test_a_connections_locked_commands_share_one_session(
    runner: SSHRunner, remote: Sshd
) -> None:
    parents = {await _parent(runner) for _ in range(4)}
    assert len(parents) == 1
    (parent,) = parents
    # Their parent is the server: perl's prelude, serving, the one prelude on the host.
    cmdline = Path(f"/proc/{parent}/cmdline").read_bytes().split(b"\0")
    assert cmdline[0] == b"perl" and b"serve=1" in cmdline
    assert len(_alive(remote, SERVER)) == 1
    # Closing the runner ends it.
    await runner.close()
    assert await _gone(remote, SERVER) == []


async def test_what_a_locked_command_prints_cannot_pass_for_the_server(
    runner: SSHRunner,
) -> None:
    """The output is framed by length: text that looks like a frame is output. And the server's
    own ends are out of reach: the lock refuses to open them for writing."""
    forged = "x 1 0 0\\no 1 5\\nhello\\nx 2 0 0\\n"
    command = (
        f"printf '{forged}'; "
        "echo 'x 9 0 0' > /proc/$PPID/fd/1 && echo wrote-out; "
        "echo 'r 9 4' > /proc/$PPID/fd/0 && echo wrote-in; exit 7"
    )
    result = await runner.run(command, timeout=20, lock=Lock())
    text = result.output.text()
    assert result.exit_code == 7
    assert text.startswith("x 1 0 0\no 1 5\nhello\nx 2 0 0\n")
    assert "wrote-out" not in text and "wrote-in" not in text
    assert text.count("Permission denied") == 2
    after = await runner.run("echo next", timeout=20, lock=Lock())
    assert after.exit_code == 0 and after.output.text() == "next\n"


async def test_bytes_signals_and_large_output_come_back_as_they_were(runner: SSHRunner) -> None:
    raw = await runner.run("printf 'a\\000b\\377c'", timeout=20, lock=Lock())
    assert raw.output.data() == b"a\x00b\xffc" and raw.exit_code == 0
    killed = await runner.run("kill -9 $$", timeout=20, lock=Lock())
    assert killed.exit_code == 128 + signal.SIGKILL and killed.signal == signal.SIGKILL
    seen: list[str] = []
    big = await runner.run(
        "head -c 1000000 /dev/zero | tr '\\0' a; echo; echo end",
        timeout=30,
        lock=Lock(),
        on_output=seen.append,
    )
    assert big.exit_code == 0 and big.output.total == 1_000_000 + 5
    assert "".join(seen) == "a" * 1_000_000 + "\nend\n"


async def test_commands_at_once_each_get_their_own_output(runner: SSHRunner) -> None:
    results = await asyncio.gather(
        *(
            runner.run(
                f"for i in 1 2 3; do echo {n}-$i; sleep 0.1; done; exit {n}",
                timeout=20,
                lock=Lock(),
            )  # fmt: skip
            for n in range(3)
        )
    )
    for n, result in enumerate(results):
        assert result.exit_code == n
        assert result.output.text() == "".join(f"{n}-{i}\n" for i in (1, 2, 3))


async def test_a_stopped_command_ends_with_its_group_and_the_server_serves_on(
    runner: SSHRunner, remote: Sshd
) -> None:
    before = await _parent(runner)
    marker = "sleep 1031"
    result = await runner.run(f"{marker} & {marker}", timeout=1, lock=Lock())
    assert result.timed_out and result.exit_code == 128 + signal.SIGTERM
    assert await _gone(remote, marker) == []
    stop = asyncio.Event()
    task = asyncio.ensure_future(
        runner.run(f"{marker}; echo never", timeout=30, lock=Lock(), stop=stop)
    )
    while not _alive(remote, marker):
        await asyncio.sleep(0.05)
    stop.set()
    stopped = await asyncio.wait_for(task, 10)
    assert stopped.cancelled and "never" not in stopped.output.text()
    assert await _gone(remote, marker) == []
    assert await _parent(runner) == before


async def test_what_a_command_leaves_running_is_ended(runner: SSHRunner, remote: Sshd) -> None:
    marker = "sleep 1032"
    result = await runner.run(f"{marker} >/dev/null 2>&1 & echo left", timeout=20, lock=Lock())
    assert result.exit_code == 0 and result.output.text() == "left\n"
    assert await _gone(remote, marker) == []


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
async def test_what_leaves_the_commands_group_is_ended_with_it(
    runner: SSHRunner, remote: Sshd, escape: str
) -> None:
    """A daemon escapes the signals to its command's group: the server is the subreaper of
    what it starts, so it ends what its commands left once their own process has ended, and
    the command ends then (not at its timeout, when it holds the output)."""
    marker = "sleep 1036"
    started = time.monotonic()
    result = await runner.run(escape.format(marker=marker), timeout=30, lock=Lock())
    assert result.exit_code == 0 and not result.timed_out, result.output.text()
    assert time.monotonic() - started < 10
    assert await _gone(remote, marker) == []
    assert (await runner.run("echo on", timeout=20, lock=Lock())).output.text() == "on\n"


async def test_a_server_that_dies_is_started_again(runner: SSHRunner, remote: Sshd) -> None:
    first = await _parent(runner)
    marker = "sleep 1033"
    task = asyncio.ensure_future(runner.run(marker, timeout=30, lock=Lock()))
    while not _alive(remote, marker):
        await asyncio.sleep(0.05)
    os.kill(first, signal.SIGKILL)  # root's: no command inside the lock can
    result = await asyncio.wait_for(task, 10)
    assert result.exit_code is None and not result.connection_lost
    # What it ran is ended by its group's number, from a session of its own.
    assert await _gone(remote, marker) == []
    second = await _parent(runner)
    assert second != first
    assert b"serve=1" in Path(f"/proc/{second}/cmdline").read_bytes().split(b"\0")


async def test_a_command_cannot_signal_the_server(runner: SSHRunner) -> None:
    first = await _parent(runner)
    result = await runner.run("kill -9 $PPID", timeout=20, lock=Lock())
    assert result.exit_code != 0 and "not permitted" in result.output.text()
    assert await _parent(runner) == first


def _sessions(server: Sshd) -> int:
    return server.log.read_text().count("Starting session")


async def test_a_host_with_locked_commands_costs_one_session(
    runner: SSHRunner, remote: Sshd
) -> None:
    """The session that learns the host (its shell, OS, lock, knowledge file) serves the rest."""
    remote.write_remote(".config/kosmos-panel/ai_system_promt.md", "A rig.\n")
    before = _sessions(remote)
    found = await runner.read_first(KNOWLEDGE_PATHS, timeout=20)
    assert found == (KNOWLEDGE_PATHS[2], "A rig.\n")
    assert runner.os == "Linux" and runner.dialect == "bash" and runner.host_lock.watches
    for command in ("hostname", "uptime", "df -P /"):
        result = await runner.run(command, timeout=20, lock=Lock())
        assert result.exit_code == 0 and result.locked and result.output.text()
    assert _sessions(remote) - before == 1


def _layouts(remote: Sshd) -> dict[str, Callable[[], None]]:
    # The project's file and the home one, each under the seed's spelling.
    first, second = (
        remote.remote_home / p.removeprefix("~/") for p in (KNOWLEDGE_PATHS[0], KNOWLEDGE_PATHS[2])
    )

    def blank_then_text() -> None:
        remote.write_remote(str(first.relative_to(remote.remote_home)), " \n\t\n")
        remote.write_remote(str(second.relative_to(remote.remote_home)), "home notes\n")

    def text_first() -> None:
        remote.write_remote(str(first.relative_to(remote.remote_home)), "local\n")
        remote.write_remote(str(second.relative_to(remote.remote_home)), "home\n")

    def unreadable() -> None:
        text_first()
        first.chmod(0)

    def link_nowhere() -> None:
        text_first()
        first.unlink()
        first.symlink_to(remote.remote_home / "nowhere")

    def a_folder() -> None:
        text_first()
        first.unlink()
        first.mkdir()

    def too_large() -> None:
        remote.write_remote(str(first.relative_to(remote.remote_home)), "x" * (READ_FILE_LIMIT + 9))

    def unicode_blank() -> None:
        remote.write_remote(str(first.relative_to(remote.remote_home)), "\u3000\n")
        remote.write_remote(str(second.relative_to(remote.remote_home)), "home\n")

    return {
        "none": lambda: None,
        "blank then text": blank_then_text,
        "text first": text_first,
        "unreadable": unreadable,
        "a link that leads nowhere": link_nowhere,
        "a folder": a_folder,
        "too large": too_large,
        "unicode blank": unicode_blank,
    }


async def _outcome(runner: SSHRunner) -> object:
    try:
        return await runner.read_first(KNOWLEDGE_PATHS, timeout=20)
    except FileUnreadable as e:
        return ("unreadable", e.path, e.reason)


async def test_the_servers_own_read_says_what_the_shell_script_says(
    runner: SSHRunner, remote: Sshd, ssh_home: Path
) -> None:
    """The server reads the knowledge file itself (`read=`): the shell script it replaces, run
    in a session of its own, is the oracle, file layout by file layout."""
    oracle = SSHRunner(parse_target("box"), connect_timeout=10)
    try:
        await oracle.read_first(KNOWLEDGE_PATHS, timeout=20)  # learnt: then no server
        await oracle.serving.close()
        oracle.serving.refused = True
        await runner.read_first(KNOWLEDGE_PATHS, timeout=20)
        for name, lay_out in _layouts(remote).items():
            remote.clean_remote()
            lay_out()
            before = _sessions(remote)
            served = await _outcome(runner)
            assert _sessions(remote) == before, name  # no session: the server read it
            expected = await _outcome(oracle)
            assert _sessions(remote) > before, name
            assert served == expected, name
    finally:
        await oracle.close()
