"""Step protocols (docs/protocol.md): tags (the default), json, tools, auto."""

from __future__ import annotations

from kosmos.engine.protocols.auto import AutoProtocol
from kosmos.engine.protocols.base import ProtocolSwitched, StepProtocol, Turn
from kosmos.engine.protocols.tags import TagsProtocol
from kosmos.engine.protocols.tools import MEMORY_TOOLS, STEP_TOOLS, ToolsProtocol
from kosmos.events import Emit
from kosmos.llm.provider import Provider
from kosmos.prompts import Prompts

PROTOCOLS = ("tags", "json", "tools", "auto")

__all__ = [
    "PROTOCOLS",
    "STEP_TOOLS",
    "AutoProtocol",
    "MEMORY_TOOLS",
    "ProtocolSwitched",
    "StepProtocol",
    "TagsProtocol",
    "ToolsProtocol",
    "Turn",
    "make_protocol",
]


def make_protocol(
    name: str,
    provider: Provider,
    prompts: Prompts,
    *,
    emit: Emit | None = None,
    memory: bool = False,
) -> StepProtocol:
    """The step protocol called `name`, over `provider`. `memory` (--memory): json and tools
    offer the [GET-FILE] and memory actions too (tags always understands them)."""
    if name == "json":
        # Imported here: its models and the structured client cost a run of another
        # protocol a few milliseconds of start-up for nothing.
        from kosmos.engine.protocols.json_steps import JsonProtocol

        return JsonProtocol(provider, prompts, emit=emit, memory=memory)
    if name == "tools":
        return ToolsProtocol(provider, prompts, emit=emit, memory=memory)
    if name == "auto":
        return AutoProtocol(provider, prompts, emit=emit, memory=memory)
    return TagsProtocol(provider, prompts)
