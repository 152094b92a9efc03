"""Remote knowledge (docs/protocol.md, The system prompt): the host's ai_system_promt.md, if any."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kosmos.hosts.own import read_first_own
from kosmos.hosts.runner import FileUnreadable, ReadTimeout, Runner

# The seed spells the file `promt`, and kosmos-panel hosts have it under that name; the name
# spelled right is read too (after the seed's, in the same folder), rather than ignored.
KNOWLEDGE_PATHS = (
    "./.kosmos-panel/ai_system_promt.md",
    "./.kosmos-panel/ai_system_prompt.md",
    "~/.config/kosmos-panel/ai_system_promt.md",
    "~/.config/kosmos-panel/ai_system_prompt.md",
)


@dataclass(frozen=True)
class Knowledge:
    path: str
    text: str


class KnowledgeTimeout(Exception):
    def __init__(self, path: str, timeout: float) -> None:
        super().__init__(f"reading {path} took longer than {timeout:g} s")
        self.path = path


async def load_knowledge(
    runner: Runner,
    *,
    timeout: float,
    on_skip: Callable[[FileUnreadable], None] | None = None,
) -> Knowledge | None:
    """The first knowledge file found on the host, or None; a slow read raises KnowledgeTimeout.

    A file that is there but cannot be read is passed over as a missing one is (the next path
    is tried), and `on_skip` hears which file it was and why.
    """
    paths: tuple[str, ...] = KNOWLEDGE_PATHS
    while paths:
        try:
            found = await read_first_own(runner, paths, purpose="knowledge", timeout=timeout)
        except ReadTimeout as e:
            raise KnowledgeTimeout(e.path, timeout) from e
        except FileUnreadable as e:
            if on_skip is not None:
                on_skip(e)
            paths = paths[paths.index(e.path) + 1 :] if e.path in paths else ()
            continue
        return Knowledge(*found) if found is not None else None
    return None
