"""The Provider seam and the one normalized reply every provider returns."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from msgspec import Struct
from msgspec import field as struct_field

from kosmos.errors import LLMError
from kosmos.events import Message, ToolCall

__all__ = [
    "Capabilities",
    "CapabilityRejected",
    "Capability",
    "Provider",
    "Reply",
    "ResponseFormat",
    "ToolCall",
    "ToolSpec",
    "rejected_capability",
]

Capability = Literal["json_schema", "tools", "json_mode"]


class Reply(Struct, kw_only=True):
    """What an LLM answered: text and/or tool calls (a multi-part reply keeps both)."""

    text: str = ""
    tool_calls: list[ToolCall] = []
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None


class ToolSpec(Struct, frozen=True, kw_only=True):
    """A function the LLM may call: name, description and a JSON schema for its arguments."""

    name: str
    description: str
    parameters: dict[str, Any] = struct_field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )


@dataclass(frozen=True)
class ResponseFormat:
    """Ask for JSON: `json_schema` (native, bound to `schema`) or `json_object` (JSON mode)."""

    kind: Literal["json_schema", "json_object"]
    schema: dict[str, Any] | None = None
    name: str = "response"
    # OpenAI's strict mode: every property required, no extra ones (the schema must say so).
    strict: bool = False


@dataclass
class Capabilities:
    """What the provider and model can do, from config; a rejected one stays off for the run."""

    json_schema: bool = True
    tools: bool = True
    json_mode: bool = True
    rejected: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, switches: Mapping[str, bool]) -> Capabilities:
        """The capabilities config switches on or off; one it does not name is on."""
        return cls(
            json_schema=switches.get("json_schema", True),
            tools=switches.get("tools", True),
            json_mode=switches.get("json_mode", True),
        )

    def has(self, capability: Capability) -> bool:
        return bool(getattr(self, capability)) and capability not in self.rejected

    def reject(self, capability: Capability, reason: str) -> None:
        self.rejected[capability] = reason


class CapabilityRejected(LLMError):
    """The server answered HTTP 400 about a capability kosmos used (response_format, tools)."""

    def __init__(self, capability: Capability, message: str) -> None:
        super().__init__(message)
        self.capability = capability


_FORMAT_WORDS = re.compile(
    r"response_?format|json_?schema|response_?(mime_?type|schema|json_?schema)|json mode"
    r"|structured output|guided",
    re.IGNORECASE,
)
_TOOL_WORDS = re.compile(r"\btools?\b|tool_choice|tool_config|function|tool call", re.IGNORECASE)


def rejected_capability(
    message: str, *, tools: bool, response_format: ResponseFormat | None
) -> Capability | None:
    """Which capability a 400 answer's text is about, among those the request used."""
    if response_format is not None and _FORMAT_WORDS.search(message):
        return "json_schema" if response_format.kind == "json_schema" else "json_mode"
    if tools and _TOOL_WORDS.search(message):
        return "tools"
    return None


class Provider(Protocol):
    name: str
    model: str
    base_url: str

    @property
    def capabilities(self) -> Capabilities:
        """What it can do; a capability the server rejects is marked on this object."""
        ...

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        on_retry: Callable[[int, str, float], None] | None = None,
        tools: Sequence[ToolSpec] | None = None,
        tool_choice: str | None = None,
        response_format: ResponseFormat | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> Reply:
        """One completion; retries (telling `on_retry`) and raises LLMError with what to do.

        With `tools` the LLM may call them (`tool_choice` names one it must call); with
        `response_format` it answers JSON. A 400 about either raises CapabilityRejected.
        """
        ...

    async def aclose(self) -> None: ...
