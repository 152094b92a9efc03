"""Run commands on a host over SSH: one connection per host, each command its own process group."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kosmos.hosts.sshlib import asyncssh

from kosmos.errors import HostError
from kosmos.hosts.connect import KEEPALIVE_COUNT_MAX, KEEPALIVE_INTERVAL, Connector, Link
from kosmos.hosts.lock import LEARN_TIMEOUT, HostLock, LockConfig
from kosmos.hosts.passphrases import Passphrases
from kosmos.hosts.runner import (
    CommandNotStarted,
    CommandResult,
    HostPrompter,
    Lock,
    OnOutput,
    OutputBuffer,
    Shell,
    StreamDecoder,
)
from kosmos.hosts.ssh_read import RemoteReads
from kosmos.hosts.ssh_serve import Serving
from kosmos.hosts.ssh_upload import RemoteUploads
from kosmos.hosts.sshconfig import SSHConfigFile
from kosmos.hosts.target import Target
from kosmos.hosts.wrapper import (
    GRACE_S,
    MARK,
    kill_script,
    parse_mark,
    remote_command,
    watch_items,
)

READ_CHUNK = 64 * 1024
# How long a failed channel open waits to learn whether the connection itself just ended.
CLOSE_NOTICE = 1.0
# How long to wait for the output to end once the group was killed.
DRAIN_WAIT = 2.0


class RunnerClosed(HostError):
    """`close()` came first: the command never started and no connection was opened for it."""


def _retrieve(task: asyncio.Future[None]) -> None:
    if not task.cancelled():
        task.exception()


class SSHRunner(RemoteReads, RemoteUploads):
    """A host over SSH. The connection opens on `connect()` and is reused for every command.

    If it drops between commands, the next command reconnects once (and `notify` says so); if
    it drops during a command, the result says `connection_lost` and nothing is re-run.
    `notify` also hears what connecting has to say (a host key added under accept-new).
    """

    def __init__(
        self,
        target: Target,
        *,
        connect_timeout: float = 10.0,
        prompter: HostPrompter | None = None,
        notify: Callable[[str], None] | None = None,
        home: Path | None = None,
        keepalive_interval: float | None = None,
        keepalive_count_max: int | None = None,
        ssh_config: SSHConfigFile | None = None,
        passphrases: Passphrases | None = None,
        lock: LockConfig | None = None,
        secrets: Sequence[str] = (),
    ) -> None:
        self.target = target
        self.name = target.label
        self.notify = notify
        if keepalive_interval is None:
            keepalive_interval = KEEPALIVE_INTERVAL
        if keepalive_count_max is None:
            keepalive_count_max = KEEPALIVE_COUNT_MAX
        self.connector = Connector(
            target,
            connect_timeout=connect_timeout,
            prompter=prompter,
            notify=self._notice,
            home=home,
            keepalive_interval=keepalive_interval,
            keepalive_count_max=keepalive_count_max,
            ssh_config=ssh_config,
            passphrases=passphrases,
            secrets=secrets,
        )
        self._link: Link | None = None
        self._connected_once = False
        # The host's login shell and the dialect commands run in (bash where the host has
        # bash): None until the first command's marker line has said; learnt once.
        self.login: str | None = None
        self.dialect: Shell | None = None
        # What `uname -s` says there: learnt with the first file read, or asked for on its own.
        self.os: str | None = None
        # The kernel lock for commands that run without a person's yes (hosts/lock.py): what
        # the host offers is learnt with the first file read, or asked for on its own.
        self.host_lock = HostLock(lock or LockConfig())
        self.serving = Serving()
        self._lock = asyncio.Lock()
        # Why kosmos itself closed the connection, for the notice when the next command reconnects.
        self._dropped: str | None = None
        # Counts close() calls: what began before one must not open a connection after it.
        self._epoch = 0
        self._opening: asyncio.Future[Link] | None = None

    # -- the connection ----------------------------------------------------------------------

    def _notice(self, message: str) -> None:
        """What connecting has to say (a host key added, a known_hosts line skipped), passed
        to whoever listens now: `notify` may be set after the runner is made."""
        if self.notify is not None:
            self.notify(message)

    async def connect(self) -> None:
        async with self._lock:
            if self._link is None or self._link.is_closed:
                await self._open()

    async def _open(self) -> None:
        if self._link is not None:
            await self._link.close()
            self._link = None
        epoch = self._epoch
        opening = asyncio.ensure_future(self.connector.open())
        self._opening = opening
        try:
            link = await opening
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if epoch != self._epoch and not (task is not None and task.cancelling()):
                raise RunnerClosed(
                    f"{self.name}: closed while connecting; nothing was run"
                ) from None
            raise
        finally:
            self._opening = None
        self._link = link
        self._connected_once = True
        self._dropped = None

    async def _conn(self, epoch: int) -> asyncssh.SSHClientConnection:
        """The open connection; reconnects once if it dropped since the last command.

        `epoch` is the runner's when the command began: after a `close()` since, it does not
        open another connection.
        """
        async with self._lock:
            if epoch != self._epoch:
                raise RunnerClosed(
                    f"{self.name}: the connection was closed before the command started; "
                    "nothing was run"
                )
            link = self._link
            if link is not None and not link.is_closed:
                return link.conn
            if not self._connected_once:
                await self._open()
            else:
                reason = self._dropped or (link.client.lost_reason if link else None) or "closed"
                try:
                    await self._open()
                except RunnerClosed:
                    raise
                except HostError as e:
                    raise HostError(
                        f"{self.name}: the connection was lost ({reason}) and reconnecting "
                        f"failed: {e}"
                    ) from e
                if self.notify is not None:
                    self.notify(f"{self.name}: the connection was lost ({reason}); reconnected")
            assert self._link is not None
            return self._link.conn

    async def _drop(self, link: Link, reason: str) -> None:
        """Close `link` for `reason`, which the next reconnect's notice gives."""
        async with self._lock:
            if self._link is link:
                self._dropped = reason
            await link.close()

    async def _not_started(self, link: Link, timeout: float) -> CommandNotStarted:
        """The server took a session and never started its command: `link` is closed."""
        await self._drop(link, f"the server did not start a command within {timeout:g} s")
        return CommandNotStarted(
            f"{self.name}: the server did not start the command within {timeout:g} s; "
            "kosmos closed the connection and the next try reconnects; if this "
            "repeats, check the host's load and its sshd log"
        )

    async def close(self) -> None:
        """Close the connection; once this returns, none is open.

        A connect or reconnect under way is abandoned (its caller gets RunnerClosed), and a
        command that began before the close does not reconnect. A running command does not hold
        the lock, so closing never waits for one: its channel ends with the connection. A
        command begun after the close connects anew.
        """
        self._epoch += 1
        if self._opening is not None:
            self._opening.cancel()
        await self.serving.close()
        async with self._lock:
            if self._link is not None:
                await self._link.close()
                self._link = None

    # -- commands ---------------------------------------------------------------------------

    async def run(
        self,
        command: str,
        *,
        timeout: float,
        on_output: OnOutput | None = None,
        stop: asyncio.Event | None = None,
        stdin: bytes | None = None,
        lock: Lock | None = None,
    ) -> CommandResult:
        if lock is not None and self.host_lock.status is None:
            await self.learn_host(timeout=min(timeout, LEARN_TIMEOUT))
        if lock is not None and self.serving.usable(self, stdin):
            served = await self.serving.run(
                self, command, lock, timeout=timeout, on_output=on_output, stop=stop
            )
            if served is not None:
                return served
        kit = self.host_lock
        watch = []
        if kit.watches:
            watch = watch_items(mark=True, feed=stdin is not None, command=command)
        return await self._exec(
            command,
            timeout=timeout,
            on_output=on_output,
            stop=stop,
            stdin=stdin,
            buffer=OutputBuffer(),
            lock=kit.words(lock, self.dialect or "sh", watch=watch),
            watched=bool(watch),
        )

    async def _learn(self, *, ask_os: bool, timeout: float) -> None:
        await self.serving.learn(self, ask_os=ask_os, timeout=timeout)

    async def _own(
        self, command: str, *, timeout: float, limit: int, paths: Sequence[str] | None = None
    ) -> CommandResult:
        served = await self.serving.own(self, command, timeout=timeout, limit=limit, paths=paths)
        if served is not None:
            return served
        head = OutputBuffer(head=limit, tail=0)
        return await self._exec(command, timeout=timeout, buffer=head, limit=limit, own=True)

    async def _exec(
        self,
        command: str,
        *,
        timeout: float,
        buffer: OutputBuffer,
        on_output: OnOutput | None = None,
        stop: asyncio.Event | None = None,
        stdin: bytes | None = None,
        limit: int | None = None,
        lock: list[str] | None = None,
        watched: bool = False,
        own: bool = False,
    ) -> CommandResult:
        """Run `command` in the wrapper; past `limit` bytes of output it is ended as by `stop`.

        `lock`: the words that run it inside the kernel lock (`HostLock.words`); `watched`:
        they are the wrapper too. `own`: it is kosmos's own POSIX script (`remote_command`).
        """
        start = time.monotonic()
        remote = remote_command(
            command,
            login=self.login,
            dialect=self.dialect,
            feed=stdin is not None,
            lock=lock,
            watched=watched and lock is not None,
            own=own,
        )
        loop = asyncio.get_running_loop()
        epoch = self._epoch
        for attempt in range(2):
            conn = await self._conn(epoch)
            assert self._link is not None
            link = self._link
            # The command's timeout covers starting it too: a server can take the channel and
            # then never answer the request to run the command.
            deadline = loop.time() + timeout
            try:
                async with asyncio.timeout_at(deadline):
                    proc = await conn.create_process(remote, encoding=None)
                break
            except TimeoutError:
                raise await self._not_started(link, timeout) from None
            except (asyncssh.Error, OSError) as e:
                if not link.is_closed:
                    # A connection cut under us can fail here before its end is noticed.
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(link.client.closed.wait(), CLOSE_NOTICE)
                if not link.is_closed:
                    raise HostError(
                        f"{self.name}: the server refused to start the command: {e}"
                    ) from e
                if attempt:
                    return CommandResult(
                        command, None, time.monotonic() - start, buffer, connection_lost=True
                    )
                # The connection had dropped before the command started: reconnect once.
        pgid: list[int] = []
        pgid_known = asyncio.Event()
        decoder = StreamDecoder()
        full = asyncio.Event() if limit is not None else None

        def feed(data: bytes) -> None:
            buffer.feed(data)
            if full is not None and limit is not None and buffer.total > limit:
                full.set()
            if on_output:
                text = decoder.decode(data)
                if text:
                    on_output(text)

        async def pump_stdout() -> None:
            while data := await proc.stdout.read(READ_CHUNK):
                feed(data)

        async def pump_stderr() -> None:
            pending = b""
            while data := await proc.stderr.read(READ_CHUNK):
                if pgid:
                    feed(data)
                    continue
                pending += data
                at = pending.find(MARK)
                end = pending.find(b"\n", at) if at >= 0 else -1
                if end < 0:
                    continue
                group, login, dialect = parse_mark(pending[at + len(MARK) : end])
                pgid.append(group)
                if self.dialect is None:
                    self.login, self.dialect = login, dialect
                pgid_known.set()
                rest = pending[:at] + pending[end + 1 :]
                pending = b""
                if rest:
                    feed(rest)
            if pending:
                feed(pending)
            pgid_known.set()

        async def finished() -> None:
            # One pump failing ends the other and the channel: a lone pump would read on, and
            # hold the channel open, long after its partner's error was reported.
            pumps = [asyncio.ensure_future(pump_stdout()), asyncio.ensure_future(pump_stderr())]
            try:
                await asyncio.wait(pumps, return_when=asyncio.FIRST_EXCEPTION)
            finally:
                for pump in pumps:
                    pump.cancel()
                ends = await asyncio.gather(*pumps, return_exceptions=True)
                pgid_known.set()  # no group line can come any more
            errors = [e for e in ends if isinstance(e, Exception)]
            if errors:
                proc.close()
            with contextlib.suppress(asyncssh.Error, OSError):
                await proc.wait_closed()
            for error in errors:
                # A dropped connection is the result's `connection_lost`; anything else is a
                # fault the caller must hear of.
                if not isinstance(error, asyncssh.Error | OSError):
                    raise error

        # stdin stays open: the wrapper ends the command when it closes. A command that has
        # already ended (or a dropped connection) cannot take it.
        if stdin is not None:
            with contextlib.suppress(asyncssh.Error, OSError):
                proc.stdin.write(stdin if stdin.endswith(b"\n") else stdin + b"\n")

        work = asyncio.ensure_future(finished())
        # Its failure is raised below; on a cancel it is seen here, never left unretrieved.
        work.add_done_callback(_retrieve)
        stoppers = [asyncio.ensure_future(e.wait()) for e in (stop, full) if e is not None]
        waiters: set[asyncio.Future[Any]] = {work, *stoppers}
        lost = asyncio.ensure_future(link.client.closed.wait())
        timed_out = cancelled = False
        try:
            done, _ = await asyncio.wait(
                waiters,
                timeout=max(0.0, deadline - loop.time()),
                return_when=asyncio.FIRST_COMPLETED,
            )
            if work not in done:
                timed_out = not done
                cancelled = not timed_out
                await self._end(link, proc, pgid, pgid_known, work)
            elif work.exception() is not None:
                # The output could not be taken: the command may still be running, and its
                # channel is closed, so the group is ended by its number.
                await self._end(link, proc, pgid, pgid_known, work, eof=False)
        except asyncio.CancelledError:
            await asyncio.shield(self._end(link, proc, pgid, pgid_known, work))
            raise
        finally:
            for task in (*stoppers, lost):
                task.cancel()
        failure = None if work.cancelled() else work.exception()
        if failure is not None:
            raise failure
        if on_output:
            tail = decoder.decode(b"", final=True)
            if tail:
                on_output(tail)
        code, sig = proc.exit_status, None
        if proc.exit_signal is not None:
            with contextlib.suppress(KeyError):
                sig = int(signal.Signals["SIG" + proc.exit_signal[0]])
            code = 128 + sig if sig else None
        elif code is not None and code < 0:
            code = None  # the channel closed without an exit status
        connection_lost = code is None and link.is_closed and not (timed_out or cancelled)
        return CommandResult(
            command=command,
            exit_code=code,
            duration_s=time.monotonic() - start,
            output=buffer,
            timed_out=timed_out,
            cancelled=cancelled,
            connection_lost=connection_lost,
            signal=sig,
            locked=lock is not None,
        )

    async def _end(
        self,
        link: Link,
        proc: asyncssh.SSHClientProcess[bytes],
        pgid: list[int],
        pgid_known: asyncio.Event,
        work: asyncio.Future[None],
        *,
        eof: bool = True,
    ) -> None:
        """End the command's whole process group on the host, then collect what it printed.

        End-of-file on its stdin makes the wrapper end the group (TERM, then KILL); when that
        does not finish it (a wrapper that never started, a busy host), or with `eof=False`,
        a second channel kills the group by its number.
        """
        if eof:
            with contextlib.suppress(asyncssh.Error, OSError):
                proc.stdin.write_eof()
            await asyncio.wait([work], timeout=GRACE_S + DRAIN_WAIT)
            if work.done():
                return
        # The group's number is the first thing the command prints; it may still be on its way.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(pgid_known.wait(), DRAIN_WAIT)
        delivered = True
        if pgid and pgid[0] > 1 and not link.is_closed:
            try:
                async with asyncio.timeout(GRACE_S + DRAIN_WAIT):
                    await link.conn.run(kill_script(pgid[0]), stdin=asyncssh.DEVNULL)
            except (asyncssh.Error, OSError, TimeoutError):
                delivered = False
        else:
            with contextlib.suppress(asyncssh.Error, OSError):
                proc.send_signal("KILL")
        # asyncio.wait, not wait_for: a pump's failure stays in `work` for the caller to raise.
        await asyncio.wait([work], timeout=DRAIN_WAIT if delivered else 0)
        if not work.done():
            # Something outside the group still holds the output open: stop reading.
            proc.close()
            work.cancel()
            await asyncio.wait([work])
            if not delivered:
                # Neither the end of the command nor the kill got an answer: the link is as
                # good as dead, and the next command would only queue behind it.
                await self._drop(link, "the host did not answer while a command was ended")
