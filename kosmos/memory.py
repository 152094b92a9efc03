"""Memory: Markdown notes on the controller, shared by every skill, host and run (kosmos-panel).

A note is one file `MEMORY_<lower-case snake_case>.md` in the memory folder (config
`memory_dir`; kosmos-panel's place, `./.kosmos-panel/memory`, by default). Unlike kosmos-panel,
which joined whatever name the LLM gave into a path, a name that breaks the rule is refused
before anything touches the disk.

Writes are atomic (a temporary file renamed over the note) and serialised by an exclusive
`flock` on the folder's `.lock` file, so appends from a fleet's hosts, or from several kosmos
processes, all land. Reads take no lock: a note is only ever replaced whole.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

# kosmos-panel keeps its notes here, relative to the working directory.
DEFAULT_FOLDER = Path(".kosmos-panel/memory")
# kosmos-panel's rule for note names, checked as a whole: no path, no other prefix, no capitals.
NAME_RULE = re.compile(r"^MEMORY_[a-z0-9]+(?:_[a-z0-9]+)*\.md$")
MAX_NAME = 100
# The most one note may hold; past it a store or an append is refused and nothing changes.
MAX_BYTES = 64 * 1024
# How much of a note's first line the index shows (kosmos-panel's summary).
SUMMARY_CHARS = 150
LOCK_FILE = ".lock"

T = TypeVar("T")


class MemoryRefused(Exception):
    """A memory action that could not be done; the message says why and what to do instead."""


@dataclass(frozen=True)
class Note:
    """One note as the index lists it: its name and the start of its first line."""

    name: str
    summary: str


def check_name(name: str) -> str:
    """`name` if it follows the rule, else MemoryRefused naming the rule and an example."""
    if len(name) <= MAX_NAME and NAME_RULE.match(name):
        return name
    shown = name if len(name) <= 60 else name[:57] + "..."
    raise MemoryRefused(
        f"{shown!r} is not a memory name: a name is MEMORY_ then lower-case letters, digits "
        "and single underscores, then .md (like MEMORY_nginx_setup.md); nothing was changed"
    )


def _missing(name: str) -> str:
    return f"there is no {name}; list the memory to see the notes there are"


def _line_ended(text: str) -> str:
    return text if text.endswith("\n") or not text else text + "\n"


def _summary(text: str) -> str:
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return first[:SUMMARY_CHARS] if first else "(empty)"


class MemoryStore:
    """The memory folder of one run; every method runs its file work off the event loop."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    async def _off_loop(self, work: Callable[[], T]) -> T:
        return await asyncio.to_thread(work)

    # -- what the session calls ------------------------------------------------------------

    async def store(self, name: str, content: str) -> int:
        """Replace (or create) a note; the bytes it now holds."""
        check_name(name)
        data = _fits(name, _line_ended(content).encode("utf-8"))
        return await self._off_loop(lambda: self._write(name, lambda old: data))

    async def append(self, name: str, content: str) -> int:
        """Add `content` on a new line at the end of a note (created if missing)."""
        check_name(name)

        def grow(old: bytes | None) -> bytes:
            added = _line_ended(content).encode("utf-8")
            if old:
                added = (old if old.endswith(b"\n") else old + b"\n") + added
            return _fits(name, added, appended=old is not None)

        return await self._off_loop(lambda: self._write(name, grow))

    async def retrieve(self, name: str) -> str:
        check_name(name)

        def read() -> str:
            data = self._read(name)
            if data is None:
                raise MemoryRefused(_missing(name))
            return data.decode("utf-8", errors="replace")

        return await self._off_loop(read)

    async def delete(self, name: str) -> None:
        check_name(name)

        def remove() -> None:
            with self._locked():
                if self._read(name) is None:
                    raise MemoryRefused(_missing(name))
                (self.folder / name).unlink()

        await self._off_loop(remove)

    async def index(self) -> list[Note]:
        """Every note, by name, with the start of its first line."""

        def scan() -> list[Note]:
            if not self.folder.is_dir():
                return []
            try:
                paths = sorted(self.folder.iterdir())
            except OSError as e:
                raise MemoryRefused(
                    f"the memory folder {self.folder} cannot be listed ({e.strerror}); check it"
                ) from None
            notes = []
            for path in paths:
                if not NAME_RULE.match(path.name):
                    continue
                try:
                    data = self._read(path.name)
                except MemoryRefused:
                    continue  # not a note (a link, a folder): nothing to list
                if data is not None:
                    notes.append(Note(path.name, _summary(data.decode("utf-8", errors="replace"))))
            return notes

        return await self._off_loop(scan)

    # -- files -----------------------------------------------------------------------------

    def _read(self, name: str) -> bytes | None:
        """A note's bytes; None when it is not there. A note that is not a plain file (a link,
        a folder) is refused: the memory folder holds notes and nothing else."""
        path = self.folder / name
        try:
            info = path.lstat()
        except FileNotFoundError:
            return None
        except OSError as e:
            raise MemoryRefused(
                f"{name} cannot be read ({e.strerror}); check the memory folder {self.folder}"
            ) from None
        if not stat.S_ISREG(info.st_mode):
            raise MemoryRefused(
                f"{name} in {self.folder} is not a plain file; remove it or store another name"
            )
        try:
            return path.read_bytes()
        except OSError as e:
            raise MemoryRefused(
                f"{name} cannot be read ({e.strerror}); check the memory folder {self.folder}"
            ) from None

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            handle = os.open(self.folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as e:
            raise MemoryRefused(
                f"the memory folder {self.folder} cannot be written ({e.strerror}); check it"
            ) from None
        try:
            fcntl.flock(handle, fcntl.LOCK_EX)
            yield
        finally:
            os.close(handle)  # closing releases the lock

    def _write(self, name: str, change: Callable[[bytes | None], bytes]) -> int:
        with self._locked():
            data = change(self._read(name))
            fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=self.folder)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, self.folder / name)
            except OSError as e:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise MemoryRefused(
                    f"{name} could not be written ({e.strerror}); nothing was changed"
                ) from None
            return len(data)


def _fits(name: str, data: bytes, *, appended: bool = False) -> bytes:
    if len(data) > MAX_BYTES:
        what = "with this append it would hold" if appended else "the content is"
        raise MemoryRefused(
            f"{name}: {what} {len(data)} bytes, more than the {MAX_BYTES // 1024} KiB a note "
            "may hold; store a shorter summary, or split it over several notes; nothing was "
            "changed"
        )
    return data


def index_text(notes: list[Note], empty: str) -> str:
    """The index as the LLM reads it: each note's name, then its summary, a blank line apart."""
    if not notes:
        return empty
    return "\n\n".join(f"{n.name}\n{n.summary}" for n in notes)
