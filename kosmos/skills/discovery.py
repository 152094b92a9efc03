"""Where skills are found: local roots in a fixed order (first match wins), then the host."""

from __future__ import annotations

import asyncio
import builtins
import difflib
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from kosmos.errors import SkillError, SkillNotFound
from kosmos.hosts.own import read_own, run_own
from kosmos.hosts.runner import FileUnreadable, Runner
from kosmos.resources import bundled_skills_dir
from kosmos.skills.loader import load_skill_file, opens_with_frontmatter, parse_skill
from kosmos.skills.model import Skill

SKILL_FILE = "SKILL.md"

# Source labels, as `kosmos skills list` shows them.
SOURCE_FLAG = "--skills-dir"
SOURCE_PROJECT = "project (.kosmos/skills)"
SOURCE_PROJECT_PANEL = "project (.kosmos-panel/skills)"
SOURCE_USER = "user"
SOURCE_BUNDLED = "bundled"
SOURCE_PATH = "path"
SOURCE_REMOTE = "remote"

# kosmos-panel keeps a host's own skills here; kosmos looks there too (kosmos.runs.skills).
REMOTE_SKILLS_DIR = "~/.config/kosmos-panel/skills"

# Deep enough for kosmos-panel's category folders (`OLD_PROJ/lin/x/SKILL.md`), shallow enough
# that a root pointed at a big tree by mistake stays quick.
MAX_DEPTH = 6

_REMOTE_NAME = re.compile(r"^[\w.-]+(/[\w.-]+)*$")


@dataclass(frozen=True)
class SkillSource:
    """One root searched for skills, with the label shown for the skills found in it."""

    path: Path
    label: str


@dataclass(frozen=True)
class _Entry:
    """A SKILL.md found under a root: loaded, or the error that stopped it loading."""

    file: Path
    ref: str
    folder: str
    source: SkillSource
    skill: Skill | None
    error: SkillError | None


class SkillLibrary:
    """The local skills: every SKILL.md under each root, searched recursively.

    A skill is referred to by its frontmatter `name`, its folder path relative to the root
    (`win/git-quick-commit`) or its folder name; a name wins over a path, a path over a folder,
    and within each an earlier root over a later one. Files are read on first use and kept for
    the life of the object; `refresh()` forgets them.
    """

    def __init__(self, roots: Sequence[tuple[Path, str]], *, cwd: Path | None = None) -> None:
        self.roots = [SkillSource(Path(path), label) for path, label in roots]
        self.cwd = cwd
        self.errors: list[str] = []
        self.shadowed: list[Skill] = []
        self._entries: list[_Entry] | None = None

    @classmethod
    def default(cls, cwd: Path, user_dir: Path, extra_dirs: Sequence[Path] = ()) -> SkillLibrary:
        """The order: each `--skills-dir`, `./.kosmos/skills`, `./.kosmos-panel/skills`,
        `user_dir` (the user's skills folder, `~/.config/kosmos/skills`), then the bundled skills.
        """
        roots = [(cwd / Path(d).expanduser(), SOURCE_FLAG) for d in extra_dirs]
        roots += [
            (cwd / ".kosmos" / "skills", SOURCE_PROJECT),
            (cwd / ".kosmos-panel" / "skills", SOURCE_PROJECT_PANEL),
            (user_dir, SOURCE_USER),
            (bundled_skills_dir(), SOURCE_BUNDLED),
        ]
        return cls(roots, cwd=cwd)

    def refresh(self) -> None:
        """Read the roots again on next use (after skills were added or edited)."""
        self._entries = None

    def list(self) -> list[Skill]:
        """Every skill that loads, first root winning for a name; see `errors` and `shadowed`."""
        seen: set[str] = set()
        skills: list[Skill] = []
        self.shadowed = []
        for entry in self._scan():
            if entry.skill is None:
                continue
            if entry.skill.name in seen:
                self.shadowed.append(entry.skill)
                continue
            seen.add(entry.skill.name)
            skills.append(entry.skill)
        return skills

    def find(self, ref: str) -> Skill:
        """The skill `ref` names, or the SKILL.md (or its folder) at path `ref`.

        Raises SkillNotFound with the closest names, or the SkillError of a broken file `ref`
        points at. The caller tries the target host's skills after a SkillNotFound.
        """
        empty_folder = None
        if _looks_like_path(ref):
            skill, empty_folder = self._load_path(ref)
            if skill is not None:
                return skill
        wanted = ref.strip().strip("/")
        if self._entries is None:
            # The first skill of that name wins wherever it is, so the files after it need not
            # be read (a run finds its skill without loading the whole library). Without one,
            # the files read are the whole library, kept as a scan would keep them.
            read: builtins.list[_Entry] = []
            for entry in self._read():
                if entry.skill is not None and entry.skill.name == wanted:
                    return entry.skill
                read.append(entry)
            self._keep(read)
        entries = self._scan()
        tiers = (
            [e for e in entries if e.skill is not None and e.skill.name == wanted],
            [e for e in entries if e.ref == wanted],
            [e for e in entries if e.folder == wanted],
        )
        for tier in tiers:
            if tier:
                entry = tier[0]
                if entry.error is not None:
                    raise entry.error
                assert entry.skill is not None
                return entry.skill
        if empty_folder is not None:
            raise SkillNotFound(
                f"{empty_folder}: this folder has no {SKILL_FILE}; pass a skill's folder or file"
            )
        if _plainly_a_path(ref):
            raise SkillNotFound(
                f"{ref}: no such file or folder; check the path, or name a skill "
                "(kosmos skills list shows all)"
            )
        here = self._folder_here(ref)
        if here is not None:
            raise SkillNotFound(
                f"unknown skill '{ref}'; {here}/{SKILL_FILE} is here: to run it, "
                f"pass its path: kosmos run {here}"
            )
        raise SkillNotFound(_not_found(ref, entries))

    def _folder_here(self, ref: str) -> str | None:
        """`./ref` when the working directory holds `ref/SKILL.md`: the operator most likely
        meant that folder, which only a path (not a bare name) reaches."""
        if self.cwd is None or _looks_like_path(ref) or not ref.strip():
            return None
        return f"./{ref}" if (self.cwd / ref / SKILL_FILE).is_file() else None

    # `builtins.list`: inside this class `list` is the method above.
    def _scan(self) -> builtins.list[_Entry]:
        if self._entries is not None:
            return self._entries
        return self._keep(list(self._read()))

    def _keep(self, entries: builtins.list[_Entry]) -> builtins.list[_Entry]:
        self._entries = entries
        self.errors = [str(e.error) for e in entries if e.error is not None]
        return entries

    def _read(self) -> Iterator[_Entry]:
        """Every SKILL.md of every root, in order, loaded as it is reached."""
        for source in self.roots:
            for file in _skill_files(source.path):
                folder_path = file.parent.relative_to(source.path).as_posix()
                folder = file.parent.name
                ref = folder if folder_path == "." else folder_path
                try:
                    skill = load_skill_file(file, source.label, ref=ref)
                except SkillError as e:
                    yield _Entry(file, ref, folder, source, None, e)
                else:
                    yield _Entry(file, ref, folder, source, skill, None)

    def _load_path(self, ref: str) -> tuple[Skill | None, Path | None]:
        """The skill at path `ref`; else None and, when `ref` is a folder, that folder."""
        path = Path(ref).expanduser()
        if not path.is_absolute() and self.cwd is not None:
            path = self.cwd / path
        if path.is_dir():
            if not (path / SKILL_FILE).is_file():
                return None, path
            path = path / SKILL_FILE
        if not path.is_file():
            return None, None
        if path.name != SKILL_FILE and not _skill_text(path):
            raise SkillError(
                f"{path}: not a skill file: a skill is a {SKILL_FILE}, or a Markdown file that "
                "opens with a --- frontmatter block giving its name; pass one, or its folder"
            )
        return load_skill_file(path, SOURCE_PATH), None


def _skill_text(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            return opens_with_frontmatter(f.read(64 * 1024))
    except OSError:
        return True  # load_skill_file says why it cannot be read


def _looks_like_path(ref: str) -> bool:
    return "/" in ref or os.sep in ref or ref.endswith(".md") or ref.startswith(("~", "."))


def _plainly_a_path(ref: str) -> bool:
    """A ref no skill name could be (`./x`, `/x`, `~/x`, `x.md`); `lin/x` may be a skill's
    folder in a library, so it is not."""
    return ref.endswith(".md") or ref.startswith(("/", "./", "../", "~"))


def _skill_files(root: Path) -> Iterator[Path]:
    """SKILL.md files under `root` in a stable order, following symlinked folders once."""
    if not root.is_dir():
        return
    visited: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        real = os.path.realpath(dirpath)
        depth = len(Path(dirpath).relative_to(root).parts)
        if real in visited or depth > MAX_DEPTH:
            dirnames[:] = []
            continue
        visited.add(real)
        # Hidden folders (.git) and dependency trees hold no skills.
        dirnames[:] = sorted(
            d
            for d in dirnames
            if not d.startswith(".") and d not in ("node_modules", "__pycache__")
        )
        if SKILL_FILE in filenames:
            yield Path(dirpath) / SKILL_FILE


def _not_found(ref: str, entries: Sequence[_Entry]) -> str:
    names: list[str] = []
    for entry in entries:
        for candidate in (entry.skill.name if entry.skill else None, entry.ref):
            if candidate and candidate not in names:
                names.append(candidate)
    close = difflib.get_close_matches(ref, names, n=3, cutoff=0.6)
    if close:
        hint = ", ".join(close)
        return f"unknown skill '{ref}'; did you mean: {hint}? (kosmos skills list shows all)"
    return f"unknown skill '{ref}'; kosmos skills list shows all, or pass a path to a SKILL.md"


async def find_remote_skill(runner: Runner, name: str, *, timeout: float) -> Skill | None:
    """`~/.config/kosmos-panel/skills/<name>/SKILL.md` on the runner's host, None if absent.

    `name` may be a nested folder path (`lin/deploy`); a name that could leave the skills folder
    (`..`, absolute) is never read and gives None. A timeout raises TimeoutError from the
    runner: whether that means "no such skill" is the caller's decision. A file that is there
    but broken raises SkillError; one that cannot be read (too large) raises FileUnreadable.
    """
    name = name.strip().strip("/")
    if not _REMOTE_NAME.match(name) or ".." in name.split("/"):
        return None
    path = f"{REMOTE_SKILLS_DIR}/{name}/{SKILL_FILE}"
    text = await read_own(runner, path, purpose="host skills", timeout=timeout)
    if text is None:
        return None
    return parse_skill(
        text, path=path, fallback_name=name.rsplit("/", 1)[-1], source=SOURCE_REMOTE, ref=name
    )


async def list_remote_skills(
    runner: Runner, *, timeout: float, errors: list[str] | None = None
) -> list[Skill]:
    """Every SKILL.md under `~/.config/kosmos-panel/skills` on the runner's host (4 levels deep).

    `timeout` bounds the whole listing; past it TimeoutError propagates. A broken or unreadable
    file is reported into `errors` when given (the others still load), else its SkillError or
    FileUnreadable is raised.
    """
    command = f"find {REMOTE_SKILLS_DIR} -maxdepth 4 -name {SKILL_FILE} 2>/dev/null"
    skills: list[Skill] = []
    async with asyncio.timeout(timeout):
        result = await run_own(runner, command, purpose="host skills", timeout=timeout)
        if result.timed_out:
            raise TimeoutError(f"{runner.name}: listing {REMOTE_SKILLS_DIR} timed out")
        paths = sorted(
            line.strip()
            for line in result.output.text().splitlines()
            if line.strip().endswith("/" + SKILL_FILE)
        )
        for path in paths:
            try:
                text = await read_own(runner, path, purpose="host skills", timeout=timeout)
            except FileUnreadable as e:
                if errors is None:
                    raise
                errors.append(str(e))
                continue
            if text is None:  # removed since `find` saw it
                continue
            ref = _remote_ref(path)
            try:
                skill = parse_skill(
                    text,
                    path=path,
                    fallback_name=ref.rsplit("/", 1)[-1],
                    source=SOURCE_REMOTE,
                    ref=ref,
                )
            except SkillError as e:
                if errors is None:
                    raise
                errors.append(str(e))
                continue
            skills.append(skill)
    return skills


def _remote_ref(path: str) -> str:
    """`/home/u/.config/kosmos-panel/skills/lin/x/SKILL.md` -> `lin/x`."""
    folder = path.rsplit("/", 1)[0]
    marker = "/.config/kosmos-panel/skills/"
    if marker in folder:
        return folder.split(marker, 1)[1]
    return folder.rsplit("/", 1)[-1]
