"""--canary: the LLM drives one host; the others replay its run without calling the LLM.

A replayed host gets the canary's replies in order from a `CanaryProvider` and the canary's
answers from a `CanaryOperator`; its commands still run for real, and still pass its own
approval policy. As soon as one of its commands ends differently from the canary's (another
exit status, a timeout, a skip, an edit), the host diverges: from then on its requests go
to the real LLM, which sees the whole conversation so far with this host's own outputs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kosmos.engine.operator import Approval, CommandProposal, Operator, Question
from kosmos.errors import KosmosError, UsageError
from kosmos.events import (
    Answer,
    CommandDecision,
    CommandFinished,
    Event,
    LLMReply,
    Message,
    Notice,
    RunFinished,
    RunStarted,
)
from kosmos.llm.provider import Provider, Reply


@dataclass(frozen=True)
class RecordedCommand:
    command: str
    exit_code: int | None
    timed_out: bool = False


@dataclass
class CanaryRecord:
    """What the canary's LLM said and what its commands did, in order."""

    host: str
    replies: list[Reply] = field(default_factory=list)
    commands: list[RecordedCommand] = field(default_factory=list)
    answers: list[str | None] = field(default_factory=list)

    def observe(self, event: Event) -> None:
        """Feed every event of the canary's session, in order."""
        if isinstance(event, LLMReply):
            # Text and tool calls alike: the replay serves every step protocol.
            self.replies.append(
                Reply(
                    text=event.content,
                    tool_calls=list(event.tool_calls),
                    finish_reason=event.finish_reason,
                )
            )
        elif isinstance(event, CommandFinished):
            self.commands.append(
                RecordedCommand(event.command, event.exit_code, event.timed_out or event.cancelled)
            )
        elif isinstance(event, Answer):
            self.answers.append(event.answer)

    @classmethod
    def from_transcript(cls, events: Sequence[Event], source: str, skill: str) -> CanaryRecord:
        """`--canary-from`: the record of a finished run of `skill` on one host, from its
        transcript; UsageError (exit 2) for anything else."""
        starts = [e for e in events if isinstance(e, RunStarted)]
        if not starts:
            raise UsageError(f"--canary-from {source}: no run_started event; is it a transcript?")
        if starts[0].skill != skill:
            raise UsageError(
                f"--canary-from {source}: a run of {starts[0].skill!r}, not {skill!r}; give a "
                f"transcript of {skill}"
            )
        if len(starts) > 1:
            raise UsageError(
                f"--canary-from {source}: the run was resumed, so it cannot be replayed from "
                "its start; give a run that went through in one go"
            )
        ends = [e for e in events if isinstance(e, RunFinished)]
        status = ends[-1].status if ends else "unfinished"
        if status != "done":
            raise UsageError(
                f"--canary-from {source}: that run ended {status}, not done; give a transcript "
                "of a run that finished"
            )
        record = cls(starts[0].host or "canary")
        for event in events:
            record.observe(event)
        return record


class Replay:
    """One host's replay of a canary record, and the moment it stopped following it."""

    def __init__(
        self,
        record: CanaryRecord,
        provider: Provider,
        operator: Operator,
        emit: Callable[[Event], None],
    ) -> None:
        self.record = record
        self.real_provider = provider
        self.real_operator = operator
        self._emit = emit
        self.diverged_at: int | None = None
        self._replies = 0
        self._commands = 0
        self._answers = 0
        self.provider = CanaryProvider(self)
        self.operator = CanaryOperator(self)

    @property
    def following(self) -> bool:
        return self.diverged_at is None

    def diverge(self, step: int, why: str) -> None:
        if self.diverged_at is not None:
            return
        self.diverged_at = step
        self._emit(
            Notice(message=f"step {step}: {why}; this host continues with its own LLM session")
        )

    def observe(self, event: Event) -> None:
        """Feed every event of this host's session: a command that ends differently diverges."""
        if not self.following:
            return
        if isinstance(event, CommandDecision):
            expected = self._expected()
            if event.decision not in ("run", "edit"):
                self.diverge(event.step, f"`{event.command}` was not run here ({event.decision})")
            elif expected is None or event.command != expected.command:
                self.diverge(event.step, f"`{event.command}` differs from the canary's command")
        elif isinstance(event, CommandFinished):
            expected = self._expected()
            self._commands += 1
            if expected is None:
                return
            mine = (event.exit_code, event.timed_out or event.cancelled)
            theirs = (expected.exit_code, expected.timed_out)
            if mine != theirs:
                self.diverge(
                    event.step,
                    f"`{event.command}` ended with {_status(*mine)} here and "
                    f"{_status(*theirs)} on the canary {self.record.host}",
                )

    def _expected(self) -> RecordedCommand | None:
        if self._commands < len(self.record.commands):
            return self.record.commands[self._commands]
        return None

    def next_reply(self) -> Reply | None:
        if not self.following or self._replies >= len(self.record.replies):
            return None
        reply = self.record.replies[self._replies]
        self._replies += 1
        return reply

    def next_answer(self) -> tuple[bool, str | None]:
        if not self.following or self._answers >= len(self.record.answers):
            return False, None
        value = self.record.answers[self._answers]
        self._answers += 1
        return True, value


def _status(exit_code: int | None, timed_out: bool) -> str:
    if timed_out:
        return "a timeout"
    return "an unknown status" if exit_code is None else f"exit {exit_code}"


class CanaryProvider:
    """The canary's replies while the host follows it; the real LLM after it diverges."""

    name = "replay"

    def __init__(self, replay: Replay) -> None:
        self.replay = replay
        self.model = replay.real_provider.model
        self.base_url = replay.real_provider.base_url

    @property
    def capabilities(self) -> Any:
        return self.replay.real_provider.capabilities

    async def complete(self, messages: Sequence[Message], **kwargs: Any) -> Reply:
        reply = self.replay.next_reply()
        if reply is not None:
            return reply
        if self.replay.following:
            # The canary's replies ran out without a [DONE] (cannot happen for a done run).
            self.replay.diverge(0, "the canary's replies ran out")
        return await self.replay.real_provider.complete(messages, **kwargs)

    async def aclose(self) -> None:
        return None


class CanaryOperator:
    """Answers questions as the canary's operator did; approvals stay with this host's own."""

    def __init__(self, replay: Replay) -> None:
        self.replay = replay

    async def approve(self, proposal: CommandProposal) -> Approval:
        return await self.replay.real_operator.approve(proposal)

    async def answer(self, question: Question) -> str | None:
        known, value = self.replay.next_answer()
        if known:
            return value
        return await self.replay.real_operator.answer(question)

    async def retry(self, error: KosmosError) -> bool:
        return await self.replay.real_operator.retry(error)

    async def ask_secret(self, prompt: str) -> str | None:
        return await self.replay.real_operator.ask_secret(prompt)
