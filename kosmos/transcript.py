"""The run's transcript: append-only JSONL, every event written and fsynced off the loop."""

from __future__ import annotations

import json
import os
import queue
import re
import threading
import time
from pathlib import Path

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


def read_transcript(path: Path) -> list[Event]:
    """Every complete event in a transcript; a torn last line (killed mid-write) is ignored."""
    events: list[Event] = []
    with path.open(encoding="utf-8") as f:
        for line in f:
            if not line.endswith("\n"):
                break
            events.append(parse_event(json.loads(line)))
    return events
