"""The Operator seam answered from widgets: the engine awaits, a widget decides."""

from __future__ import annotations

import asyncio
from typing import Any

from textual.message import Message
from textual.message_pump import MessagePump

from kosmos.engine.operator import Approval, CommandProposal, Question
from kosmos.errors import HostError, KosmosError
from kosmos.hosts.runner import HostPrompter
from kosmos.safety import Redactor
from kosmos.tui.messages import ApprovalNeeded, QuestionNeeded, RetryNeeded


class TuiOperator:
    """One run's operator: each question is posted to the run view and awaited on a future."""

    def __init__(
        self, view: MessagePump, prompter: HostPrompter, redactor: Redactor | None = None
    ) -> None:
        self.view = view
        self.prompter = prompter
        self.redactor = redactor or Redactor()
        self._pending: asyncio.Future[Any] | None = None

    @property
    def waiting(self) -> bool:
        """True while the run waits for the operator (an approval, an answer, a retry)."""
        return self._pending is not None and not self._pending.done()

    def resolve(self, value: Any) -> bool:
        """Give the awaited answer; False if nothing was awaited."""
        if not self.waiting:
            return False
        assert self._pending is not None
        self._pending.set_result(value)
        return True

    async def _ask(self, message: Message) -> Any:
        self._pending = asyncio.get_running_loop().create_future()
        self.view.post_message(message)
        try:
            return await self._pending
        finally:
            self._pending = None

    async def approve(self, proposal: CommandProposal) -> Approval:
        return await self._ask(ApprovalNeeded(proposal))

    async def answer(self, question: Question) -> str | None:
        return await self._ask(QuestionNeeded(question))

    async def retry(self, error: KosmosError) -> bool:
        kind = "host" if isinstance(error, HostError) else "LLM"
        return bool(await self._ask(RetryNeeded(self.redactor(str(error)), kind)))

    async def retry_connect(self, error: KosmosError) -> bool:
        """Connecting to the run's host failed: True tries again."""
        return bool(await self._ask(RetryNeeded(self.redactor(str(error)), "connection")))

    async def ask_secret(self, prompt: str) -> str | None:
        return await self.prompter.ask_secret(prompt)
