"""The run's transcript: append-only JSONL, every event written and fsynced off the loop."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import errno
import fcntl
import json
import os
import queue
import re
import stat
import threading
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import BinaryIO

import msgspec

from kosmos.errors import KosmosError, RecordError, UsageError, validation_problem
from kosmos.events import Event, dump, parse_event
from kosmos.seal import continued


def default_path(directory: Path, skill: str, run_id: str) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", skill)[:60] or "skill"
    return directory / f"{stamp}-{safe}-{run_id[:8]}.jsonl"


class WriteFailed(Exception):
    """A line could not be appended to the file open as `fd` (the first such failure)."""

    def __init__(self, fd: int, error: OSError) -> None:
        super().__init__(error)
        self.fd = fd
        self.error = error


# Resolved by the writer's thread once what was handed over before it is on the disk.
Synced = concurrent.futures.Future[None]


class AppendWriter:
    """Appends lines to files from one thread, fsyncing each file once per batch.

    The event loop only hands over the bytes; the thread writes whatever queued up meanwhile
    and fsyncs each file it touched: every line reaches the disk, in order, within
    milliseconds, and no run waits on the disk between its steps. A killed kosmos loses at
    most the lines of the last few milliseconds; each file ends with whole lines.

    Where losing those would matter (a command about to run, which a resumed run must know
    started), `synced` waits until every line handed over is on the disk.

    A line the disk does not take (full, an I/O error) is cut back out of its file, so the
    file still ends with a whole line, and the first such failure is raised once, from the
    next `append` or `flush`. Later lines are still tried: the last events of a run that
    stops for it may yet fit.
    """

    def __init__(self) -> None:
        # Lines for files, futures to resolve once what came before them is fsynced, the end.
        self._queue: queue.SimpleQueue[tuple[int, bytes] | Synced | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._failed: WriteFailed | None = None
        self._reported = False

    def append(self, fd: int, data: bytes) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name="kosmos-writer", daemon=True)
            self._thread.start()
        self._queue.put((fd, data))
        self._report()

    def synced(self) -> Awaitable[None]:
        """Done once every line handed over so far is written and fsynced (or failed: the
        failure is raised by the next `append`), without blocking the caller's loop."""
        done: Synced = concurrent.futures.Future()
        if self._thread is None:  # nothing handed over, or all of it flushed
            done.set_result(None)
        else:
            self._queue.put(done)
        return asyncio.wrap_future(done)

    def flush(self) -> None:
        """Write out and fsync everything handed over; raise a failure not raised yet."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None
        self._report()

    def _report(self) -> None:
        if self._failed is not None and not self._reported:
            self._reported = True
            raise self._failed

    def _fail(self, fd: int, error: OSError) -> None:
        if self._failed is None:
            self._failed = WriteFailed(fd, error)

    def _work(self) -> None:
        while True:
            batch = [self._queue.get()]
            while True:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            touched: set[int] = set()
            waiting: list[Synced] = []
            for item in batch:
                if isinstance(item, tuple):
                    fd, data = item
                    if self._write(fd, data):
                        touched.add(fd)
                elif item is not None:
                    waiting.append(item)
            for fd in touched:
                try:
                    os.fsync(fd)
                except OSError as e:
                    self._fail(fd, e)
            for done in waiting:
                if done.set_running_or_notify_cancel():  # False: its waiter was cancelled
                    done.set_result(None)
            if None in batch:
                return

    def _write(self, fd: int, data: bytes) -> bool:
        start = None
        try:
            start = os.lseek(fd, 0, os.SEEK_END)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            return True
        except OSError as e:
            self._fail(fd, e)
            if start is not None:
                # A line cut short by a full disk would tear the file: take it back out.
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, start)
            return False


def event_line(event: Event) -> bytes:
    """An event as its transcript line's JSON, without the newline or the seal."""
    return json.dumps(dump(event), ensure_ascii=False).encode("utf-8")


class Transcript:
    """Writes each event as one JSON line, fsynced within milliseconds (AppendWriter); a
    killed run keeps all but the events of its last moments. Each line is sealed
    (`kosmos.seal`), and with `key` signed; a resumed run's lines go on with the file's chain."""

    def __init__(self, path: Path, *, key: bytes | None = None) -> None:
        self.path = path
        self._fd: int | None = open_append(path, "the transcript")
        self._writer = AppendWriter()
        self._sealer = continued(path, key)

    def write(self, event: Event) -> None:
        """Append one event; RecordError (once) when the disk stopped taking them."""
        if self._fd is None or not event.persist:
            return
        line = event_line(event)
        if self._sealer is not None:
            line = self._sealer.seal(line)
        try:
            self._writer.append(self._fd, line + b"\n")
        except WriteFailed as e:
            raise self._failed(e.error) from None

    def synced(self) -> Awaitable[None]:
        """Done once every event written so far is on the disk."""
        return self._writer.synced()

    def close(self) -> None:
        if self._fd is not None:
            try:
                self._writer.flush()
            except WriteFailed as e:
                raise self._failed(e.error) from None
            finally:
                os.close(self._fd)
                self._fd = None

    def _failed(self, error: OSError) -> RecordError:
        return RecordError(
            f"cannot write the transcript {self.path}: {error.strerror or error}; the run "
            "stopped there. Free space on that disk, then `kosmos run --resume "
            f"{self.path}` goes on from its last whole event"
        )


def open_append(path: Path, what: str) -> int:
    """Open `path` to append to, making its folder, and hold it for this writer alone; a path
    that cannot hold a file is a UsageError naming why, a full disk a RecordError, a file
    another run is writing a UsageError saying so."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND
    try:
        try:
            fd = os.open(path, flags, 0o600)
        except FileNotFoundError:  # its folder is not there yet (a fleet's is, after the first)
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, flags, 0o600)
    except OSError as e:
        raise unwritable(path, e, what) from None
    try:
        # Two runs appending to one file would interleave their events into a record that
        # neither --resume nor a reader can take apart. The lock goes with the file's close.
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        os.close(fd)
        if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise unwritable(path, e, what) from None
        raise UsageError(
            f"{what} {path} is being written by another kosmos run; wait for it to end, or "
            "give --transcript another path"
        ) from None
    return fd


def unwritable(path: Path, error: OSError, what: str) -> KosmosError:
    """One line for a file or folder kosmos cannot create: which part of the path is at fault."""
    if error.errno in _DISK_ERRORS:
        return RecordError(f"cannot create {what} {path}: {error.strerror}; free space there")
    reason = error.strerror or str(error)
    for parent in (path, *path.parents):
        if parent.exists() or parent.is_symlink():
            if parent != path and not parent.is_dir():
                reason = f"{parent} is a file, not a directory"
            elif parent == path and parent.is_dir():
                reason = "that is a directory; give a file's path"
            break
    return UsageError(
        f"cannot create {what} {path}: {reason}; give --transcript a path in a directory you "
        "can write (or set transcript_dir in the config)"
    )


_DISK_ERRORS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EFBIG})


# The longest line a transcript holds: an LLM request carrying a long history, a command's
# output (1 MiB kept) twice over. Past it the file is not a transcript of ours.
MAX_LINE = 64 * 1024 * 1024

_KINDS = {
    stat.S_IFDIR: "a directory",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}


class NotAFile(UsageError):
    """A path given as a file kosmos reads (a transcript, a fleet.json) that is not one."""


def open_regular(path: Path, what: str) -> BinaryIO:
    """`path` opened for reading, if it is a regular file; NotAFile (exit 2) for a directory,
    FIFO, device or socket, which would hang a read or never end (/dev/zero).

    FileNotFoundError and other OSErrors pass up for the caller to word.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        kind = stat.S_IFMT(os.fstat(fd).st_mode)
        if kind != stat.S_IFREG:
            raise NotAFile(f"{path}: {_KINDS.get(kind, 'a special file')}, not {what}")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_transcript(path: Path) -> list[Event]:
    """Every complete event in a transcript; a torn last line (killed mid-write) is ignored.

    Anything else that is not a kosmos event is a UsageError (exit 2) naming the file and the
    line; so is a path that is not a regular file.
    """
    events: list[Event] = []
    with open_regular(path, "a transcript file") as f:
        number = 0
        while True:
            raw = f.readline(MAX_LINE + 1)
            number += 1
            if not raw.endswith(b"\n"):
                if len(raw) > MAX_LINE:
                    raise UsageError(
                        f"{path} line {number}: longer than {MAX_LINE // 2**20} MiB; not a "
                        "kosmos transcript"
                    )
                break  # the end, or a torn last line
            events.append(_event(raw, path, number))
    return events


def _event(raw: bytes, path: Path, number: int) -> Event:
    where = f"{path} line {number}"
    try:
        data = json.loads(raw)
    except UnicodeDecodeError:
        raise UsageError(f"{where}: not UTF-8 text; is it a kosmos transcript?") from None
    except ValueError as e:
        raise UsageError(f"{where}: not JSON ({e}); is it a kosmos transcript?") from None
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        raise UsageError(f'{where}: not a kosmos event (no "type"); is it a transcript?')
    try:
        return parse_event(data)
    except msgspec.ValidationError as e:
        message, loc = validation_problem(e)
        field = ".".join(str(part) for part in loc) or "the event"
        raise UsageError(
            f"{where}: a {data['type']!r} event kosmos cannot read ({field}: "
            f"{message.replace('`', '')}); was the file edited?"
        ) from None
