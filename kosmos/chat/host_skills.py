"""The target host's own skills, offered by the chat as tools beside the local ones."""

from __future__ import annotations

from collections.abc import Sequence

from kosmos.chat.agent import ChatAgent
from kosmos.runs.skills import HostSkills
from kosmos.skills.model import Skill


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
