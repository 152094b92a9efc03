"""A skill's folder (Agent Skills): the files beside SKILL.md, and where they are on the target.

An Agent Skills folder holds `scripts/`, `references/` and `assets/` next to SKILL.md, and its
instructions name them ("run scripts/check.sh"). kosmos-panel sent SKILL.md alone, so such a
skill could not work on a remote host. kosmos puts the files where the skill runs:

* on `local`, the folder itself;
* over SSH, a copy uploaded once (by SFTP, else through the command channel) to
  `~/.cache/kosmos/skills/NAME-HASH/`, HASH naming the files' paths, modes and contents, so
  a copy already there is reused and a changed skill gets a new one; only its owner can
  read it (files 0600, or 0700 when they run; folders 0700);
* a skill kept on the host (`~/.config/kosmos-panel/skills/NAME`) uses its own folder there.

The prompt names the folder as the skill's base directory. Hidden files, caches and folders
holding a skill of their own are not part of a skill.

Nothing the folder links to is taken along: a link to a file of the folder travels as a link,
any other link is refused, and so is a FIFO, socket or device, and a name that is not UTF-8.
Files are read with a cap, not by the size they claim (files under /proc claim 0).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import shlex
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from kosmos.errors import HostError, UsageError
from kosmos.hosts.own import run_own, upload_own
from kosmos.hosts.runner import Runner
from kosmos.skills.model import Skill

SKILL_FILE = "SKILL.md"
# The most a skill's other files may hold together: they travel to every host it runs on.
MAX_FOLDER_BYTES = 1024 * 1024
MAX_FILES = 200
# Where uploaded skills live on a host, relative to the login directory.
REMOTE_CACHE = ".cache/kosmos/skills"
_SKIPPED_DIRS = {"__pycache__", "node_modules"}
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


class SkillFolderError(UsageError):
    """A skill's folder that cannot travel: too large, too many files, unreadable."""


@dataclass(frozen=True)
class SkillFile:
    """One file beside SKILL.md: its path relative to the folder, its bytes, whether it runs;
    or (`link`) a symbolic link to another file of the folder, as the text it points with."""

    path: str
    data: bytes
    executable: bool
    link: str | None = None


@dataclass(frozen=True)
class SkillFolder:
    """The files of a skill's folder on this machine, in a stable order."""

    root: Path
    files: tuple[SkillFile, ...]

    @property
    def size(self) -> int:
        return sum(len(f.data) for f in self.files)

    @property
    def digest(self) -> str:
        """Names this exact set of files: paths, exec bits, contents and links."""
        h = hashlib.sha256()
        for f in self.files:
            kind = b"l" if f.link is not None else b"x" if f.executable else b"-"
            h.update(f.path.encode() + b"\0" + kind + b"\0")
            data = f.link.encode() if f.link is not None else f.data
            h.update(len(data).to_bytes(8, "big") + data)
        return h.hexdigest()[:16]


@dataclass(frozen=True)
class PlacedFolder:
    """Where the skill's files are on the target, and how they got there."""

    base: str
    files: tuple[str, ...]
    size: int
    how: Literal["local", "uploaded", "reused", "remote"]
    # Said once when the files took another way than the usual (no sftp on the host).
    note: str | None = None


_KINDS = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
}


def _shown(path: Path) -> str:
    """A path for a message: a byte that is not UTF-8 shown as \\xNN."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


class _Collector:
    """Walks a skill's folder without following a link, reading each file with a cap."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.real_root = root.resolve()
        self.files: list[SkillFile] = []
        self.total = 0
        self.links: list[tuple[Path, str, str]] = []  # (link, its text, what it reaches)

    def walk(self, here: Path) -> None:
        try:
            entries = sorted(os.scandir(here), key=lambda e: e.name)
        except OSError as e:
            raise SkillFolderError(_unreadable(here, e)) from None
        for entry in entries:
            path = Path(entry.path)
            name = entry.name
            if name.startswith(".") or (here == self.root and name == SKILL_FILE):
                continue
            try:
                name.encode("utf-8")
            except UnicodeEncodeError:
                raise SkillFolderError(
                    f"{_shown(path)}: a file name that is not UTF-8; rename it (or move it out "
                    f"of the folder), the files beside {SKILL_FILE} go to the host by name"
                ) from None
            try:
                info = os.lstat(path)
            except OSError as e:
                raise SkillFolderError(_unreadable(path, e)) from None
            if stat.S_ISLNK(info.st_mode):
                self._link(path)
            elif stat.S_ISDIR(info.st_mode):
                if name in _SKIPPED_DIRS or (path / SKILL_FILE).exists():
                    continue  # a cache, or another skill: not a part of this one
                self.walk(path)
            elif stat.S_ISREG(info.st_mode):
                self._file(path)
            else:
                what = _KINDS.get(stat.S_IFMT(info.st_mode), "a special file")
                raise SkillFolderError(
                    f"{_shown(path)}: {what}; only files (and links to files of the folder) "
                    f"travel with a skill, so remove it or move it out of the folder"
                )
            if len(self.files) > MAX_FILES:
                raise SkillFolderError(
                    f"{self.root}: more than {MAX_FILES} files beside {SKILL_FILE}; a skill's "
                    "folder travels to every host it runs on, so keep only what the skill uses"
                )

    def _file(self, path: Path) -> None:
        # No link is followed (O_NOFOLLOW) and nothing blocks (a FIFO swapped in since the
        # lstat); the size is what a read returns, never st_size (/proc says 0).
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(path, flags)
        except OSError as e:
            raise SkillFolderError(_unreadable(path, e)) from None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise SkillFolderError(f"{_shown(path)}: not a regular file; move it out")
            with os.fdopen(fd, "rb", closefd=False) as f:
                data = f.read(MAX_FOLDER_BYTES - self.total + 1)
        except OSError as e:
            raise SkillFolderError(_unreadable(path, e)) from None
        finally:
            os.close(fd)
        self.total += len(data)
        if self.total > MAX_FOLDER_BYTES:
            raise SkillFolderError(_too_large(self.root))
        relative = path.relative_to(self.root).as_posix()
        self.files.append(SkillFile(relative, data, bool(info.st_mode & 0o111)))

    def _link(self, path: Path) -> None:
        text = os.readlink(path)
        reached = Path(os.path.realpath(path))
        if not reached.exists():
            raise SkillFolderError(
                f"{_shown(path)}: a link to {text} that points at nothing; remove it, or point "
                "it at a file of the skill's folder"
            )
        if not reached.is_relative_to(self.real_root):
            raise SkillFolderError(
                f"{_shown(path)}: a link to {text}, outside the skill's folder; kosmos takes "
                "nothing from outside it to a host: copy the file into the folder instead"
            )
        inside = reached.relative_to(self.real_root).as_posix()
        # Travels as a link, pointing as it does here, relative to where it stands.
        relative = os.path.relpath(reached, os.path.realpath(path.parent))
        self.links.append((path, text, inside))
        self.files.append(
            SkillFile(path.relative_to(self.root).as_posix(), b"", False, link=relative)
        )

    def check_links(self) -> None:
        """Each link must reach something that travels too, or it would dangle on the host."""
        sent = {f.path for f in self.files}
        folders = {p for f in self.files for p in _parents(f.path)}
        for path, text, inside in self.links:
            if inside not in sent and inside not in folders:
                raise SkillFolderError(
                    f"{_shown(path)}: a link to {text}, which does not travel with the skill "
                    "(hidden, a cache or another skill's); point it at a file that does"
                )


def _parents(path: str) -> list[str]:
    parts = path.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def _unreadable(path: Path, error: OSError) -> str:
    return (
        f"{_shown(path)}: cannot be read ({error.strerror or error}); the files beside "
        f"{SKILL_FILE} go to the host with the skill, so fix its mode or move it out of the "
        "folder"
    )


def collect_folder(skill: Skill) -> SkillFolder | None:
    """The files beside a local skill's SKILL.md; None when there are none (or the skill is
    not a SKILL.md in a folder). Over the limits, or a file that may not travel (a link out
    of the folder, a FIFO, a name that is not UTF-8), SkillFolderError (exit 2) says which."""
    path = Path(skill.path)
    if path.name != SKILL_FILE or skill.source == "remote" or not path.is_file():
        return None
    collector = _Collector(path.parent)
    collector.walk(path.parent)
    collector.check_links()
    files = collector.files
    return SkillFolder(path.parent, tuple(files)) if files else None


def _too_large(root: Path) -> str:
    return (
        f"{root}: the files beside {SKILL_FILE} hold more than {MAX_FOLDER_BYTES // 1024} KiB, "
        f"the most kosmos takes to a host with a skill; move large data out of the folder "
        "and have the skill fetch it"
    )


def remote_name(skill: Skill, folder: SkillFolder) -> str:
    """`NAME-HASH`: the uploaded copy's folder under REMOTE_CACHE."""
    name = _SAFE_NAME.sub("_", skill.name).strip("._-")[:60] or "skill"
    return f"{name}-{folder.digest}"


async def place_folder(skill: Skill, runner: Runner, *, timeout: float) -> PlacedFolder | None:
    """Make the skill's files available on the runner's host; None when it has none."""
    if skill.source == "remote":
        return await _remote_folder(skill, runner, timeout=timeout)
    folder = await asyncio.to_thread(collect_folder, skill)
    if folder is None:
        return None
    files = tuple(f.path for f in folder.files)
    try:
        async with asyncio.timeout(timeout):
            placed = await upload_own(
                runner,
                f"{REMOTE_CACHE}/{remote_name(skill, folder)}",
                [(f.path, f.data, f.executable, f.link) for f in folder.files],
                purpose="skill folder",
            )
    except TimeoutError:
        raise HostError(
            f"{runner.name}: uploading the files of skill {skill.name} took longer than "
            f"{timeout:g} s; check the connection, or raise --command-timeout"
        ) from None
    if placed is None:
        # This machine: the skill runs beside its own files.
        return PlacedFolder(str(folder.root.resolve()), files, folder.size, "local")
    base, sent, note = placed
    return PlacedFolder(base, files, folder.size, "uploaded" if sent else "reused", note)


async def _remote_folder(skill: Skill, runner: Runner, *, timeout: float) -> PlacedFolder | None:
    """A skill kept on the host: its folder there, and the files in it besides SKILL.md."""
    folder = skill.path.rsplit("/", 1)[0]
    where = '"$HOME"/' + shlex.quote(folder[2:]) if folder.startswith("~/") else shlex.quote(folder)
    command = (
        f"cd {where} 2>/dev/null || exit 0; pwd; "
        "find . -type f ! -path './SKILL.md' ! -path '*/.*' 2>/dev/null | sort | head -n 201"
    )
    result = await run_own(runner, command, purpose="skill folder", timeout=timeout)
    lines = [line.strip() for line in result.output.text().splitlines() if line.strip()]
    if result.exit_code != 0 or len(lines) < 2 or not lines[0].startswith("/"):
        return None
    files = tuple(line.removeprefix("./") for line in lines[1 : MAX_FILES + 1])
    return PlacedFolder(lines[0], files, 0, "remote")
