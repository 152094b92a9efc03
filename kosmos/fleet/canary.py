"""--canary: the LLM drives one host; the others replay its run without calling the LLM.

A replayed host gets the canary's replies in order from a `CanaryProvider`, and the canary's
decisions as `--replay` takes a recording's (`kosmos.engine.replay`): what the canary's
operator or policy skipped is skipped, what was refused is refused with the same words, an edit
runs edited, and the canary's answers answer. A yes covers what it said: the canary's person's
`y` ran the command on the canary only, so where this host's policy asks, this host waits for
the fleet's person (with the other hosts that reach it: one question, "all hosts" one key);
only a yes given for all hosts answers here, and from a transcript (`--canary-from`) only when
its seal verified with the operator's key (`trusted`). Its commands still run for real, under
its own policy; a dangerous one needs this host's person. What the canary's decisions decide
here says `by: canary`, and what they let run without this host's person runs inside its kernel
lock where it reads. Where this host's output differs from the canary's, the first difference
is kept (`differs`) for the prompt to show. As soon as the host decides otherwise than the
canary did, or one of its commands ends differently (another exit status, a timeout), it
diverges: from then on its requests go to the real LLM, which sees the whole conversation so
far with this host's own outputs, and its own operator decides.

The plan is replayed, never the conclusions: the canary's last reply (its `[DONE]` report) is
taken only by a host whose conversation is the canary's byte for byte; any other host's report
is made by the LLM from its own outputs, once per distinct conversation (`kosmos.fleet.reports`).

`--canary-from` takes the record from a finished run's transcript, and refuses one made of
another skill, with another SKILL.md text, other parameters, prompt or step protocol.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from dataclasses import replace as with_fields
from typing import TYPE_CHECKING, Any

from msgspec.structs import replace

from kosmos.engine.operator import CommandProposal, Operator
from kosmos.engine.replay import Decisions, Recorded, ReplayGate, ReplayOperator
from kosmos.errors import UsageError
from kosmos.events import (
    CommandDecision,
    CommandFinished,
    Event,
    LLMReply,
    LLMRequest,
    Message,
    Notice,
    RunFinished,
    RunStarted,
)
from kosmos.fleet.reports import OWN, Conversation, Reports
from kosmos.llm.provider import Capabilities, Provider, Reply
from kosmos.skills.model import Skill

if TYPE_CHECKING:
    from kosmos.engine.session import Session


@dataclass(frozen=True)
class RecordedCommand:
    command: str
    exit_code: int | None
    timed_out: bool = False
    output: str = ""


@dataclass
class CanaryRecord:
    """What the canary's LLM said, what was decided, and what its commands did, in order."""

    host: str
    replies: list[Reply] = field(default_factory=list)
    commands: list[RecordedCommand] = field(default_factory=list)
    decided: Decisions = field(default_factory=Decisions)
    started: RunStarted | None = None
    # The digest of the conversation the canary had sent when it got each reply.
    keys: list[str] = field(default_factory=list)
    conversation: Conversation = field(default_factory=Conversation)
    # The reports made for the hosts replaying this record, shared by all of them.
    reports: Reports = field(default_factory=Reports)
    # Its "all hosts" decisions stand on the other hosts: kept in this process, or read from a
    # transcript whose seal verified with the operator's key.
    trusted: bool = True

    def observe(self, event: Event) -> None:
        """Feed every event of the canary's session, in order."""
        self.decided.observe(event)
        if isinstance(event, RunStarted) and self.started is None:
            self.started = event
        elif isinstance(event, LLMRequest):
            self.conversation.add(event.new_messages)
            self.keys.append(self.conversation.digest())
        elif isinstance(event, LLMReply):
            # Text and tool calls alike: the replay serves every step protocol.
            self.replies.append(
                Reply(
                    text=event.content,
                    tool_calls=list(event.tool_calls),
                    finish_reason=event.finish_reason,
                )
            )
            if len(self.keys) == len(self.replies):
                # The canary's conclusion, for hosts whose conversation turns out the same.
                self.reports.seed(self.keys[-1], self.replies[-1], self.host)
        elif isinstance(event, CommandFinished):
            self.commands.append(
                RecordedCommand(
                    event.command,
                    event.exit_code,
                    event.timed_out or event.cancelled,
                    event.output,
                )
            )

    def check(
        self, skill: Skill, params: Mapping[str, str], *, prompt: str | None, protocol: str
    ) -> None:
        """UsageError (exit 2) naming what differs, unless this run is the canary's run: the
        same SKILL.md text, parameters, prompt and step protocol. Its decisions were taken on
        that run's commands; another skill text or another parameter makes other commands."""
        started = self.started
        if started is None:
            return
        source = f"--canary-from {started.transcript or self.host}"
        differs: list[str] = []
        if started.skill_sha256 is None:
            raise UsageError(
                f"{source}: the transcript does not record the SKILL.md it ran (an older "
                "kosmos); record the canary again with this one"
            )
        if started.skill_sha256 != skill.sha256:
            differs.append(f"{skill.path} is not the SKILL.md the canary ran")
        for name in sorted(set(started.params) | set(params)):
            theirs, mine = started.params.get(name), params.get(name)
            if theirs != mine:
                differs.append(
                    f"--param {name}: the canary had {_said(theirs)}, this run {_said(mine)}"
                )
        if (started.prompt or None) != (prompt or None):
            differs.append(
                f"--prompt: the canary had {_said(started.prompt)}, this run {_said(prompt)}"
            )
        if started.protocol != protocol:
            differs.append(f"--protocol: the canary ran {started.protocol}, this run {protocol}")
        if differs:
            raise UsageError(
                f"{source} records another run: {'; '.join(differs)}; run with what the canary "
                "ran, or record a new canary"
            )

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
        record.started = replace(starts[0], transcript=source)
        return record


class Replay:
    """One host's replay of a canary record, and the moment it stopped following it."""

    def __init__(
        self,
        record: CanaryRecord,
        provider: Provider,
        operator: Operator,
        emit: Callable[[Event], None],
        *,
        host: str = "",
    ) -> None:
        self.record = record
        self.real_provider = provider
        self.real_operator = operator
        self._emit = emit
        self.host = host
        self.diverged_at: int | None = None
        # The first of this host's outputs that differed from the canary's, as a short diff.
        self.differs = ""
        self._replies = 0
        self._commands = 0
        self._concluded = False
        self._step = 0
        # What this host's final report was made from: its own outputs, or another host's.
        self.report_from = OWN
        self.conversation = Conversation()
        self.provider = CanaryProvider(self)
        # The canary's answers and its "all hosts" yes while this host follows it; its own
        # operator after. What the canary's decisions let run here runs unasked.
        self.operator = ReplayOperator(
            record.decided,
            operator,
            lambda: self.following,
            carries=self._carries,
            by="canary",
            annotate=self._annotate,
        )

    def _carries(self, recorded: Recorded, proposal: CommandProposal) -> bool:
        """A yes the canary's person gave for every host (never one for the canary only)."""
        return (
            self.record.trusted
            and isinstance(recorded, CommandDecision)
            and recorded.all_hosts
            and recorded.by in ("operator", "standing")
        )

    def _annotate(self, proposal: CommandProposal) -> CommandProposal:
        """What this host's prompt says: the canary's person ran it there only, and where this
        host's output differed from the canary's."""
        recorded = self.record.decided.commands.get(proposal.step)
        ran_there = (
            recorded is not None
            and recorded.decision in ("run", "edit")
            and recorded.command == proposal.command
            and recorded.by in ("operator", "standing")
        )
        return with_fields(
            proposal, canary=self.record.host if ran_there else None, differs=self.differs
        )

    def attach(self, session: Session) -> None:
        """Put the canary's decisions in front of the session's own gate."""
        session.gate = ReplayGate(
            self.record.decided, session.gate, active=lambda: self.following, by="canary"
        )

    @property
    def following(self) -> bool:
        return self.diverged_at is None

    def diverge(self, step: int, why: str) -> None:
        if self.diverged_at is not None:
            return
        self.diverged_at = step
        self.report_from = OWN  # whatever it reports now, its own LLM session makes
        self._emit(
            Notice(message=f"step {step}: {why}; this host continues with its own LLM session")
        )

    def observe(self, event: Event) -> None:
        """Feed every event of this host's session: a command that ends differently diverges."""
        if not self.following:
            return
        if isinstance(event, LLMRequest):
            self.conversation.add(event.new_messages)
            self._step = event.step
        elif isinstance(event, CommandDecision):
            recorded = self.record.decided.command(event.step, event.proposed)
            if recorded is None:
                self.diverge(event.step, f"`{event.proposed}` differs from the canary's command")
            elif (event.decision, event.command) != (recorded.decision, recorded.command):
                self.diverge(
                    event.step,
                    f"`{event.proposed}` was {_decided(event)} here and {_decided(recorded)} on "
                    f"the canary {self.record.host}",
                )
        elif isinstance(event, CommandFinished):
            expected = self._expected()
            self._commands += 1
            if expected is None:
                return
            if not self.differs and event.output != expected.output:
                self.differs = short_diff(
                    event.command, self.record.host, expected.output, event.output
                )
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
        """The canary's next reply of its plan; None at its last (the conclusion) and after."""
        if not self.following or self._replies >= len(self.record.replies) - 1:
            return None
        reply = self.record.replies[self._replies]
        self._replies += 1
        return reply

    @property
    def step(self) -> int:
        """The step of this host's latest LLM request."""
        return self._step

    @property
    def concluding(self) -> bool:
        """The host has followed the canary to the request the canary's report answered."""
        return (
            self.following and not self._concluded and self._replies == len(self.record.replies) - 1
        )

    async def conclude(self, messages: Sequence[Message], **kwargs: Any) -> Reply:
        """This host's report: the canary's (or another host's) where its conversation is the
        same byte for byte, else the LLM's, made from this host's own outputs."""
        self._concluded = True
        self._replies += 1

        async def ask() -> Reply:
            return await self.real_provider.complete(messages, **kwargs)

        reply, made_for = await self.record.reports.get(self.conversation.digest(), self.host, ask)
        self.report_from = OWN if made_for == self.host else made_for
        return reply


DIFF_LINES = 6
DIFF_WIDTH = 100


def short_diff(command: str, canary: str, theirs: str, mine: str) -> str:
    """The first lines in which this host's output of `command` differs from the canary's:
    `-` the canary's line, `+` this host's, a few of them, each cut short."""
    lines = [
        line[:DIFF_WIDTH]
        for line in difflib.unified_diff(theirs.splitlines(), mine.splitlines(), lineterm="", n=0)
        if not line.startswith(("---", "+++", "@@"))
    ]
    more = len(lines) - DIFF_LINES
    shown = lines[:DIFF_LINES] + ([f"… {more} more line(s)"] if more > 0 else [])
    head = f"`{command[:DIFF_WIDTH]}` printed other output here than on the canary {canary}"
    return "\n".join([head, *shown])


def _said(value: str | None) -> str:
    return "none" if value is None else repr(value)


def _decided(event: CommandDecision) -> str:
    return f"edited to `{event.command}`" if event.decision == "edit" else event.decision


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
    def capabilities(self) -> Capabilities:
        return self.replay.real_provider.capabilities

    async def complete(self, messages: Sequence[Message], **kwargs: Any) -> Reply:
        reply = self.replay.next_reply()
        if reply is not None:
            return reply
        if self.replay.concluding:
            return await self.replay.conclude(messages, **kwargs)
        if self.replay.following:
            # The report this host was given did not end its run (the LLM, seeing this host's
            # outputs, went on), or the canary's replies ran out (cannot happen for a done run).
            self.replay.diverge(
                self.replay.step,
                "the LLM went on past the canary's last step with this host's own outputs",
            )
        return await self.replay.real_provider.complete(messages, **kwargs)

    async def aclose(self) -> None:
        return None
