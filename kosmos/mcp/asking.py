"""Asking the MCP client's person: the Operator (one host) and the fleet's desk, by elicitation.

A command the policy leaves to a person is shown exactly (its control characters drawn as
symbols by `visible`, as every front end draws text kosmos did not write), with its host, the
shell policy's verdict and reason; a dangerous one asks for the host's name, typed, which the
approval gate checks. A client that offers no elicitation cannot ask anyone: what needs a
person is then not run, decided by the policy and said so. Secrets (a sudo password) are never
asked for through MCP, and host keys are never trusted from it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from kosmos.engine.guard import visible
from kosmos.engine.operator import Approval, CommandProposal, Question
from kosmos.errors import InputNeeded, KosmosError
from kosmos.fleet.approvals import AnswerRequest, ApprovalRequest, FleetAnswer, FleetApproval

# How long a person has to answer one question before it counts as not answered.
ASK_TIMEOUT_S = 600.0

# What a form returns: the action (accept, decline, cancel) and, on accept, the fields.
Ask = Callable[[str, type[BaseModel]], Awaitable[tuple[str, BaseModel | None]]]


class RunIt(BaseModel):
    run: bool = Field(description="Run exactly this command on the host")


class RunItOnAll(BaseModel):
    run: bool = Field(description="Run exactly this command")
    all_hosts: bool = Field(
        False, description="Run it on every host of the fleet that proposes it, not only this one"
    )


class TypeHostName(BaseModel):
    host: str = Field(description="This command is dangerous: type the host's name to run it")


class TypedAnswer(BaseModel):
    answer: str = Field(description="Your answer")


def approval_text(
    proposal: CommandProposal, *, policy: str, others: int = 0, notes: Sequence[str] = ()
) -> str:
    """The question a person sees: the command exactly, the host, the verdict and its reason;
    `notes`: what a fleet's prompt adds (the canary's yes covered the canary only, and where a
    waiting host's output differs from the canary's)."""
    what = "read" if proposal.kind == "file" else "run"
    lines = [
        f"kosmos: {what} this on {visible(proposal.host, one_line=True)}?",
        "",
        *("    " + line for line in visible(proposal.command).split("\n")),
        "",
        f"verdict: {proposal.risk} — {visible(proposal.reason) or 'no reason given'}",
        f"policy: {policy} (this asks because the policy leaves it to a person)",
    ]
    if proposal.inferred:
        lines.append("the LLM's reply had no tag: kosmos read this command out of its text")
    lines.extend(visible(note) for note in notes)
    if others:
        lines.append(
            f"this fleet has {others} other host(s): all_hosts runs it on each that proposes it"
        )
    if proposal.risk == "dangerous":
        lines.append(f"to run it, type the host's name: {visible(proposal.host, one_line=True)}")
    return "\n".join(lines)


@dataclass
class Asker:
    """One tool call's way to ask its client's person; `can_ask`: the client offers elicitation."""

    ask: Ask
    can_ask: bool
    client: str = "an MCP client"

    async def form(self, message: str, schema: type[BaseModel]) -> tuple[str, Any]:
        """The person's action and fields; no answer in time counts as cancel."""
        try:
            async with asyncio.timeout(ASK_TIMEOUT_S):
                return await self.ask(message, schema)
        except TimeoutError:
            return "cancel", None

    async def approve(
        self,
        proposal: CommandProposal,
        *,
        policy: str,
        others: int = 0,
        notes: Sequence[str] = (),
    ) -> tuple[Approval, bool]:
        """The person's approval of `proposal`, and whether they chose it for every host."""
        if not self.can_ask:
            # Nobody can be asked: the policy's decision, said so (never the person's).
            return Approval("skip", by="policy"), False
        text = approval_text(proposal, policy=policy, others=others, notes=notes)
        if proposal.risk == "dangerous":
            action, data = await self.form(text, TypeHostName)
            if action == "accept" and data is not None:
                return Approval.run(typed=data.host), False
            return Approval.skip(), False
        schema: type[BaseModel] = RunItOnAll if others else RunIt
        action, data = await self.form(text, schema)
        if action == "accept" and data is not None and data.run:
            return Approval.run(), bool(getattr(data, "all_hosts", False))
        return Approval.skip(), False

    async def answer(self, question: Question, host: str) -> str | None:
        """An [ASK] answered in a form; a required one nobody answers ends the run."""
        if self.can_ask:
            need = "required" if question.required else "optional: decline to skip it"
            where = visible(host, one_line=True)
            text = f"kosmos, on {where}, asks ({need}):\n\n{visible(question.text)}"
            action, data = await self.form(text, TypedAnswer)
            if action == "accept" and data is not None and data.answer.strip():
                return data.answer
        if question.required:
            why = "was not answered" if self.can_ask else "cannot be asked: no elicitation"
            raise InputNeeded(
                f"the skill asks {question.text!r} and {self.client} {why}; "
                "pass the answer as a skill parameter, or answer when asked"
            )
        return None


class ElicitingOperator:
    """The Operator of one host's run or calls: each question goes to the client's person."""

    def __init__(self, asker: Asker, *, policy: str) -> None:
        self.asker = asker
        self.policy = policy

    async def approve(self, proposal: CommandProposal) -> Approval:
        approval, _ = await self.asker.approve(proposal, policy=self.policy)
        return approval

    async def answer(self, question: Question) -> str | None:
        return await self.asker.answer(question, "the host")

    async def retry(self, error: KosmosError) -> bool:
        return False

    async def ask_secret(self, prompt: str) -> str | None:
        # A password is not asked for through MCP: it would pass through the client.
        return None


class ElicitingDesk:
    """A fleet's desk (`FleetDesk`): one question at a time, "run on all" offered in the form."""

    def __init__(self, asker: Asker, *, policy: str, hosts: int) -> None:
        self.asker = asker
        self.policy = policy
        # The fleet's size: a yes for all stands for every host that proposes it, now or later.
        self.hosts = hosts

    async def decide(self, request: ApprovalRequest) -> FleetApproval:
        others = 0 if request.dangerous else max(request.count, self.hosts) - 1
        approval, everywhere = await self.asker.approve(
            request.proposal, policy=self.policy, others=others, notes=request.notes()
        )
        return FleetApproval(approval, "all" if everywhere else "host")

    async def answer(self, request: AnswerRequest) -> FleetAnswer:
        return FleetAnswer(await self.asker.answer(request.question, request.host))

    async def ask_secret(self, host: str, prompt: str) -> str | None:
        return None

    async def retry(self, host: str, error: KosmosError) -> bool:
        return False

    async def confirm_host_key(self, host: str, key_type: str, fingerprint: str) -> bool:
        # An unknown host key is refused: add it with ssh first, as `kosmos hosts --check` says.
        return False
