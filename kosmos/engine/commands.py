"""One command from proposal to the text the LLM gets: approval, sudo, streamed output, events.

A skill's `[CMD]` and `run_command` outside a skill take this one road.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from kosmos.engine.approval import ApprovalGate, Decision
from kosmos.engine.guard import LineRedactor
from kosmos.engine.operator import Operator
from kosmos.engine.output import omitted_bytes, output_for_llm
from kosmos.engine.sudo import SudoHelper
from kosmos.errors import HostError
from kosmos.events import (
    CommandFinished,
    CommandOutput,
    CommandStarted,
    Event,
    Notice,
)
from kosmos.hosts.runner import CommandResult, Runner
from kosmos.prompts import Prompts
from kosmos.safety import Redactor


@dataclass(frozen=True)
class CommandOutcome:
    """What became of one proposed command: the gate's decision and, when it ran, its result.

    `output` is what the LLM is told of it: the output cleaned, capped, fenced and redacted,
    with a status line when it did not simply succeed ("" when it did not run). The raw
    output is not kept here: it may hold what the redactor masks.
    """

    proposed: str
    decision: Decision
    output: str = ""
    exit_code: int | None = None
    duration_s: float = 0.0
    bytes: int = 0
    timed_out: bool = False
    cancelled: bool = False
    connection_lost: bool = False
    # The command calls sudo, sudo wants a password, and nobody gave one: it did not run.
    sudo_declined: bool = False

    @property
    def command(self) -> str:
        """The command as it ran (the operator may have edited it), or as proposed."""
        return self.decision.command

    @property
    def ran(self) -> bool:
        return self.decision.action in ("run", "edit") and not self.sudo_declined

    @classmethod
    def of(
        cls, proposed: str, decision: Decision, result: CommandResult, output: str
    ) -> CommandOutcome:
        return cls(
            proposed,
            decision,
            output,
            exit_code=result.exit_code,
            duration_s=result.duration_s,
            bytes=result.bytes,
            timed_out=result.timed_out,
            cancelled=result.cancelled,
            connection_lost=result.connection_lost,
        )


class CommandStep:
    """Runs one run's commands, one at a time; `stop` ends the one running now."""

    def __init__(
        self,
        *,
        runner: Runner,
        gate: Callable[[], ApprovalGate],
        sudo: SudoHelper,
        operator: Operator,
        redactor: Redactor,
        prompts: Prompts,
        emit: Callable[[Event], None],
        command_timeout: float,
        synced: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.runner = runner
        # The session's gate, looked up each time: a replay puts its own in place.
        self.gate = gate
        self.sudo = sudo
        self.operator = operator
        self.redactor = redactor
        self.prompts = prompts
        self.emit = emit
        self.command_timeout = command_timeout
        # Done once the transcript holds every event so far: a command runs only once its
        # `command_started` is on the disk, so that a resumed run never runs it again.
        self.synced = synced
        self.stop: asyncio.Event | None = None
        self.count = 0

    async def run(
        self,
        command: str,
        step: int,
        *,
        inferred: bool = False,
        rerun: bool = False,
        edited: Callable[[str], None] | None = None,
    ) -> CommandOutcome:
        """Ask the gate about `command`, run it if allowed, and say what became of it.

        `edited` hears the command that will run when the operator changed it.
        """
        decision = await self.gate().decide(step, command, inferred=inferred, rerun=rerun)
        self.emit(decision.event(step, command))
        if decision.action in ("refused", "skip"):
            return CommandOutcome(command, decision)
        if decision.command != command and edited is not None:
            edited(decision.command)
        prepared = await self.sudo.prepare(decision.command)
        if prepared.declined:
            return CommandOutcome(command, decision, sudo_declined=True)
        self.emit(CommandStarted(step=step, command=decision.command))
        if self.synced is not None:
            await self.synced()
        self.stop = asyncio.Event()
        lines = LineRedactor(self.redactor)

        def on_output(text: str) -> None:
            shown = lines.feed(text)
            if shown:
                self.emit(CommandOutput(step=step, text=shown))

        try:
            while True:
                try:
                    result = await self.runner.run(
                        prepared.text,
                        timeout=self.command_timeout,
                        on_output=on_output,
                        stop=self.stop,
                        stdin=prepared.stdin,
                        lock=decision.lock,
                    )
                    break
                except HostError as e:
                    # Raised before the command started (no connection): safe to try again.
                    if not await self.operator.retry(e):
                        raise
                    self.emit(Notice(message=f"retrying the command after: {e}"))
        finally:
            self.stop = None
        tail = lines.flush()
        if tail:
            self.emit(CommandOutput(step=step, text=tail))
        self.count += 1
        for_llm = self.redactor(
            output_for_llm(result, self.prompts, command_timeout=self.command_timeout)
        )
        note = self.sudo.note(prepared, result.output.text())
        if note:
            for_llm = f"{for_llm}\n{note}"
        self.emit(
            CommandFinished(
                step=step,
                command=decision.command,
                exit_code=result.exit_code,
                duration_s=result.duration_s,
                bytes=result.bytes,
                timed_out=result.timed_out,
                cancelled=result.cancelled,
                connection_lost=result.connection_lost,
                output=result.output.text(marker=omitted_bytes),
                output_truncated=result.output.omitted > 0,
                sent_to_llm=for_llm,
                locked=result.locked,
            )
        )
        return CommandOutcome.of(command, decision, result, for_llm)
