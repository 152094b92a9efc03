"""The run's transcript: append-only JSONL, flushed and fsynced per event."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

from kosmos.events import Event, parse_event


def default_path(directory: Path, skill: str, run_id: str) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", skill)[:60] or "skill"
    return directory / f"{stamp}-{safe}-{run_id[:8]}.jsonl"


class Transcript:
    """Writes each event as one JSON line; a killed run keeps all but the event in flight."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd: int | None = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

    def write(self, event: Event) -> None:
        if self._fd is None or not event.persist:
            return
        line = json.dumps(event.model_dump(mode="json"), ensure_ascii=False) + "\n"
        data = memoryview(line.encode("utf-8"))
        while data:
            data = data[os.write(self._fd, data) :]
        os.fsync(self._fd)

    def close(self) -> None:
        if self._fd is not None:
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
