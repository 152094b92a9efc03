"""A host's own skills for `kosmos skills list --host` and `kosmos skills show --host`."""

from __future__ import annotations

import asyncio
import sys

from kosmos.config import Settings
from kosmos.errors import SkillNotFound
from kosmos.hosts.factory import make_runner
from kosmos.hosts.local import LocalRunner
from kosmos.hosts.runner import Runner
from kosmos.skills.discovery import (
    REMOTE_SKILLS_DIR,
    SOURCE_REMOTE,
    find_remote_skill,
    list_remote_skills,
)
from kosmos.skills.model import Skill


def remote_skill_rows(host: str, settings: Settings) -> list[tuple[str, str, str]]:
    """(name, description, source) for each skill in the host's skills folder."""
    return asyncio.run(_rows(host, settings))


async def _rows(host: str, settings: Settings) -> list[tuple[str, str, str]]:
    runner = make_runner(host, settings)
    errors: list[str] = []
    try:
        await runner.connect()
        try:
            skills = await list_remote_skills(
                runner, timeout=settings.remote_skill_timeout, errors=errors
            )
        except TimeoutError:
            print(
                f"warning: {runner.name} did not list {REMOTE_SKILLS_DIR} within "
                f"{settings.remote_skill_timeout:g} s",
                file=sys.stderr,
            )
            skills = []
    finally:
        await runner.close()
    for problem in errors:
        print(f"warning: {runner.name}: {problem}", file=sys.stderr)
    label = _label(runner)
    return [(s.name, s.summary, label) for s in skills]


def _label(runner: Runner) -> str:
    """How `skills list` and `skills show` mark a host's skill: `remote HOST`."""
    return SOURCE_REMOTE if isinstance(runner, LocalRunner) else f"{SOURCE_REMOTE} {runner.name}"


def remote_skill(host: str, name: str, settings: Settings) -> Skill:
    """One skill from the host's skills folder; SkillNotFound when it has none of that name."""
    return asyncio.run(_one(host, name, settings))


async def _one(host: str, name: str, settings: Settings) -> Skill:
    runner = make_runner(host, settings)
    try:
        await runner.connect()
        try:
            skill = await find_remote_skill(runner, name, timeout=settings.remote_skill_timeout)
        except TimeoutError:
            skill = None
    finally:
        await runner.close()
    if skill is None:
        raise SkillNotFound(
            f"unknown skill '{name}', here or in {REMOTE_SKILLS_DIR} on {runner.name}; "
            f"kosmos skills list --host {host} shows all"
        )
    return skill.model_copy(update={"source": _label(runner)})
