"""Replay a recorded run: the LLM's replies and the operator's decisions come from a transcript.

`kosmos run SKILL --replay TRANSCRIPT` runs the commands for real and checks a skill against a
new host with no LLM at all. Before serving each recorded reply, `ReplayProvider` compares
what the run would send the LLM (the new command output, answer or notice) with what the
recording sent at the same point; a difference stops the run (exit 1), or with `tolerant`
is only reported.

A recording of a resumed run holds steps whose command started and whose result was lost
(kosmos killed mid-command); the resumed run then refused it (headless) or asked the
operator. `ReplayGate` replays that decision: such a command runs again only if the resumed
run ran it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from kosmos.engine.approval import ApprovalGate, Decision
from kosmos.engine.operator import Approval, CommandProposal, Operator, Question
from kosmos.errors import KosmosError, RunFailed, UsageError
from kosmos.events import (
    Answer,
    CommandDecision,
    CommandFinished,
    CommandStarted,
    Event,
    FileRead,
    LLMReply,
    LLMRequest,
    MemoryAction,
    Message,
    RunStarted,
)
from kosmos.llm.provider import Capabilities, Reply, ResponseFormat, ToolSpec
from kosmos.safety import assess


class ReplayMismatch(RunFailed):
    """The new run sent something other than the recording at the same step."""


@dataclass
class Recording:
    """What a transcript holds for a replay: each request with its reply, decisions, answers."""

    source: str
    started: RunStarted
    exchanges: list[tuple[LLMRequest, LLMReply]] = field(default_factory=list)
    decisions: dict[int, CommandDecision] = field(default_factory=dict)
    answers: dict[int, Answer] = field(default_factory=dict)
    # Steps whose command started and whose result was never recorded; `decisions` holds
    # what the resumed run decided about them (the last decision of a step wins).
    interrupted: set[int] = field(default_factory=set)
    # [GET-FILE] and memory steps: whether each was allowed (done or failed) or skipped.
    actions: dict[int, FileRead | MemoryAction] = field(default_factory=dict)

    @classmethod
    def from_events(cls, events: Sequence[Event], source: str) -> Recording:
        starts = [e for e in events if isinstance(e, RunStarted)]
        if not starts:
            raise UsageError(f"{source}: no run_started event; is it a kosmos transcript?")
        rec = cls(source, starts[0])
        request: LLMRequest | None = None
        running: set[int] = set()  # started in this segment, not finished yet
        for e in events:
            if isinstance(e, RunStarted):
                rec.interrupted |= running
                running = set()
            elif isinstance(e, CommandStarted):
                running.add(e.step)
            elif isinstance(e, CommandFinished):
                running.discard(e.step)
            elif isinstance(e, LLMRequest):
                request = e
            elif isinstance(e, LLMReply) and request is not None:
                rec.exchanges.append((request, e))
                request = None
            elif isinstance(e, CommandDecision):
                rec.decisions[e.step] = e
            elif isinstance(e, Answer):
                rec.answers[e.step] = e
            elif isinstance(e, FileRead | MemoryAction):
                rec.actions[e.step] = e
        if not rec.exchanges:
            raise UsageError(f"{source}: the recording holds no LLM reply to replay")
        return rec


def _first_difference(old: str, new: str) -> str:
    a, b = old.splitlines(), new.splitlines()
    if a[:1] == b[:1] == ["Command output:"]:
        a, b = a[1:], b[1:]  # number the lines of the output itself
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return f"line {i + 1}: recorded {x[:80]!r}, now {y[:80]!r}"
    if len(a) != len(b):
        return f"recorded {len(a)} lines, now {len(b)}"
    return "whitespace differs"


def _what(content: str) -> str:
    head = content.split("\n", 1)[0]
    if head.startswith("Command output"):
        return "the command output"
    if head.startswith("User response"):
        return "the answer"
    return "the message to the LLM"


class ReplayProvider:
    """A Provider that serves a recording's replies in order and checks what it is sent."""

    name = "replay"

    def __init__(self, recording: Recording, *, tolerant: bool = False) -> None:
        self.recording = recording
        self.tolerant = tolerant
        self.model = recording.started.model
        self.base_url = f"replay:{recording.source}"
        self.capabilities = Capabilities()
        self.differences: list[str] = []
        self.warn: Callable[[str], None] = lambda message: None
        self._next = 0

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
        if self._next >= len(self.recording.exchanges):
            raise ReplayMismatch(
                f"replay: the recording has no reply for step {self._step(messages)}; "
                "the skill took another path than when it was recorded"
            )
        request, reply = self.recording.exchanges[self._next]
        self._next += 1
        self._compare(request, messages)
        return Reply(
            text=reply.content,
            tool_calls=list(reply.tool_calls),
            finish_reason=reply.finish_reason,
            usage=reply.usage,
        )

    def _step(self, messages: Sequence[Message]) -> int:
        if self._next < len(self.recording.exchanges):
            return self.recording.exchanges[self._next][0].step
        return len([m for m in messages if m.role == "assistant"]) + 1

    def _compare(self, request: LLMRequest, messages: Sequence[Message]) -> None:
        recorded = [m for m in request.new_messages if m.role in ("system", "user")]
        if not recorded or not messages:
            return
        pairs = [(recorded[-1], messages[-1])]
        if recorded[0].role == "system" and messages[0].role == "system":
            pairs.insert(0, (recorded[0], messages[0]))
        for old, new in pairs:
            if old.content == new.content:
                continue
            what = "the system prompt" if old.role == "system" else _what(old.content)
            detail = _first_difference(old.content, new.content)
            # A later request carries the result of the previous step's directive.
            step = request.step if old.role == "system" or request.step == 1 else request.step - 1
            text = f"replay: step {step}: {what} differs from the recording ({detail})"
            self.differences.append(text)
            if not self.tolerant:
                raise ReplayMismatch(f"{text}; pass --replay-tolerant to only warn")
            self.warn(text)

    async def aclose(self) -> None:
        return None


class ReplayOperator:
    """Answers as the recorded operator did; what the recording lacks goes to `inner`.

    A dangerous command always goes to `inner`: a confirmation typed for another host or
    another day does not count.
    """

    def __init__(self, recording: Recording, inner: Operator) -> None:
        self.recording = recording
        self.inner = inner

    async def approve(self, proposal: CommandProposal) -> Approval:
        if proposal.kind != "command":
            return await self._allow(proposal)
        recorded = self.recording.decisions.get(proposal.step)
        if (
            proposal.risk == "dangerous"
            or recorded is None
            or recorded.proposed != proposal.command
            or recorded.decision == "refused"
        ):
            return await self.inner.approve(proposal)
        if recorded.decision == "skip":
            return Approval("skip", by="replay")
        if recorded.decision == "edit":
            return Approval("edit", recorded.command, by="replay")
        return Approval("run", by="replay")

    async def _allow(self, proposal: CommandProposal) -> Approval:
        """A file read or memory write as the recorded operator allowed it (or not)."""
        recorded = self.recording.actions.get(proposal.step)
        target = recorded.path if isinstance(recorded, FileRead) else getattr(recorded, "name", "")
        if (
            recorded is None
            or recorded.by != "operator"
            or recorded.status == "refused"
            or target not in proposal.command
        ):
            return await self.inner.approve(proposal)
        return Approval("skip" if recorded.status == "skipped" else "run", by="replay")

    async def answer(self, question: Question) -> str | None:
        recorded = self.recording.answers.get(question.step)
        if recorded is None or recorded.question != question.text:
            return await self.inner.answer(question)
        return recorded.answer

    async def retry(self, error: KosmosError) -> bool:
        return await self.inner.retry(error)

    async def ask_secret(self, prompt: str) -> str | None:
        return await self.inner.ask_secret(prompt)


class ReplayGate(ApprovalGate):
    """The approval gate of a replay: a command the recording lost to an interruption gets
    the decision the resumed run took, whatever the policy.

    A refusal is repeated with the recorded text; a run, skip or edit is taken from the
    operator (`ReplayOperator` answers as recorded). A dangerous one is judged as ever.
    """

    def __init__(self, recording: Recording, gate: ApprovalGate) -> None:
        super().__init__(
            gate.operator,
            gate.prompts,
            host=gate.host,
            policy=gate.policy,
            non_interactive=gate.non_interactive,
            allow_dangerous=gate.allow_dangerous,
            shell=gate.shell,
            host_lock=gate.host_lock,
        )
        self.recording = recording

    async def decide(
        self, step: int, command: str, *, inferred: bool = False, rerun: bool = False
    ) -> Decision:
        recorded = self.recording.decisions.get(step)
        if (
            step not in self.recording.interrupted
            or recorded is None
            or recorded.proposed != command
        ):
            return await super().decide(step, command, inferred=inferred, rerun=rerun)
        verdict = assess(command, self.shell())
        if recorded.decision == "refused":
            return Decision("refused", command, "replay", verdict.verdict, recorded.reason)
        if verdict.verdict == "dangerous":
            return await super().decide(step, command, inferred=inferred, rerun=True)
        return await self._ask(step, command, verdict.verdict, verdict.reason, inferred)
