"""The step-protocol seam: how a session asks the LLM for a step and reads its reply."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from kosmos.engine.parser import Parsed
from kosmos.events import Message, ToolCall
from kosmos.llm.provider import Reply
from kosmos.prompts import SystemParts

OnRetry = Callable[[int, str, float], None]


@dataclass(frozen=True)
class Turn:
    """What a protocol made of one reply: a directive, or the problem that kept it from one."""

    reply: Reply
    parsed: Parsed | None
    problem: str | None = None
    # Text said beside the directive (a multi-part reply; an envelope's text).
    said: str = ""
    # The tool call behind the directive (tools protocol); the result answers it.
    call: ToolCall | None = None


class ProtocolSwitched(Exception):
    """The protocol changed mid-request (auto: the server refused tools); rebuild and resend."""


class StepProtocol(Protocol):
    """One way of running a skill's steps: tags, JSON actions or native function calls.

    Every protocol yields the same directives, events and `[Step N of M]` user texts; only
    the system prompt, the request and the shape of messages in the history differ.
    """

    @property
    def name(self) -> str: ...

    def system_prompt(self, parts: SystemParts) -> str: ...

    async def complete(
        self, messages: Sequence[Message], *, step: int, on_retry: OnRetry
    ) -> Reply: ...

    def parse(self, reply: Reply) -> Turn: ...

    def assistant_message(self, turn: Turn, command: str | None = None) -> Message:
        """The reply as kept in the history; `command` replaces an edited command."""
        ...

    def result_message(self, turn: Turn, content: str) -> Message:
        """The command output, answer or continue text that goes back for this turn."""
        ...

    def correction(self, turn: Turn, step: int, max_steps: int) -> list[Message]:
        """Messages that tell the LLM its reply was not a directive."""
        ...
