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
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from kosmos.hosts.sshlib import asyncssh

from kosmos.hosts.lock import LEARN_TIMEOUT
from kosmos.hosts.runner import CommandResult, Lock, OnOutput, OutputBuffer, StreamDecoder
from kosmos.hosts.wrapper import GRACE_S, command_items, kill_script

if TYPE_CHECKING:
    from kosmos.hosts.connect import Link
    from kosmos.hosts.ssh import SSHRunner

__all__ = ["HELLO", "LockServer", "Served", "Serving"]

HELLO = b"kosmos-serve 1\n"
READ_CHUNK = 64 * 1024
# How long a stopped command's group has to end (TERM, then KILL after up to 2 s) and its
# output to close (up to 2 s more) before kosmos stops waiting for the server's answer.
STOP_WAIT = 6.0
_FRAME = re.compile(rb"([oxp]) (\d+) (\d+)(?: (\d+))?\n")

Ended = tuple[int | None, int | None]  # (exit status, signal), (None, None) if never told


class Served:
    """One command the server runs: its output as it comes, and in time how it ended."""

    def __init__(self, buffer: OutputBuffer, on_output: OnOutput | None) -> None:
        self.buffer = buffer
        self.on_output = on_output
        self.decoder = StreamDecoder() if on_output else None
        self.ended: asyncio.Future[Ended] = asyncio.get_running_loop().create_future()
        # The process that leads its group on the host, once the server has said.
        self.pid: int | None = None

    def feed(self, data: bytes) -> None:
        self.buffer.feed(data)
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
    ) -> LockServer | None:
        """Start the server with `remote` (the login shell's command line); None when it does
        not say it serves within `timeout` (no perl that runs it: the caller runs each command
        in a session of its own, as before)."""
        proc = await conn.create_process(remote, encoding=None, stderr=asyncssh.DEVNULL)
        server = cls(proc)
        try:
            async with asyncio.timeout(timeout):
                hello = await proc.stdout.readexactly(len(HELLO))
        except (TimeoutError, asyncio.IncompleteReadError, asyncssh.Error, OSError):
            hello = b""
        if hello != HELLO:
            proc.close()
            return None
        server._reader = asyncio.ensure_future(server._read())
        return server

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
    ) -> CommandResult | None:
        """Run `argv` (the prelude's SPEC, the program and its arguments) as command
        `command`; None when the server has gone before it could take it."""
        if self.closed:
            return None
        start = time.monotonic()
        ident = next(self._ids)
        job = Served(OutputBuffer(), on_output)
        self._jobs[ident] = job
        payload = "\0".join(argv).encode()
        self._send(b"r %d %d\n" % (ident, len(payload)) + payload)
        waiters: set[asyncio.Future[Any]] = {job.ended}
        stopper = asyncio.ensure_future(stop.wait()) if stop is not None else None
        if stopper is not None:
            waiters.add(stopper)
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
            if stopper is not None:
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
                server = await LockServer.start(conn, "exec " + remote, timeout=timeout)
            except (asyncssh.Error, OSError):
                return None  # the connection is going: the command's own session says so
            if server is None:
                self.refused = link is not None and not link.is_closed
                return None
            self.server, self._link = server, link
            server.on_orphans = functools.partial(_end_groups, link)
            return server

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

    def close(self) -> None:
        if self.server is not None:
            self.server.close()
            self.server = None


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
