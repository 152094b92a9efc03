"""Remote knowledge (seed 001 section 3.2): the host's ai_system_promt.md, if it has one."""

from __future__ import annotations

from dataclasses import dataclass

from kosmos.hosts.runner import ReadTimeout, Runner

# seed 001: the file name is spelled `promt`; kosmos-panel hosts have it under that name.
KNOWLEDGE_PATHS = (
    "./.kosmos-panel/ai_system_promt.md",
    "~/.config/kosmos-panel/ai_system_promt.md",
)


@dataclass(frozen=True)
class Knowledge:
    path: str
    text: str


class KnowledgeTimeout(Exception):
    def __init__(self, path: str, timeout: float) -> None:
        super().__init__(f"reading {path} took longer than {timeout:g} s")
        self.path = path


async def load_knowledge(runner: Runner, *, timeout: float) -> Knowledge | None:
    """The first knowledge file found on the host, or None; a slow read raises KnowledgeTimeout."""
    try:
        found = await runner.read_first(KNOWLEDGE_PATHS, timeout=timeout)
    except ReadTimeout as e:
        raise KnowledgeTimeout(e.path, timeout) from e
    return Knowledge(*found) if found is not None else None
