"""Step protocols: tags (seed 001, default), json (seed 004), tools (seed 003), auto."""

from __future__ import annotations

from kosmos.engine.protocols.auto import AutoProtocol
from kosmos.engine.protocols.base import ProtocolSwitched, StepProtocol, Turn
from kosmos.engine.protocols.json_steps import JsonProtocol, StepAction
from kosmos.engine.protocols.tags import TagsProtocol
from kosmos.engine.protocols.tools import STEP_TOOLS, ToolsProtocol
from kosmos.events import Emit
from kosmos.llm.provider import Provider
from kosmos.prompts import Prompts

PROTOCOLS = ("tags", "json", "tools", "auto")

__all__ = [
    "PROTOCOLS",
    "STEP_TOOLS",
    "AutoProtocol",
    "JsonProtocol",
    "ProtocolSwitched",
    "StepAction",
    "StepProtocol",
    "TagsProtocol",
    "ToolsProtocol",
    "Turn",
    "make_protocol",
]


def make_protocol(
    name: str, provider: Provider, prompts: Prompts, *, emit: Emit | None = None
) -> StepProtocol:
    """The step protocol called `name`, over `provider`."""
    if name == "json":
        return JsonProtocol(provider, prompts, emit=emit)
    if name == "tools":
        return ToolsProtocol(provider, prompts, emit=emit)
    if name == "auto":
        return AutoProtocol(provider, prompts, emit=emit)
    return TagsProtocol(provider, prompts)
