"""`auto`: native function calling where the provider can, else the tags."""

from __future__ import annotations

from collections.abc import Sequence

from kosmos.engine.protocols.base import OnRetry, ProtocolSwitched, Turn
from kosmos.engine.protocols.tags import TagsProtocol
from kosmos.engine.protocols.tools import ToolsProtocol
from kosmos.events import CapabilityFallback, Emit, Message
from kosmos.llm.provider import CapabilityRejected, Provider, Reply
from kosmos.prompts import Prompts, SystemParts


class AutoProtocol:
    """Starts with `tools` if the provider's capabilities allow; a 400 about tools switches to
    `tags` for the rest of the run (noted as a capability_fallback event)."""

    def __init__(
        self,
        provider: Provider,
        prompts: Prompts,
        *,
        emit: Emit | None = None,
        memory: bool = False,
    ) -> None:
        self.provider = provider
        self._emit = emit or (lambda event: None)
        self.tags = TagsProtocol(provider, prompts)
        self.tools = ToolsProtocol(provider, prompts, emit=emit, memory=memory)
        self.inner: TagsProtocol | ToolsProtocol = (
            self.tools if provider.capabilities.has("tools") else self.tags
        )

    @property
    def name(self) -> str:
        return self.inner.name

    def system_prompt(self, parts: SystemParts) -> str:
        return self.inner.system_prompt(parts)

    async def complete(self, messages: Sequence[Message], *, step: int, on_retry: OnRetry) -> Reply:
        if self.inner is self.tags:
            return await self.tags.complete(messages, step=step, on_retry=on_retry)
        try:
            return await self.provider.complete(
                messages, on_retry=on_retry, tools=self.tools.offered
            )
        except CapabilityRejected as e:
            if e.capability != "tools":
                raise
            self.provider.capabilities.reject("tools", str(e))
            self.inner = self.tags
            self._emit(CapabilityFallback(capability="tools", reason=str(e), next="tags"))
            raise ProtocolSwitched from e

    def parse(self, reply: Reply) -> Turn:
        return self.inner.parse(reply)

    def assistant_message(self, turn: Turn, command: str | None = None) -> Message:
        return self.inner.assistant_message(turn, command)

    def result_message(self, turn: Turn, content: str) -> Message:
        return self.inner.result_message(turn, content)

    def correction(self, turn: Turn, step: int, max_steps: int) -> list[Message]:
        return self.inner.correction(turn, step, max_steps)
