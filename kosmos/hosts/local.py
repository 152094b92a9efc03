"""Run commands on this machine: each in its own process group under `bash -c` (or `sh -c`)."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import platform
import shutil
import signal
import stat
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kosmos.errors import HostError
from kosmos.hosts.environment import command_env
from kosmos.hosts.lock import LEARN_TIMEOUT, HostLock, LockConfig
from kosmos.hosts.runner import (
    BROKEN_LINK,
    COMMAND_ENV,
    NOT_A_FILE,
    READ_FILE_LIMIT,
    TOO_LARGE,
    CommandResult,
    FileUnreadable,
    Lock,
    OnOutput,
    OutputBuffer,
    Shell,
    StreamDecoder,
    read_first_each,
    unreadable,
)
from kosmos.hosts.spawner import Spawned, Spawner, spawner_works
from kosmos.hosts.wrapper import local_script, plain, watch_items

READ_CHUNK = 64 * 1024
# After SIGTERM, how long the group gets before SIGKILL.
KILL_GRACE = 0.5


def _kill_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


class _Child:
    """A command being run: its output, its end, and its process group."""

    stdout: asyncio.StreamReader
    returncode: int | None = None

    async def wait(self) -> None:
        raise NotImplementedError

    def signal(self, sig: int) -> None:
        """Signal the whole process group."""
        raise NotImplementedError

    def kill_leader(self) -> None:
        """SIGKILL to the command's own process, wherever it went."""
        self.signal(signal.SIGKILL)

    def close(self) -> None:
        """kosmos is done with the command: nothing of it is left after this."""
        raise NotImplementedError


class _ProcessChild(_Child):
    """The wrapper script kosmos started (hosts/wrapper.py), which watches the command."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        assert proc.stdout is not None and proc.stdin is not None
        self.stdout = proc.stdout
        self.channel = proc.stdin

    async def feed(self, line: bytes) -> None:
        self.channel.write(line if line.endswith(b"\n") else line + b"\n")
        with contextlib.suppress(ConnectionError):
            await self.channel.drain()

    async def wait(self) -> None:
        self.returncode = await self.proc.wait()

    def signal(self, sig: int) -> None:
        _kill_group(self.proc.pid, sig)

    def kill_leader(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()

    def close(self) -> None:
        # The wrapper's watcher ends the group when its stdin closes.
        self.channel.close()


class _SpawnedChild(_Child):
    """A command the spawner started (hosts/spawner.py), which watches its group."""

    def __init__(
        self, spawned: Spawned, stdout: asyncio.StreamReader, transport: asyncio.BaseTransport
    ) -> None:
        self.spawned = spawned
        self.stdout = stdout
        self.transport = transport

    async def wait(self) -> None:
        self.returncode = await self.spawned.exited

    def signal(self, sig: int) -> None:
        with contextlib.suppress(HostError):
            self.spawned.signal(sig)

    def close(self) -> None:
        with contextlib.suppress(HostError):
            self.spawned.end()
        self.transport.close()


async def _end(child: _Child, work: asyncio.Future[None]) -> None:
    """End the whole process group, then collect what it printed until then."""
    child.signal(signal.SIGTERM)
    try:
        await asyncio.wait_for(asyncio.shield(work), KILL_GRACE)
    except TimeoutError:
        child.signal(signal.SIGKILL)
        try:
            await asyncio.wait_for(asyncio.shield(work), 2)
        except TimeoutError:
            # Something outside the group still holds the pipe open; stop reading.
            work.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await work
            child.kill_leader()
            await child.wait()
    # A group member may survive SIGTERM while the leader exits: make sure none is left.
    child.signal(signal.SIGKILL)


class LocalRunner:
    """The `local` host: this machine, no SSH."""

    name = "local"

    def __init__(
        self,
        *,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        lock: LockConfig | None = None,
    ) -> None:
        self.cwd = cwd
        # Never a key kosmos holds: what a command prints goes back to the LLM.
        self.env = {**command_env(env if env is not None else os.environ), **COMMAND_ENV}
        # One dialect for the policy and the shell: bash where there is one.
        bash = shutil.which("bash", path=self.env.get("PATH", os.defpath))
        self.shell_path = bash or "/bin/sh"
        self.dialect: Shell = "bash" if bash else "sh"
        # What `uname -s` says here (Linux, Darwin), known without running it.
        self.os = platform.system()
        # The kernel lock for commands that run without a person's yes (hosts/lock.py).
        self.host_lock = HostLock(lock or LockConfig())
        self._spawner: Spawner | None = None

    async def connect(self) -> None:
        return None

    async def learn_host(self, *, timeout: float) -> None:
        """Learn what the kernel lock can be here (the OS is known without asking)."""
        probe = await self.run(self.host_lock.probe_script(), timeout=timeout)
        status = self.host_lock.learn(probe.output.text())
        if (status is None or not status.held) and self._spawner is not None:
            # Started by ready_lock for commands that will not be locked here after all.
            self._spawner.close()
            self._spawner = None

    def ready_lock(self) -> None:
        """Commands will soon run in the kernel lock: start the spawner they start from now.
        Its start-up (an interpreter's, some 30 ms) then overlaps the lock's probe and the
        first LLM request instead of holding up the first command."""
        status = self.host_lock.status
        if status is None or status.held:
            self._spawns()

    async def close(self) -> None:
        if self._spawner is not None:
            self._spawner.close()
            self._spawner = None

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
        kit = self.host_lock
        start = time.monotonic()
        words = kit.words(lock, self.shell_path)
        if words is not None and self._spawns():
            # The spawner enters the lock between fork and exec and watches the group itself.
            # (A command without the lock starts as fast from the wrapper script: the
            # spawner's own round trip and fork cost what the script's shell does.)
            child: _Child = await self._spawned(command, words, stdin)
        else:
            child = await self._process(self._wrapped(command, lock, stdin is not None))
            if stdin is not None:
                assert isinstance(child, _ProcessChild)
                await child.feed(stdin)
        buffer = OutputBuffer()
        decoder = StreamDecoder()
        stdout = child.stdout

        async def pump() -> None:
            while True:
                data = await stdout.read(READ_CHUNK)
                if not data:
                    break
                buffer.feed(data)
                if on_output:
                    text = decoder.decode(data)
                    if text:
                        on_output(text)
            if on_output:
                tail = decoder.decode(b"", final=True)
                if tail:
                    on_output(tail)

        async def finished() -> None:
            await pump()
            await child.wait()

        work = asyncio.ensure_future(finished())
        waiters: set[asyncio.Future[Any]] = {work}
        stopper = asyncio.ensure_future(stop.wait()) if stop is not None else None
        if stopper is not None:
            waiters.add(stopper)
        timed_out = cancelled = False
        try:
            done, _ = await asyncio.wait(
                waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
            if work not in done:
                timed_out = stopper is None or stopper not in done
                cancelled = not timed_out
                await _end(child, work)
            else:
                work.result()
        except asyncio.CancelledError:
            await asyncio.shield(_end(child, work))
            raise
        finally:
            child.close()
            if stopper is not None:
                stopper.cancel()
        code = child.returncode
        sig = -code if code is not None and code < 0 else None
        return CommandResult(
            command=command,
            exit_code=128 + sig if sig else code,
            duration_s=time.monotonic() - start,
            output=buffer,
            timed_out=timed_out,
            cancelled=cancelled,
            signal=sig,
            locked=words is not None,
        )

    def _wrapped(self, command: str, lock: Lock | None, feed: bool) -> list[str]:
        """The argv that runs `command` inside the wrapper script, or the perl prelude that is
        the wrapper too (hosts/wrapper.py), and inside the lock when `lock` is held here."""
        kit = self.host_lock
        watch = []
        if lock is not None and kit.watches:
            watch = watch_items(mark=False, feed=feed, command=command)
        words = kit.words(lock, self.shell_path, watch=watch)
        if words is not None and watch:
            # The prelude is the wrapper too: it starts the command in the lock and watches.
            return [*words, command]
        # Inside the lock the command runs in the shell the lock's words end with (bash where
        # there is one); the script around it, which only starts it and watches, needs no
        # more than a POSIX sh, which starts and forks in half the time of bash.
        wrapper = "/bin/sh" if words is not None else self.shell_path
        return [
            wrapper,
            "-c",
            local_script(feed=feed, locked=words is not None),
            os.path.basename(wrapper),  # $0: shell errors read `bash: ...`
            command,
            *(words or ()),
        ]

    def _spawns(self) -> bool:
        """Locked commands start from the spawner (hosts/spawner.py) where this machine can
        run one (Linux): started with the first of them, and again if it ended."""
        if self._spawner is not None and self._spawner.usable:
            return True
        if self._spawner is not None:
            self._spawner.close()
            self._spawner = None
        if not spawner_works():
            return False
        try:
            self._spawner = Spawner()
        except OSError:
            return False
        return True

    async def _spawned(self, command: str, words: list[str], stdin: bytes | None) -> _Child:
        """Start `command` from the spawner, inside the lock that `words` set."""
        spawner = self._spawner
        assert spawner is not None
        # words: [interpreter ..., SPEC, SHELL, "-c"]: the spawner enters the lock itself.
        spec, shell = words[-3], words[-2]
        if self.cwd is not None:
            # A working folder that is gone is kosmos's fault, not the command's: raised here,
            # as starting a process there raises it, rather than the child's status 126.
            os.close(os.open(self.cwd, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))
        read_out, write_out = os.pipe()
        if stdin is not None:
            # The line fits the pipe's buffer: written whole before the command starts.
            read_in, write_in = os.pipe()
            os.write(write_in, stdin if stdin.endswith(b"\n") else stdin + b"\n")
            os.close(write_in)
        else:
            read_in = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        try:
            spawn = asyncio.ensure_future(
                spawner.spawn(
                    [shell, "-c", command],
                    env=self.env,
                    cwd=self.cwd,
                    spec=spec,
                    stdin=read_in,
                    output=write_out,
                    plain=plain(command),
                )
            )
            try:
                spawned = await asyncio.shield(spawn)
            except asyncio.CancelledError:
                # Cancelled while it was being started: it may run all the same. End it.
                with contextlib.suppress(Exception):
                    (await spawn).end()
                os.close(read_out)
                raise
            except BaseException:
                os.close(read_out)
                raise
        finally:
            os.close(read_in)
            os.close(write_out)
        reader = asyncio.StreamReader(limit=READ_CHUNK)
        loop = asyncio.get_running_loop()
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(read_out, "rb", 0)
        )
        return _SpawnedChild(spawned, reader, transport)

    async def _process(self, argv: list[str]) -> _Child:
        """Start the wrapper script around a command (hosts/wrapper.py)."""
        spawn = asyncio.ensure_future(
            asyncio.create_subprocess_exec(
                *argv,
                # Never closed while the command runs: the wrapper ends the command's group
                # when it closes, which it does when kosmos itself dies.
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
                cwd=self.cwd,
                env=self.env,
            )
        )
        try:
            proc = await asyncio.shield(spawn)
        except asyncio.CancelledError:
            # Cancelled while the process was being started: it may run all the same, and
            # nothing else knows its pid. End its group before passing the cancel on.
            with contextlib.suppress(Exception):
                started = await spawn
                _kill_group(started.pid, signal.SIGKILL)
                # Its exit is seen once its pipes close: read what it printed to the end (a
                # full pipe stops asyncio reading it, and the wait would never end).
                assert started.stdout is not None
                await asyncio.wait_for(started.stdout.read(), KILL_GRACE)
                await asyncio.wait_for(started.wait(), KILL_GRACE)
            raise
        return _ProcessChild(proc)

    async def read_file(self, path: str, *, timeout: float) -> str | None:
        home = self.env.get("HOME")
        if home and (path == "~" or path.startswith("~/")):
            target = Path(home) / path[2:]
        else:
            target = Path(path).expanduser()
        if not target.is_absolute() and self.cwd is not None:
            target = self.cwd / target

        def read() -> str | None:
            # Opened without blocking: a FIFO must not hold the read (and the process) forever.
            flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
            try:
                fd = os.open(target, flags)
            except (FileNotFoundError, NotADirectoryError):
                if target.is_symlink():
                    raise FileUnreadable(path, BROKEN_LINK) from None
                return None
            except OSError as e:
                reason = BROKEN_LINK if e.errno == errno.ELOOP else unreadable(e.strerror or str(e))
                raise FileUnreadable(path, reason) from None
            kind = os.fstat(fd).st_mode
            if not stat.S_ISREG(kind):
                os.close(fd)
                if stat.S_ISDIR(kind):
                    return None
                raise FileUnreadable(path, NOT_A_FILE)
            with os.fdopen(fd, "rb") as f:
                try:
                    data = f.read(READ_FILE_LIMIT + 1)
                except OSError as e:
                    raise FileUnreadable(path, unreadable(e.strerror or str(e))) from None
            if len(data) > READ_FILE_LIMIT:
                raise FileUnreadable(path, TOO_LARGE)
            return data.decode("utf-8", errors="replace")

        async with asyncio.timeout(timeout):
            return await asyncio.to_thread(read)

    async def read_first(self, paths: Sequence[str], *, timeout: float) -> tuple[str, str] | None:
        return await read_first_each(self, paths, timeout=timeout)
