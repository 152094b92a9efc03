"""Approve once for the whole fleet: the same command proposed on several hosts, one decision
(and the same question asked by several hosts, one answer).

Each host's session asks its own `Operator` (so each host's approval policy decides first
whether a person is needed at all). In a fleet that operator is a `HostDesk`: it hands the
proposal to the shared `ApprovalBroker`, which asks the front end one question at a time and
groups the hosts waiting on the same command, so that the front end can offer "run on all N".

A "run on all" decision also stands for hosts that propose the same command later in the
run; a `y` covers only the host it was shown for. On every host but the one the operator was
shown it is a standing approval (`by="standing"`): nobody looked at that host, so what it
approves runs unasked there. A host that replays its canary and reaches a command the canary's
person ran there only waits here too, with what the prompt must say: the canary it was decided
on, and where this host's earlier output differed from the canary's. A dangerous command is
never decided for a group: every host is asked on its own, and the front end asks for that
host's name (the safety rule, which the gate checks).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol

from kosmos.engine.operator import Approval, CommandProposal, Question
from kosmos.errors import KosmosError
from kosmos.safety import assess

Scope = Literal["host", "all"]


@dataclass(frozen=True)
class FleetApproval:
    """The front end's answer: `approval` for the asking host, or for every host (`all`)."""

    approval: Approval
    scope: Scope = "host"


@dataclass(frozen=True)
class ApprovalRequest:
    """One proposal shown to the operator, with the other hosts waiting on the same command.

    `canary`: the canary whose person ran it there only (these hosts replay its run);
    `differs`: each waiting host whose earlier output differed from the canary's, with a short
    diff of the first such output.
    """

    proposal: CommandProposal
    hosts: tuple[str, ...]
    canary: str | None = None
    differs: tuple[tuple[str, str], ...] = ()

    @property
    def dangerous(self) -> bool:
        return self.proposal.risk == "dangerous"

    @property
    def count(self) -> int:
        return len(self.hosts)

    def notes(self, most: int = 3) -> list[str]:
        """What the prompt says beside the command: that the canary's `y` covered the canary
        only, and each waiting host (up to `most`) whose earlier output differed from the
        canary's, with the difference."""
        lines: list[str] = []
        if self.canary is not None:
            lines.append(f"the yes on the canary ran it on {self.canary} only: this asks for yours")
        for host, diff in self.differs[:most]:
            first, *rest = diff.split("\n")
            lines.append(f"{host}: {first}:")
            lines.extend(f"    {line}" for line in rest)
        if len(self.differs) > most:
            lines.append(f"… and {len(self.differs) - most} more host(s) whose output differs")
        return lines


@dataclass(frozen=True)
class AnswerRequest:
    """One host's [ASK]; `hosts` are those asking it right now (more may come while the
    operator types)."""

    host: str
    question: Question
    waiting: Callable[[], tuple[str, ...]] = field(repr=False, default=lambda: ())

    @property
    def hosts(self) -> tuple[str, ...]:
        return self.waiting() or (self.host,)


@dataclass(frozen=True)
class FleetAnswer:
    """The operator's answer for the asking host, or (`all`) for every host that asks it."""

    value: str | None
    scope: Scope = "host"


class FleetDesk(Protocol):
    """What a fleet front end implements: one question at a time, with the host named."""

    async def decide(self, request: ApprovalRequest) -> FleetApproval:
        """Run, skip or edit a command for the asking host or (not when dangerous) for all."""
        ...

    async def answer(self, request: AnswerRequest) -> FleetAnswer:
        """The answer to one host's [ASK] (None skips an optional one), or to all asking it."""
        ...

    async def ask_secret(self, host: str, prompt: str) -> str | None:
        """A secret for one host (a sudo password), typed masked; None declines."""
        ...

    async def retry(self, host: str, error: KosmosError) -> bool:
        """An LLM error on one host: True sends the same request again."""
        ...

    async def confirm_host_key(self, host: str, key_type: str, fingerprint: str) -> bool:
        """A host's unknown SSH key: True trusts it."""
        ...


@dataclass
class _Pending:
    proposal: CommandProposal
    future: asyncio.Future[Approval] = field(repr=False)


def _key(proposal: CommandProposal) -> tuple[str, bool]:
    return (proposal.command, proposal.inferred)


def _request(group: list[CommandProposal]) -> ApprovalRequest:
    """The request for proposals of one command, the first one shown."""
    head = group[0]
    canary = next((p.canary for p in group if p.canary), None)
    differs = tuple((p.host, p.differs) for p in group if p.differs)
    return ApprovalRequest(head, tuple(p.host for p in group), canary, differs)


class ApprovalBroker:
    """Serializes the fleet's questions to one front end and fans one decision out to many."""

    def __init__(self, desk: FleetDesk) -> None:
        self.desk = desk
        self._pending: list[_Pending] = []
        # Commands approved for every host: the approval a later proposal of them gets.
        self._standing: dict[tuple[str, bool], Approval] = {}
        # Answers given for every host, and the hosts that have had them.
        self._answers: dict[tuple[str, bool], tuple[str | None, set[str]]] = {}
        self._asking: list[tuple[str, tuple[str, bool]]] = []
        self._lock = asyncio.Lock()
        self._worker: asyncio.Task[None] | None = None
        # Called when a host starts or stops waiting for the operator (for live views).
        self.on_waiting: Callable[[str, bool], None] | None = None

    def desk_for(self, host: str) -> HostDesk:
        return HostDesk(self, host)

    @property
    def waiting(self) -> list[ApprovalRequest]:
        """Proposals waiting for a decision, grouped by command (what a TUI lists)."""
        groups: dict[tuple[str, bool], list[_Pending]] = {}
        for p in self._pending:
            groups.setdefault(_key(p.proposal), []).append(p)
        return [_request([p.proposal for p in ps]) for ps in groups.values()]

    async def approve(self, proposal: CommandProposal) -> Approval:
        """A host's proposal: decided by a standing approval, or queued for the operator."""
        # The policy may not have judged it (an older engine); the danger rule holds anyway.
        if proposal.risk != "dangerous" and assess(proposal.command).verdict == "dangerous":
            proposal = dataclasses.replace(
                proposal, risk="dangerous", reason=assess(proposal.command).reason
            )
        standing = self._standing.get(_key(proposal))
        if standing is not None and proposal.risk != "dangerous":
            return standing
        future: asyncio.Future[Approval] = asyncio.get_running_loop().create_future()
        self._pending.append(_Pending(proposal, future))
        self._notify(proposal.host, True)
        if self._worker is None or self._worker.done():
            self._worker = asyncio.ensure_future(self._work())
        try:
            return await future
        finally:
            self._pending = [p for p in self._pending if p.future is not future]
            self._notify(proposal.host, False)

    def decide_all(self, command: str, approval: Approval, *, inferred: bool = False) -> int:
        """Decide every non-dangerous proposal of `command` now and later; returns how many.

        The hosts it decides were not shown to the operator: their approval says `standing`.
        """
        key = (command, inferred)
        approval = dataclasses.replace(approval, by="standing", all_hosts=True)
        if approval.action != "skip":
            self._standing[key] = approval
        count = 0
        for p in list(self._pending):
            if _key(p.proposal) == key and p.proposal.risk != "dangerous" and not p.future.done():
                p.future.set_result(approval)
                count += 1
        return count

    async def _work(self) -> None:
        while True:
            head = next((p for p in self._pending if not p.future.done()), None)
            if head is None:
                return
            prop = head.proposal
            if prop.risk == "dangerous":
                group = [prop]
            else:
                group = [
                    p.proposal
                    for p in self._pending
                    if _key(p.proposal) == _key(prop)
                    and p.proposal.risk != "dangerous"
                    and not p.future.done()
                ]
            try:
                async with self._lock:
                    decision = await self.desk.decide(_request(group))
            except BaseException as e:  # handed to the waiting session
                if not head.future.done():
                    head.future.set_exception(e)
                if isinstance(e, asyncio.CancelledError):
                    raise
                continue
            everywhere = decision.scope == "all" and prop.risk != "dangerous"
            if not head.future.done():
                approval = decision.approval
                if everywhere:
                    approval = dataclasses.replace(approval, all_hosts=True)
                head.future.set_result(approval)
            if everywhere:
                self.decide_all(prop.command, decision.approval, inferred=prop.inferred)

    async def answer(self, host: str, question: Question) -> str | None:
        """One host's [ASK]: an answer given for all hosts, or one from the operator."""
        key = (question.text, question.required)
        asking = (host, key)
        self._asking.append(asking)
        self._notify(host, True)
        try:
            async with self._lock:
                standing = self._answers.get(key)
                if standing is not None and host not in standing[1]:
                    # Each host gets it once: the same question later in its run is asked again.
                    standing[1].add(host)
                    return standing[0]

                def asking_now() -> tuple[str, ...]:
                    return tuple(h for h, k in self._asking if k == key)

                reply = await self.desk.answer(AnswerRequest(host, question, asking_now))
                if reply.scope == "all":
                    self._answers[key] = (reply.value, {host})
                return reply.value
        finally:
            self._asking.remove(asking)
            self._notify(host, False)

    async def ask_secret(self, host: str, prompt: str) -> str | None:
        async with self._lock:
            return await self.desk.ask_secret(host, prompt)

    async def retry(self, host: str, error: KosmosError) -> bool:
        async with self._lock:
            return await self.desk.retry(host, error)

    async def confirm_host_key(self, host: str, key_type: str, fingerprint: str) -> bool:
        async with self._lock:
            return await self.desk.confirm_host_key(host, key_type, fingerprint)

    def _notify(self, host: str, waiting: bool) -> None:
        if self.on_waiting is not None:
            self.on_waiting(host, waiting)

    async def aclose(self) -> None:
        if self._worker is not None and not self._worker.done():
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker


class HostDesk:
    """One host's `Operator` (and `HostPrompter`) in a fleet: every question goes through the
    shared broker."""

    def __init__(self, broker: ApprovalBroker, host: str) -> None:
        self.broker = broker
        self.host = host

    async def approve(self, proposal: CommandProposal) -> Approval:
        return await self.broker.approve(proposal)

    async def answer(self, question: Question) -> str | None:
        return await self.broker.answer(self.host, question)

    async def retry(self, error: KosmosError) -> bool:
        return await self.broker.retry(self.host, error)

    async def ask_secret(self, prompt: str) -> str | None:
        return await self.broker.ask_secret(self.host, prompt)

    async def confirm_host_key(self, host: str, key_type: str, fingerprint: str) -> bool:
        # `host` is the target with its address (`web1 (10.0.0.5:2222)`); the fleet's name for
        # the host leads, so an inventory name the target does not carry is shown too.
        if host != self.host and not host.startswith(f"{self.host} ("):
            host = f"{self.host} ({host})"
        return await self.broker.confirm_host_key(host, key_type, fingerprint)
