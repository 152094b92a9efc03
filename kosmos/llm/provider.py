"""The Provider seam and the one normalized reply every provider returns."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from pydantic import BaseModel, Field

from kosmos.events import Message


class ToolCall(BaseModel):
    id: str | None = None
    name: str
    args: dict[str, Any] = Field(default_factory=dict)


class Reply(BaseModel):
    """What an LLM answered: text and/or tool calls (a multi-part reply keeps both)."""

    text: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None


class Provider(Protocol):
    name: str
    model: str
    base_url: str

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        on_retry: Callable[[int, str, float], None] | None = None,
    ) -> Reply:
        """One chat completion; retries (telling `on_retry`) and raises LLMError with what to do."""
        ...

    async def aclose(self) -> None: ...
