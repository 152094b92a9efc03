"""A fleet's transcripts: one JSONL file per host, written and fsynced by one thread.

With fifty hosts a run produces thousands of events; an fsync per event on the event loop
would stall every host for each one. The loop only serializes the event; the transcript's
AppendWriter appends it to its host's file and fsyncs each file once per batch.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from collections.abc import Awaitable
from pathlib import Path

from kosmos.errors import RecordError, UsageError
from kosmos.events import Event, dump
from kosmos.fleet.results import names
from kosmos.seal import Sealer, continued, last_digest, seal_document
from kosmos.transcript import AppendWriter, WriteFailed, event_line, open_append, unwritable


def host_file_name(host: str) -> str:
    """The file of a host's transcript: its name where that is a safe file name, else a safe
    form of it with a hash of the name, so that `web 1` and `web/1` never share a file."""
    safe = re.sub(r"[^A-Za-z0-9._@-]+", "_", host)[:80] or "host"
    if safe != host or safe.startswith("."):
        safe = f"{safe}-{hashlib.sha256(host.encode('utf-8', 'surrogatepass')).hexdigest()[:12]}"
    return safe + ".jsonl"


class Journal:
    """Transcripts of every host of a fleet, under one run directory; each file's lines are
    sealed (`kosmos.seal`), and with `key` signed."""

    def __init__(self, directory: Path, *, key: bytes | None = None) -> None:
        self.directory = directory
        self.key = key
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise unwritable(directory, e, "the fleet's run directory") from None
        self._fds: dict[str, int] = {}
        self._sealers: dict[str, Sealer | None] = {}
        self._writer = AppendWriter()

    def path(self, host: str) -> Path:
        return self.directory / host_file_name(host)

    def write(self, event: Event) -> None:
        """Queue one event for its host's file (events without a host are not kept here);
        RecordError (once) when the disk stopped taking them."""
        if not event.persist or event.host is None:
            return
        line = event_line(event)
        fd = self._fd(event.host)
        sealer = self._sealers[event.host]
        if sealer is not None:
            line = sealer.seal(line)
        try:
            self._writer.append(fd, line + b"\n")
        except WriteFailed as e:
            raise self._failed(e) from None

    def synced(self) -> Awaitable[None]:
        """Done once every event written so far (every host's) is on the disk."""
        return self._writer.synced()

    def close(self) -> None:
        """Write out everything queued, fsync and close every file."""
        try:
            self._writer.flush()
        except WriteFailed as e:
            raise self._failed(e) from None
        finally:
            for fd in self._fds.values():
                os.close(fd)
            self._fds.clear()

    def _fd(self, host: str) -> int:
        if host not in self._fds:
            # `--resume DIR` appends to a host's file: its chain goes on.
            self._sealers[host] = continued(self.path(host), self.key)
            self._fds[host] = open_append(self.path(host), "the transcript")
        return self._fds[host]

    def digests(self) -> dict[str, str]:
        """The digest that ends each transcript's chain, by file name, for fleet.json's seal;
        a file this journal did not write (a resumed fleet's host left as it was) is read."""
        written = {self.path(host).name: sealer for host, sealer in self._sealers.items()}
        found: dict[str, str] = {}
        for path in sorted(self.directory.glob("*.jsonl")):
            sealer = written.get(path.name)
            digest = sealer.last.hex() if sealer is not None else last_digest(path)
            if digest is not None:
                found[path.name] = digest
        return found

    def _failed(self, failure: WriteFailed) -> RecordError:
        name = next((host for host, fd in self._fds.items() if fd == failure.fd), "?")
        error = failure.error
        return RecordError(
            f"cannot write the transcript {self.path(name)}: {error.strerror or error}; "
            "the fleet stopped, starting no more hosts"
        )


def write_fleet_json(path: Path, result: Event, journal: Journal | None = None) -> None:
    """fleet.json, whole or not at all (written beside it, then renamed over it); a disk that
    does not take it is a RecordError. With the `journal` of its transcripts, it is sealed
    with them (and signed with the journal's key)."""
    data = dump(result)
    if journal is not None:
        data = seal_document(data, journal.digests(), journal.key)
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    part = path.with_name(path.name + ".part")
    try:
        part.write_text(text, encoding="utf-8")
        os.replace(part, path)
    except OSError as e:
        with contextlib.suppress(OSError):
            part.unlink()
        raise RecordError(
            f"cannot write {path}: {e.strerror or e}; the summary printed here is the "
            "fleet's only record"
        ) from None


def refuse_earlier_run(directory: Path) -> None:
    """A run directory must not hold another run: its fleet.json would be replaced and each
    host's file would hold two runs, which neither `--resume` nor `fleet merge` can tell apart."""
    try:
        earlier = sorted(
            p.name
            for p in directory.iterdir()
            if p.name in ("fleet.json", "fleet-plan.json") or p.suffix == ".jsonl"
        )
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError as e:
        raise unwritable(directory, e, "the fleet's run directory") from None
    if earlier:
        killed = "fleet-plan.json" in earlier and "fleet.json" not in earlier
        finish = f" (to finish that fleet: kosmos run --resume {directory})" if killed else ""
        raise UsageError(
            f"--transcript {directory}: holds an earlier fleet run ({names(earlier, 60)}); "
            f"give a new directory, or leave --transcript out for a fresh one{finish}"
        )
