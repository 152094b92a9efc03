"""A connection cut during the first knowledge read reconnects once, as between commands."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
from pathlib import Path

import asyncssh

from kosmos.errors import HostError
from kosmos.hosts.knowledge import KNOWLEDGE_PATHS, load_knowledge
from kosmos.hosts.ssh import SSHRunner
from kosmos.hosts.target import parse_target
from tests.sshserver import InProcessSSHServer, write_client_home

Keys = tuple[asyncssh.SSHKey, asyncssh.SSHKey]


async def read_with_cuts(
    ssh_home: Path, ssh_server: InProcessSSHServer, ssh_keys: Keys, cuts: int
) -> tuple[object, list[str]]:
    """load_knowledge on a fresh connection whose link dies `cuts` times while the host is in
    the middle of the read: the file is a FIFO, held open with nothing written, until the cut;
    then it is a plain file."""
    write_client_home(ssh_home, ssh_server, ssh_keys[1])
    notes_dir = ssh_server.state.home / ".config" / "kosmos-panel"
    notes_dir.mkdir(parents=True)
    path = notes_dir / "ai_system_promt.md"
    notes: list[str] = []
    runner = SSHRunner(parse_target("inproc"), connect_timeout=5)
    runner.notify = notes.append
    await runner.connect()
    writers: list[int] = []
    try:
        read: asyncio.Future[object] | None = None
        for _ in range(cuts):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            os.mkfifo(path)
            if read is None:
                read = asyncio.ensure_future(load_knowledge(runner, timeout=20))
            while True:  # a writer opens once the host's read has the FIFO open
                try:
                    writers.append(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
                    break
                except OSError as e:
                    assert e.errno == errno.ENXIO
                    assert not read.done(), read
                    await asyncio.sleep(0.02)
            ssh_server.drop_all()  # the link dies in the middle of the read
        path.unlink()
        path.write_text("home notes\n")
        for fd in writers:
            os.close(fd)
        assert read is not None
        try:
            return await read, notes
        except HostError as e:
            return e, notes
    finally:
        await runner.close()


async def test_a_cut_during_the_first_knowledge_read_reconnects_and_reads_it(
    ssh_home: Path,
    ssh_server: InProcessSSHServer,
    ssh_keys: Keys,
) -> None:
    knowledge, notes = await read_with_cuts(ssh_home, ssh_server, ssh_keys, cuts=1)
    assert not isinstance(knowledge, HostError), knowledge
    assert knowledge is not None
    assert (knowledge.path, knowledge.text) == (KNOWLEDGE_PATHS[2], "home notes\n")  # type: ignore[attr-defined]
    assert len(notes) == 1 and "the connection was lost" in notes[0] and "reconnected" in notes[0]


async def test_a_second_cut_during_the_read_is_a_host_error(
    ssh_home: Path,
    ssh_server: InProcessSSHServer,
    ssh_keys: Keys,
) -> None:
    error, notes = await read_with_cuts(ssh_home, ssh_server, ssh_keys, cuts=2)
    assert isinstance(error, HostError)
    assert "the connection was lost while reading" in str(error)
    assert len(notes) == 1  # one reconnect, not a loop
