"""kosmos's end of the lock server on an SSH host (`serve=1`, prelude/lock.pl).

Where the host's prelude is perl's, one session per connection runs it as a server: it starts
each locked command in a process group of its own, inside the lock, and sends back the
command's output and exit status, framed. A locked command then costs the host a fork, the
lock's system calls and the exec, where a session of its own cost sshd's session, the login
shell, perl's start and the prelude's compile; and kosmos a few packets, not a channel.

The guarantees are the prelude's: the command runs with no less of the lock than was learnt
(a step that fails ends it with 126 before it runs), and nothing of it is left behind: once it
has ended (or was stopped) what is left of its group is ended, and when kosmos goes (the
session closed, kosmos killed, the connection cut) the server ends every command and exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import re
import shlex
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from kosmos.hosts.sshlib import asyncssh

from kosmos.hosts.lock import LEARN_TIMEOUT
from kosmos.hosts.runner import CommandResult, Lock, OnOutput, OutputBuffer, StreamDecoder
from kosmos.hosts.wrapper import (
    GRACE_S,
    MARK,
    MARK_OWN,
    command_items,
    kill_script,
    login_line,
    parse_mark,
)

if TYPE_CHECKING:
    from kosmos.hosts.connect import Link
    from kosmos.hosts.lock import HostLock
    from kosmos.hosts.runner import CommandNotStarted, Shell


class SSHRunner(Protocol):
    """What the lock server needs of its runner (hosts/ssh.py), which it serves."""

    name: str
    host_lock: HostLock
    login: str | None
    dialect: Shell | None
    os: str | None
    _link: Link | None
    _epoch: int

    async def _conn(self, epoch: int) -> asyncssh.SSHClientConnection: ...
    async def _drop(self, link: Link, reason: str) -> None: ...
    async def _not_started(self, link: Link, timeout: float) -> CommandNotStarted: ...


__all__ = ["HELLO", "LockServer", "Served", "Serving"]

HELLO = b"kosmos-serve 1\n"
READ_CHUNK = 64 * 1024
# How long a stopped command's group has to end (TERM, then KILL after up to 2 s) and its
# output to close (up to 2 s more) before kosmos stops waiting for the server's answer.
STOP_WAIT = 6.0
# How long closing waits for an idle server to be gone.
CLOSE_WAIT = 2.0
_FRAME = re.compile(rb"([oxp]) (\d+) (\d+)(?: (\d+))?\n")

Ended = tuple[int | None, int | None]  # (exit status, signal), (None, None) if never told


class NotStarted(Exception):
    """The server took the session but did not start what it was asked to run."""


class Served:
    """One command the server runs: its output as it comes, and in time how it ended."""

    def __init__(
        self, buffer: OutputBuffer, on_output: OnOutput | None, limit: int | None = None
    ) -> None:
        self.buffer = buffer
        # Set once more than `limit` bytes came: the command is stopped as by `stop`.
        self.limit = limit
        self.full = asyncio.Event() if limit is not None else None
        self.on_output = on_output
        self.decoder = StreamDecoder() if on_output else None
        self.ended: asyncio.Future[Ended] = asyncio.get_running_loop().create_future()
        # The process that leads its group on the host, once the server has said.
        self.pid: int | None = None

    def feed(self, data: bytes) -> None:
        self.buffer.feed(data)
        if self.full is not None and self.buffer.total > (self.limit or 0):
            self.full.set()
        if self.on_output is not None and self.decoder is not None:
            text = self.decoder.decode(data)
            if text:
                self.on_output(text)

    def end(self, ended: Ended) -> None:
        if self.ended.done():
            return
        if self.on_output is not None and self.decoder is not None:
            tail = self.decoder.decode(b"", final=True)
            if tail:
                self.on_output(tail)
        self.ended.set_result(ended)


class LockServer:
    """The server's session on one connection, and the commands it runs."""

    def __init__(self, proc: asyncssh.SSHClientProcess[bytes]) -> None:
        self.proc = proc
        self._jobs: dict[int, Served] = {}
        self._ids = itertools.count(1)
        self._reader: asyncio.Task[None] | None = None
        self.closed = False
        # Ends the groups of commands the server left running when it went.
        self.on_orphans: Callable[[list[int]], Awaitable[None]] | None = None

    @classmethod
    async def start(
        cls, conn: asyncssh.SSHClientConnection, remote: str, *, timeout: float
    ) -> tuple[LockServer | None, list[bytes]]:
        """Start the server with `remote` (the login shell's command line): the server, None
        when it does not say it serves (no perl that runs it: each command then runs in a
        session of its own, as before), and the lines the session printed before that (the
        host's OS, shell and lock, where `remote` learns them first).

        NotStarted when the server takes the session but does not start it within `timeout`,
        TimeoutError when it says neither within that time."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        try:
            async with asyncio.timeout_at(deadline):
                proc = await conn.create_process(remote, encoding=None, stderr=asyncssh.DEVNULL)
        except TimeoutError:
            raise NotStarted from None
        lines: list[bytes] = []
        try:
            async with asyncio.timeout_at(deadline):
                while len(lines) < 8:
                    line = await proc.stdout.readline()
                    if line == HELLO:
                        server = cls(proc)
                        server._reader = asyncio.ensure_future(server._read())
                        return server, lines
                    if not line.endswith(b"\n"):
                        break
                    lines.append(line)
        except (asyncssh.Error, OSError):
            pass
        except TimeoutError:
            proc.close()
            raise
        proc.close()
        return None, lines

    async def _read(self) -> None:
        data = b""
        try:
            while chunk := await self.proc.stdout.read(READ_CHUNK):
                data += chunk
                data = self._frames(data)
        except (asyncssh.Error, OSError):
            pass
        finally:
            self.closed = True
            orphans = [job.pid for job in self._jobs.values() if job.pid]
            for job in self._jobs.values():
                job.end((None, None))
            self._jobs.clear()
            if orphans and self.on_orphans is not None:
                # The server went while they ran (not the connection): ended by their numbers.
                await self.on_orphans(orphans)

    def _frames(self, data: bytes) -> bytes:
        """Take every whole frame off `data`; what is left is the start of the next."""
        at = 0
        while True:
            match = _FRAME.match(data, at)
            if match is None:
                if len(data) - at > 64 and b"\n" in data[at : at + 64]:
                    raise OSError("the lock server sent what kosmos cannot read")
                return data[at:]
            kind, ident, number = match[1], int(match[2]), int(match[3])
            if kind == b"o":
                end = match.end() + number
                if len(data) < end:
                    return data[at:]
                job = self._jobs.get(ident)
                if job is not None:
                    job.feed(data[match.end() : end])
                at = end
            elif kind == b"p":
                job = self._jobs.get(ident)
                if job is not None:
                    job.pid = number
                at = match.end()
            else:
                found = self._jobs.pop(ident, None)
                if found is not None:
                    found.end((number, int(match[4] or 0)))
                at = match.end()

    def _send(self, data: bytes) -> None:
        with contextlib.suppress(asyncssh.Error, OSError):
            self.proc.stdin.write(data)

    async def run(
        self,
        command: str,
        argv: list[str],
        *,
        timeout: float,
        on_output: OnOutput | None,
        stop: asyncio.Event | None,
        is_lost: Callable[[], bool],
        limit: int | None = None,
    ) -> CommandResult | None:
        """Run `argv` (the prelude's SPEC, the program and its arguments) as command
        `command`; None when the server has gone before it could take it."""
        if self.closed:
            return None
        start = time.monotonic()
        ident = next(self._ids)
        buffer = OutputBuffer() if limit is None else OutputBuffer(head=limit, tail=0)
        job = Served(buffer, on_output, limit)
        self._jobs[ident] = job
        payload = "\0".join(argv).encode()
        self._send(b"r %d %d\n" % (ident, len(payload)) + payload)
        waiters: set[asyncio.Future[Any]] = {job.ended}
        stoppers = [asyncio.ensure_future(e.wait()) for e in (stop, job.full) if e is not None]
        waiters.update(stoppers)
        timed_out = cancelled = False
        try:
            done, _ = await asyncio.wait(
                waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
            if job.ended not in done:
                timed_out, cancelled = not done, bool(done)
                await self._stop(ident, job)
        except asyncio.CancelledError:
            await asyncio.shield(self._stop(ident, job))
            raise
        finally:
            for stopper in stoppers:
                stopper.cancel()
        if not job.ended.done():
            # No answer to the stop: the server (or the link under it) is as good as gone.
            self._jobs.pop(ident, None)
            job.end((None, None))
            self.close()
        code, sig = job.ended.result()
        if sig:
            code = 128 + sig
        lost = code is None and is_lost() and not (timed_out or cancelled)
        return CommandResult(
            command=command,
            exit_code=code,
            duration_s=time.monotonic() - start,
            output=job.buffer,
            timed_out=timed_out,
            cancelled=cancelled,
            connection_lost=lost,
            signal=sig or None,
            locked=True,
        )

    async def _stop(self, ident: int, job: Served) -> None:
        self._send(b"k %d\n" % ident)
        await asyncio.wait([job.ended], timeout=STOP_WAIT)

    def close(self) -> None:
        """End the session: the server ends what it still runs, and exits."""
        self.closed = True
        with contextlib.suppress(asyncssh.Error, OSError):
            self.proc.stdin.write_eof()
        self.proc.close()

    async def aclose(self) -> None:
        """End the session; when nothing runs, wait for the server to be gone (it exits at
        once), so that nothing of kosmos is left on the host when the connection closes."""
        idle = not self._jobs
        self.closed = True
        with contextlib.suppress(asyncssh.Error, OSError):
            self.proc.stdin.write_eof()
        if idle:
            with contextlib.suppress(asyncssh.Error, OSError, TimeoutError):
                async with asyncio.timeout(CLOSE_WAIT):
                    await self.proc.wait_closed()
        self.proc.close()


class Serving:
    """An SSH runner's lock server: started with the first locked command on a connection,
    and again on the next connection after a reconnect."""

    def __init__(self) -> None:
        self.server: LockServer | None = None
        self._link: Link | None = None
        # The host did not start it (no perl that runs it): each command has a session.
        self.refused = False
        self._starting = asyncio.Lock()

    def usable(self, runner: SSHRunner, stdin: bytes | None) -> bool:
        """The command can go to the server: the lock's prelude is perl's there, the dialect
        is known, and it takes no stdin (a fed line goes through the prelude's own session)."""
        return (
            not self.refused
            and stdin is None
            and runner.dialect is not None
            and runner.host_lock.watches
        )

    async def _server(self, runner: SSHRunner, epoch: int, timeout: float) -> LockServer | None:
        async with self._starting:
            conn = await runner._conn(epoch)
            link = runner._link
            server = self.server
            if server is not None and not server.closed and self._link is link:
                return server
            if server is not None:
                server.close()
            self.server = None
            remote = " ".join(shlex.quote(word) for word in runner.host_lock.serve_words())
            try:
                server, _ = await LockServer.start(
                    conn, login_line("exec " + remote, runner.login), timeout=timeout
                )
            except (asyncssh.Error, OSError, TimeoutError, NotStarted):
                return None  # the command's own session says what is wrong
            return self._keep(server, link)

    def _keep(self, server: LockServer | None, link: Link | None) -> LockServer | None:
        if server is None:
            self.refused = link is not None and not link.is_closed
            return None
        if self.server is not None and self.server is not server:
            self.server.close()
        self.server, self._link = server, link
        server.on_orphans = functools.partial(_end_groups, link)
        return server

    async def learn(self, runner: SSHRunner, *, ask_os: bool, timeout: float) -> None:
        """Learn what the host offers (its shell, its OS where `ask_os`, its lock) in the
        session that then serves the locked commands, where the prelude is perl's.

        TimeoutError when the host does not say within `timeout`."""
        epoch = runner._epoch
        kit = runner.host_lock
        async with self._starting:
            conn = await runner._conn(epoch)
            link = runner._link
            script = f"{MARK_OWN}; {kit.probe_script(os_line=ask_os, serve=True)}"
            remote = login_line("exec sh -c " + shlex.quote(script), runner.login)
            try:
                server, lines = await LockServer.start(conn, remote, timeout=timeout)
            except (asyncssh.Error, OSError):
                return  # the connection is going: what runs next says so
            except NotStarted:
                assert link is not None
                raise await runner._not_started(link, timeout) from None
            for line in lines:
                if line.startswith(MARK):
                    _, login, dialect = parse_mark(line[len(MARK) :].rstrip(b"\n"))
                    if runner.dialect is None:
                        runner.login, runner.dialect = login, dialect
                elif line.startswith(b"os ") and ask_os:
                    runner.os = line[3:].decode(errors="replace").strip() or None
                elif line.startswith(b"lock "):
                    kit.learn(line.decode(errors="replace"))
            if server is not None and not kit.watches:
                server.close()  # no lock to run commands in: it has nothing to do
                server = None
            if server is not None or kit.status is not None:
                self._keep(server, link)

    async def own(
        self,
        runner: SSHRunner,
        command: str,
        *,
        timeout: float,
        limit: int,
        paths: Sequence[str] | None = None,
    ) -> CommandResult | None:
        """Run kosmos's own POSIX script (a file read) through the server, inside the lock
        (it only reads); None where there is no server (the caller runs it in a session).
        `paths`: the script is read_first's for them, which the server does itself with no
        program run (`read=` in prelude/lock.pl), with the same output and exit statuses."""
        server = self.server
        if server is None or server.closed or self._link is not runner._link:
            return None
        spec = runner.host_lock.spec(Lock())
        if paths is not None:
            argv = [f"read={limit} {spec}", *paths]
        else:
            argv = [" ".join([*command_items(None), spec]), "sh", "-c", command]
        return await server.run(
            command,
            argv,
            timeout=timeout,
            on_output=None,
            stop=None,
            limit=limit,
            is_lost=lambda: runner._link is None or runner._link.is_closed,
        )

    async def run(
        self,
        runner: SSHRunner,
        command: str,
        lock: Lock,
        *,
        timeout: float,
        on_output: OnOutput | None,
        stop: asyncio.Event | None,
    ) -> CommandResult | None:
        """Run `command` in the lock through the server; None where it cannot take it (the
        caller runs the command in a session of its own)."""
        epoch = runner._epoch
        server = await self._server(runner, epoch, min(timeout, LEARN_TIMEOUT))
        if server is None:
            return None
        link = runner._link
        assert runner.dialect is not None
        spec = " ".join([*command_items(command), runner.host_lock.spec(lock)])
        result = await server.run(
            command,
            [spec, runner.dialect, "-c", command],
            timeout=timeout,
            on_output=on_output,
            stop=stop,
            is_lost=lambda: link is None or link.is_closed,
        )
        stopped = result is not None and (result.timed_out or result.cancelled)
        if stopped and server.closed and link is not None and not link.is_closed:
            # Neither the end of the command nor the stop got an answer: the link is as good
            # as dead, and the next command would only queue behind it.
            await runner._drop(link, "the host did not answer while a command was ended")
        return result

    async def close(self) -> None:
        server, self.server = self.server, None
        if server is not None:
            await server.aclose()


async def _end_groups(link: Link | None, pids: list[int]) -> None:
    """End the process groups `pids` over `link` (a session of its own), as far as it can."""
    if link is None or link.is_closed:
        return  # sshd closed the server's session: nothing of the link is left to ask
    conn = link.conn
    with contextlib.suppress(asyncssh.Error, OSError, TimeoutError):
        async with asyncio.timeout(GRACE_S + 2):
            await asyncio.gather(
                *(conn.run(kill_script(pid), stdin=asyncssh.DEVNULL) for pid in pids if pid > 1)
            )
