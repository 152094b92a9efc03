"""A skill's folder (Agent Skills): the files beside SKILL.md, and where they are on the target.

An Agent Skills folder holds `scripts/`, `references/` and `assets/` next to SKILL.md, and its
instructions name them ("run scripts/check.sh"). kosmos-panel sent SKILL.md alone, so such a
skill could not work on a remote host. kosmos puts the files where the skill runs:

* on `local`, the folder itself;
* over SSH, a copy uploaded once by SFTP to `~/.cache/kosmos/skills/NAME-HASH/`, HASH naming
  the files' paths, modes and contents, so a copy already there is reused and a changed
  skill gets a new one;
* a skill kept on the host (`~/.config/kosmos-panel/skills/NAME`) uses its own folder there.

The prompt names the folder as the skill's base directory. Hidden files, caches and folders
holding a skill of their own are not part of a skill.
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
    """One file beside SKILL.md: its path relative to the folder, its bytes, whether it runs."""

    path: str
    data: bytes
    executable: bool


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
        """Names this exact set of files: paths, exec bits and contents."""
        h = hashlib.sha256()
        for f in self.files:
            h.update(f.path.encode() + b"\0" + (b"x" if f.executable else b"-") + b"\0")
            h.update(len(f.data).to_bytes(8, "big") + f.data)
        return h.hexdigest()[:16]


@dataclass(frozen=True)
class PlacedFolder:
    """Where the skill's files are on the target, and how they got there."""

    base: str
    files: tuple[str, ...]
    size: int
    how: Literal["local", "uploaded", "reused", "remote"]


def collect_folder(skill: Skill) -> SkillFolder | None:
    """The files beside a local skill's SKILL.md; None when there are none (or the skill is
    not a SKILL.md in a folder). Over the limits, SkillFolderError (exit 2) says which."""
    path = Path(skill.path)
    if path.name != SKILL_FILE or skill.source == "remote" or not path.is_file():
        return None
    root = path.parent
    files: list[SkillFile] = []
    total = 0
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        dirnames[:] = sorted(
            d
            for d in dirnames
            if not d.startswith(".")
            and d not in _SKIPPED_DIRS
            and not (here / d / SKILL_FILE).exists()  # another skill, not a part of this one
        )
        for name in sorted(filenames):
            file = here / name
            if name.startswith(".") or (here == root and name == SKILL_FILE):
                continue
            try:
                info = file.stat()
                if not stat.S_ISREG(info.st_mode):
                    continue
                total += info.st_size
                if total > MAX_FOLDER_BYTES:
                    raise SkillFolderError(_too_large(root))
                data = file.read_bytes()
            except OSError as e:
                raise SkillFolderError(
                    f"{file}: cannot be read ({e.strerror}); the files beside {SKILL_FILE} go to "
                    "the host with the skill, so fix its mode or move it out of the folder"
                ) from None
            files.append(
                SkillFile(file.relative_to(root).as_posix(), data, bool(info.st_mode & 0o111))
            )
            if len(files) > MAX_FILES:
                raise SkillFolderError(
                    f"{root}: more than {MAX_FILES} files beside {SKILL_FILE}; a skill's folder "
                    "travels to every host it runs on, so keep only what the skill uses"
                )
    if total > MAX_FOLDER_BYTES:
        raise SkillFolderError(_too_large(root))
    return SkillFolder(root, tuple(files)) if files else None


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
                [(f.path, f.data, f.executable) for f in folder.files],
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
    base, sent = placed
    return PlacedFolder(base, files, folder.size, "uploaded" if sent else "reused")


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
