"""A fleet's transcripts: one JSONL file per host, written and fsynced by one thread.

With fifty hosts a run produces thousands of events; an fsync per event on the event loop
would stall every host for each one. Here the loop only serializes the event; a writer
thread appends it to its host's file and fsyncs each file once per batch of what queued up
meanwhile. A killed kosmos loses at most the events of the last few milliseconds; each host's
file stays in event order and ends with whole lines.
"""

from __future__ import annotations

import json
import os
import queue
import re
import threading
from pathlib import Path

from kosmos.events import Event

_STOP = object()


def host_file_name(host: str) -> str:
    return (re.sub(r"[^A-Za-z0-9._@-]+", "_", host)[:80] or "host") + ".jsonl"


class Journal:
    """Transcripts of every host of a fleet, under one run directory."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._fds: dict[str, int] = {}
        self._thread: threading.Thread | None = None
        self._error: OSError | None = None

    def path(self, host: str) -> Path:
        return self.directory / host_file_name(host)

    def write(self, event: Event) -> None:
        """Queue one event for its host's file (events without a host are not kept here)."""
        if not event.persist or event.host is None:
            return
        if self._error is not None:
            raise self._error
        line = json.dumps(event.model_dump(mode="json"), ensure_ascii=False) + "\n"
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name="kosmos-journal", daemon=True)
            self._thread.start()
        self._queue.put((event.host, line.encode("utf-8")))

    def close(self) -> None:
        """Write out everything queued, fsync and close every file."""
        if self._thread is not None:
            self._queue.put(_STOP)
            self._thread.join()
            self._thread = None
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()

    def _fd(self, host: str) -> int:
        if host not in self._fds:
            flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND
            self._fds[host] = os.open(self.path(host), flags, 0o600)
        return self._fds[host]

    def _work(self) -> None:
        while True:
            batch = [self._queue.get()]
            while True:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            stop = False
            touched: set[int] = set()
            try:
                for item in batch:
                    if item is _STOP:
                        stop = True
                        continue
                    host, data = item  # type: ignore[misc]
                    fd = self._fd(host)
                    view = memoryview(data)
                    while view:
                        view = view[os.write(fd, view) :]
                    touched.add(fd)
                for fd in touched:
                    os.fsync(fd)
            except OSError as e:
                # Reported on the next write from the loop; nothing is dropped silently.
                self._error = e
            if stop:
                return
