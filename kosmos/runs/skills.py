"""Which skill a run runs: the local library first, then the host's own skills folder.

Every front end finds skills here: `kosmos run`, `kosmos skills --host`, the TUI's sidebar
and the chat's tools. A host's own skills (`~/.config/kosmos-panel/skills`, where
kosmos-panel keeps them) count on every host, `local` included; a local skill of the same
name shadows one kept on the host.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kosmos.config import Settings, user_config_dir
from kosmos.errors import SkillNotFound
from kosmos.hosts.runner import Runner
from kosmos.skills.discovery import (
    REMOTE_SKILLS_DIR,
    SOURCE_REMOTE,
    SkillLibrary,
    find_remote_skill,
    list_remote_skills,
)
from kosmos.skills.model import Skill


def skill_library(
    settings: Settings, extra: Sequence[Path], env: Mapping[str, str], home: Path
) -> SkillLibrary:
    """The local skills: `--skills-dir` folders, the config's, the project's, the user's,
    the bundled ones (first match wins)."""
    dirs = [*extra, *settings.skills_dirs]
    return SkillLibrary.default(Path.cwd(), user_config_dir(dict(env), home) / "skills", dirs)


def host_label(host: str) -> str:
    """How a host's skill is marked where skills are listed: `remote HOST`."""
    return SOURCE_REMOTE if host == "local" else f"{SOURCE_REMOTE} {host}"


@dataclass(frozen=True)
class HostSkills:
    """What the host keeps in its skills folder, and what could not be read there."""

    host: str
    skills: list[Skill] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def names(self) -> str:
        return ", ".join(s.name for s in self.skills)


async def host_skills(runner: Runner, *, timeout: float) -> HostSkills:
    """The skills in the connected host's skills folder (their source: `remote`).

    A timeout or a broken file becomes a problem to show (the other skills still count); a
    host error propagates.
    """
    errors: list[str] = []
    try:
        skills = await list_remote_skills(runner, timeout=timeout, errors=errors)
    except TimeoutError:
        return HostSkills(
            runner.name,
            problems=[f"{runner.name} did not list {REMOTE_SKILLS_DIR} within {timeout:g} s"],
        )
    return HostSkills(runner.name, skills, [f"{runner.name}: {e}" for e in errors])


async def find_host_skill(runner: Runner, name: str, *, timeout: float) -> Skill:
    """One skill from the host's skills folder; SkillNotFound says it has none (or was slow)."""
    try:
        skill = await find_remote_skill(runner, name, timeout=timeout)
    except TimeoutError:
        skill = None
    if skill is None:
        raise SkillNotFound(
            f"unknown skill '{name}', here or in {REMOTE_SKILLS_DIR} on {runner.name}; "
            f"kosmos skills list --host {runner.name} shows all"
        )
    return skill


async def find_skill(library: SkillLibrary, ref: str, runner: Runner, *, timeout: float) -> Skill:
    """A local skill first; then the host's own. On `local` a miss says only what the library
    says: the folder on this machine is a last resort, not a place to send anyone."""
    try:
        return library.find(ref)
    except SkillNotFound as e:
        local_miss = e
    try:
        skill = await find_remote_skill(runner, ref, timeout=timeout)
    except TimeoutError:
        raise SkillNotFound(
            f"{local_miss}; {runner.name} did not answer within {timeout:g} s when kosmos "
            f"looked in {REMOTE_SKILLS_DIR}"
        ) from None
    if skill is not None:
        return skill
    if runner.name == "local":
        raise local_miss
    raise SkillNotFound(f"{local_miss}; {runner.name} has none in {REMOTE_SKILLS_DIR} either")
