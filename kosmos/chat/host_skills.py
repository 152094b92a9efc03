"""The target host's own skills (seed 001: remote skills), offered by the chat as tools."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from kosmos.chat.agent import ChatAgent
from kosmos.hosts.local import LocalRunner
from kosmos.hosts.runner import Runner
from kosmos.skills.discovery import REMOTE_SKILLS_DIR, list_remote_skills
from kosmos.skills.model import Skill


@dataclass(frozen=True)
class HostSkills:
    """What the host keeps in its skills folder, and what could not be read there."""

    host: str
    skills: list[Skill] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def names(self) -> str:
        return ", ".join(s.name for s in self.skills)


async def host_skills(runner: Runner, *, timeout: float) -> HostSkills:
    """The skills under ~/.config/kosmos-panel/skills on a connected remote host.

    None for `local` (as `kosmos run` looks there only on a remote host). A timeout or a broken
    file becomes a problem to show, the other skills still count; a host error propagates.
    """
    if isinstance(runner, LocalRunner):
        return HostSkills(runner.name)
    errors: list[str] = []
    try:
        skills = await list_remote_skills(runner, timeout=timeout, errors=errors)
    except TimeoutError:
        return HostSkills(
            runner.name,
            problems=[
                f"{runner.name} did not list {REMOTE_SKILLS_DIR} within {timeout:g} s; "
                "its skills are not offered"
            ],
        )
    return HostSkills(runner.name, skills, [f"{runner.name}: {e}" for e in errors])


def with_host_skills(local: Sequence[Skill], found: HostSkills) -> list[Skill]:
    """Local skills first: a local skill shadows the host's skill of the same name."""
    return [*local, *found.skills]


def offer(agent: ChatAgent, local: Sequence[Skill], found: HostSkills) -> None:
    """Make the host's skills tools of the agent next to the local ones; say so, log it."""
    agent.use_skills(with_host_skills(local, found))
    for problem in found.problems:
        agent.log.warning(f"host_skills // {problem}")
    if found.skills:
        agent.out.say(agent.t("host_skills", host=found.host, names=found.names()), "help")
        agent.log.info(f"host_skills // {found.host}: {found.names()}")
