"""A [CMD] from proposal to the text the LLM gets: approval, sudo, streamed output, events."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from kosmos.engine.approval import ApprovalGate
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
from kosmos.hosts.runner import Runner
from kosmos.prompts import Prompts
from kosmos.safety import Redactor


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
        self.stop: asyncio.Event | None = None
        self.count = 0

    async def run(
        self,
        command: str,
        step: int,
        *,
        inferred: bool,
        rerun: bool,
        edited: Callable[[str], None],
    ) -> tuple[str, str | None]:
        """(what the LLM is told, `skip` / `declined` / `refused`-style key or None).

        The text is command output (seed 001 section 4.2) or the reason nothing ran; the key
        names which prompt the session wraps it in. `edited` hears the command that will run
        when the operator changed it.
        """
        decision = await self.gate().decide(step, command, inferred=inferred, rerun=rerun)
        self.emit(decision.event(step, command))
        if decision.action == "refused":
            return decision.reason, "SKILL_COMMAND_REFUSED"
        if decision.action == "skip":
            return "", "SKILL_COMMAND_SKIPPED"
        if decision.command != command:
            edited(decision.command)
        command = decision.command
        prepared = await self.sudo.prepare(command)
        if prepared.declined:
            return "", "SKILL_SUDO_DECLINED"
        self.emit(CommandStarted(step=step, command=command))
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
                command=command,
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
        return for_llm, None
