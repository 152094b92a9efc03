"""The run's transcript: append-only JSONL, every event written and fsynced off the loop."""

from __future__ import annotations

import json
import os
import queue
import re
import stat
import threading
import time
from pathlib import Path
from typing import BinaryIO

from pydantic import ValidationError

from kosmos.errors import UsageError
from kosmos.events import Event, parse_event


def default_path(directory: Path, skill: str, run_id: str) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", skill)[:60] or "skill"
    return directory / f"{stamp}-{safe}-{run_id[:8]}.jsonl"


class AppendWriter:
    """Appends lines to files from one thread, fsyncing each file once per batch.

    The event loop only hands over the bytes; the thread writes whatever queued up meanwhile
    and fsyncs each file it touched: every line reaches the disk, in order, within
    milliseconds, and no run waits on the disk between its steps. A killed kosmos loses at
    most the lines of the last few milliseconds; each file ends with whole lines.
    """

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[tuple[int, bytes] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._error: OSError | None = None

    def append(self, fd: int, data: bytes) -> None:
        if self._error is not None:
            raise self._error
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name="kosmos-writer", daemon=True)
            self._thread.start()
        self._queue.put((fd, data))

    def flush(self) -> None:
        """Write out and fsync everything handed over; raise a write's error, if any."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None
        if self._error is not None:
            raise self._error

    def _work(self) -> None:
        while True:
            batch = [self._queue.get()]
            while True:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            touched: set[int] = set()
            try:
                for item in batch:
                    if item is None:
                        continue
                    fd, data = item
                    view = memoryview(data)
                    while view:
                        view = view[os.write(fd, view) :]
                    touched.add(fd)
                for fd in touched:
                    os.fsync(fd)
            except OSError as e:
                # Raised on the next write from the loop: nothing is dropped silently.
                self._error = e
            if None in batch:
                return


class Transcript:
    """Writes each event as one JSON line, fsynced within milliseconds (AppendWriter); a
    killed run keeps all but the events of its last moments."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd: int | None = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self._writer = AppendWriter()

    def write(self, event: Event) -> None:
        if self._fd is None or not event.persist:
            return
        line = json.dumps(event.model_dump(mode="json"), ensure_ascii=False) + "\n"
        self._writer.append(self._fd, line.encode("utf-8"))

    def close(self) -> None:
        if self._fd is not None:
            try:
                self._writer.flush()
            finally:
                os.close(self._fd)
                self._fd = None


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
    except ValidationError as e:
        first = e.errors()[0]
        field = ".".join(str(part) for part in first.get("loc", ())) or "the event"
        raise UsageError(
            f"{where}: a {data['type']!r} event kosmos cannot read ({field}: {first['msg']}); "
            "was the file edited?"
        ) from None
