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

The decisions themselves (`Decisions`) are replayed the same way for `--replay` and for a fleet
that follows its canary (`kosmos.fleet.canary`): a skip stays skipped and a refusal refused
whatever the policy says now, and an edit runs edited, judged here. A recorded yes stands only
where it was made for this run: for `--replay`, only for what this run judges read-only (it
then runs inside the kernel lock); every other command the recording ran, a person's yes or a
policy's there, is asked again here (headless: refused unless --yes), since the file may have
been edited and a yes given elsewhere covers nothing here. A dangerous command always needs a
person each time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from kosmos.engine.approval import ApprovalGate, Decision
from kosmos.engine.operator import Approval, CommandProposal, Operator, Question
from kosmos.errors import KosmosError, RunFailed, UsageError
from kosmos.events import (
    Answer,
    CommandDecision,
    CommandFinished,
    CommandStarted,
    DecidedBy,
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
class Decisions:
    """What a run's operator and policy decided at each step, and what was answered: what a
    replay takes over from a recording, and a fleet's host from its canary."""

    commands: dict[int, CommandDecision] = field(default_factory=dict)
    answers: dict[int, Answer] = field(default_factory=dict)
    # [GET-FILE] and memory steps: whether each was allowed (done or failed) or skipped.
    actions: dict[int, FileRead | MemoryAction] = field(default_factory=dict)

    def observe(self, event: Event) -> None:
        """Feed the run's events in order; the last decision of a step wins (a resume's)."""
        if isinstance(event, CommandDecision):
            self.commands[event.step] = event
        elif isinstance(event, Answer):
            self.answers[event.step] = event
        elif isinstance(event, FileRead | MemoryAction):
            self.actions[event.step] = event

    def command(self, step: int, proposed: str) -> CommandDecision | None:
        """The decision taken on `proposed` at `step`; None for another command."""
        recorded = self.commands.get(step)
        return recorded if recorded is not None and recorded.proposed == proposed else None


@dataclass
class Recording:
    """What a transcript holds for a replay: each request with its reply, decisions, answers."""

    source: str
    started: RunStarted
    exchanges: list[tuple[LLMRequest, LLMReply]] = field(default_factory=list)
    decided: Decisions = field(default_factory=Decisions)
    # Steps whose command started and whose result was never recorded; `decided` holds
    # what the resumed run decided about them.
    interrupted: set[int] = field(default_factory=set)

    @classmethod
    def from_events(cls, events: Sequence[Event], source: str) -> Recording:
        starts = [e for e in events if isinstance(e, RunStarted)]
        if not starts:
            raise UsageError(f"{source}: no run_started event; is it a kosmos transcript?")
        rec = cls(source, starts[0])
        request: LLMRequest | None = None
        running: set[int] = set()  # started in this segment, not finished yet
        for e in events:
            rec.decided.observe(e)
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


Recorded = CommandDecision | FileRead | MemoryAction


def reads_here(recorded: Recorded, proposal: CommandProposal) -> bool:
    """`--replay`: a recorded yes stands only for what this run judges read-only, which then
    runs inside the kernel lock; whatever else the recording ran (a person's yes, or a policy's
    there) is asked again here: it was decided elsewhere, and the file may have been edited."""
    return proposal.risk == "read_only"


class ReplayOperator:
    """Answers as the recorded operator did, where `carries` lets a recorded yes stand here;
    what the recording lacks, or does not let stand, goes to `inner`.

    It says yes to the command (or the edit) that was run at the step, allows or skips a file
    read or memory write as was done, and gives the recorded answer to the same question.
    `active` says whether the recording still applies (a fleet's host that left its canary's
    path asks its own operator). A dangerous command always goes to `inner`: a confirmation
    typed for another host or another day does not count. Its approvals say `by` (`replay`, or
    `canary` on a fleet's host): nobody said yes here, so what they approve runs unasked.
    `annotate` adds to a proposal handed to `inner` what its prompt should say.
    """

    def __init__(
        self,
        decided: Decisions,
        inner: Operator,
        active: Callable[[], bool] = lambda: True,
        *,
        carries: Callable[[Recorded, CommandProposal], bool] = reads_here,
        by: DecidedBy = "replay",
        annotate: Callable[[CommandProposal], CommandProposal] = lambda p: p,
    ) -> None:
        self.decided = decided
        self.inner = inner
        self.active = active
        self.by = by
        self.carries = carries
        self.annotate = annotate

    async def approve(self, proposal: CommandProposal) -> Approval:
        if not self.active() or proposal.risk == "dangerous":
            return await self.inner.approve(proposal)
        if proposal.kind != "command":
            return await self._allow(proposal)
        recorded = self.decided.commands.get(proposal.step)
        # The gate asks about the recorded command itself, or about its recorded edit.
        if (
            recorded is not None
            and recorded.decision in ("run", "edit")
            and proposal.command == recorded.command
            and self.carries(recorded, proposal)
        ):
            return Approval("run", by=self.by)
        return await self.inner.approve(self.annotate(proposal))

    async def _allow(self, proposal: CommandProposal) -> Approval:
        """A file read or memory write as the recorded operator allowed it (or not)."""
        recorded = self.decided.actions.get(proposal.step)
        target = recorded.path if isinstance(recorded, FileRead) else getattr(recorded, "name", "")
        if (
            recorded is None
            or recorded.by != "operator"
            or recorded.status == "refused"
            or target not in proposal.command
        ):
            return await self.inner.approve(self.annotate(proposal))
        if recorded.status == "skipped":
            return Approval("skip", by=self.by)
        if not self.carries(recorded, proposal):
            return await self.inner.approve(self.annotate(proposal))
        return Approval("run", by=self.by)

    async def answer(self, question: Question) -> str | None:
        recorded = self.decided.answers.get(question.step) if self.active() else None
        if recorded is None or recorded.question != question.text:
            return await self.inner.answer(question)
        return recorded.answer

    async def retry(self, error: KosmosError) -> bool:
        return await self.inner.retry(error)

    async def ask_secret(self, prompt: str) -> str | None:
        return await self.inner.ask_secret(prompt)


class ReplayGate(ApprovalGate):
    """The approval gate of a run that replays recorded decisions (`--replay`, or a fleet's
    host following its canary), put in front of the run's own gate.

    For a command the recording decided on at this step: a refusal is repeated with the
    recorded text and a skip is a skip, whatever the policy says now; an edit runs the edited
    command, judged by this run's policy like any other; a run is judged by this run's policy,
    the recorded operator answering where it asks. A command the recording lost to an
    interruption (`interrupted`) gets the operator's word as the resumed run took it, even where
    the policy would not ask. A dangerous command always needs this run's person. What the
    recording decides says `by` (`replay`, or `canary` on a fleet's host); what runs without a
    person's yes here runs inside the host's kernel lock, as the gate's own decisions do.
    """

    def __init__(
        self,
        decided: Decisions,
        gate: ApprovalGate,
        *,
        active: Callable[[], bool] = lambda: True,
        interrupted: set[int] | frozenset[int] = frozenset(),
        by: DecidedBy = "replay",
    ) -> None:
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
        self.auto_read_only = gate.auto_read_only
        self.decided = decided
        self.active = active
        self.interrupted = interrupted
        self.by = by

    async def decide(
        self, step: int, command: str, *, inferred: bool = False, rerun: bool = False
    ) -> Decision:
        recorded = self.decided.command(step, command) if self.active() else None
        if recorded is None:
            return await super().decide(step, command, inferred=inferred, rerun=rerun)
        verdict = assess(command, self.shell())
        if recorded.decision == "refused":
            return Decision("refused", command, self.by, verdict.verdict, recorded.reason)
        if recorded.decision == "skip":
            return Decision("skip", command, self.by, verdict.verdict, verdict.reason)
        if recorded.decision == "edit":
            edited = await super().decide(step, recorded.command, inferred=inferred, rerun=rerun)
            if edited.action != "run":
                return edited
            # The edit is the recording's; a person who said yes to it here stays named.
            by = self.by if edited.by == "policy" else edited.by
            return replace(edited, action="edit", by=by)
        if verdict.verdict == "dangerous":
            lost = rerun or step in self.interrupted
            return await super().decide(step, command, inferred=inferred, rerun=lost)
        if step in self.interrupted:
            return await self._ask(
                step, command, verdict.verdict, verdict.reason, inferred, service=verdict.service
            )
        return await super().decide(step, command, inferred=inferred, rerun=rerun)
