"""A fleet's transcripts: one JSONL file per host, written and fsynced by one thread.

With fifty hosts a run produces thousands of events; an fsync per event on the event loop
would stall every host for each one. The loop only serializes the event; the transcript's
AppendWriter appends it to its host's file and fsyncs each file once per batch.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

from kosmos.events import Event
from kosmos.transcript import AppendWriter


def host_file_name(host: str) -> str:
    """The file of a host's transcript: its name where that is a safe file name, else a safe
    form of it with a hash of the name, so that `web 1` and `web/1` never share a file."""
    safe = re.sub(r"[^A-Za-z0-9._@-]+", "_", host)[:80] or "host"
    if safe != host or safe.startswith("."):
        safe = f"{safe}-{hashlib.sha256(host.encode('utf-8', 'surrogatepass')).hexdigest()[:12]}"
    return safe + ".jsonl"


class Journal:
    """Transcripts of every host of a fleet, under one run directory."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self._fds: dict[str, int] = {}
        self._writer = AppendWriter()

    def path(self, host: str) -> Path:
        return self.directory / host_file_name(host)

    def write(self, event: Event) -> None:
        """Queue one event for its host's file (events without a host are not kept here)."""
        if not event.persist or event.host is None:
            return
        line = json.dumps(event.model_dump(mode="json"), ensure_ascii=False) + "\n"
        self._writer.append(self._fd(event.host), line.encode("utf-8"))

    def close(self) -> None:
        """Write out everything queued, fsync and close every file."""
        try:
            self._writer.flush()
        finally:
            for fd in self._fds.values():
                os.close(fd)
            self._fds.clear()

    def _fd(self, host: str) -> int:
        if host not in self._fds:
            flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND
            self._fds[host] = os.open(self.path(host), flags, 0o600)
        return self._fds[host]
