"""One run in one tab: the session from run assembly, driven here, its events routed to a view."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from pathlib import Path

from textual.message_pump import MessagePump

from kosmos.config import Settings
from kosmos.engine.session import Session
from kosmos.errors import EXIT_INTERRUPTED, KosmosError, RunStatus
from kosmos.events import CommandOutput, Event, RunFinished
from kosmos.hosts.runner import Runner
from kosmos.prompts import Prompts
from kosmos.runs.assembly import RunChoices, prepare_run
from kosmos.safety import Redactor
from kosmos.skills.model import Skill
from kosmos.tui.messages import EngineEvent, OutputReady
from kosmos.tui.operator import TuiOperator
from kosmos.tui.output import StepOutputs
from kosmos.tui.pool import HostPool


@dataclass(frozen=True)
class RunSpec:
    """What the operator started: a skill with its params on a host."""

    skill: Skill
    params: dict[str, str]
    host: str
    transcript: Path | None = None
    prompt: str | None = None
    # What happened before the run (the parameter dialogue's turns), for its transcript.
    early: tuple[Event, ...] = ()


@dataclass
class RunController:
    """Owns one run's session and transcript; talks to its view only through messages."""

    spec: RunSpec
    settings: Settings
    prompts: Prompts
    pool: HostPool
    view: MessagePump
    operator: TuiOperator
    redactor: Redactor
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    session: Session | None = None
    result: RunFinished | None = None
    transcript_path: Path | None = None
    output: StepOutputs = field(default_factory=StepOutputs)

    @property
    def command_running(self) -> bool:
        return self.session is not None and self.session.command_running

    @property
    def finished(self) -> bool:
        return self.result is not None

    def stop_command(self) -> bool:
        return self.session is not None and self.session.stop_command()

    def _emit_to_view(self, event: Event) -> None:
        if isinstance(event, CommandOutput):
            # Batched: the chunk waits in its step's tail; one queued message per burst.
            if self.output.feed(event.step, event.text):
                self.view.post_message(OutputReady(event.step))
            return
        self.view.post_message(EngineEvent(event))

    async def _connect(self) -> Runner | None:
        """The host's runner; on failure the operator may retry; None when they give up."""
        while True:
            try:
                return await self.pool.get(self.spec.host)
            except KosmosError as e:
                if not await self.operator.retry_connect(e):
                    self._end(e.status, str(e), e.exit_code)
                    return None

    def _end(self, status: RunStatus, message: str, exit_code: int) -> None:
        """A run that ended before its session started (host unreachable, cancelled)."""
        self.result = RunFinished(
            status=status,
            steps=0,
            message=message,
            exit_code=exit_code,
            host=self.spec.host,
        )
        self.view.post_message(EngineEvent(self.result))

    async def run(self) -> RunFinished | None:
        """Connect, run the skill to its end; every event reaches the transcript and the view.

        The choices are the config's (a form has no flags): the host's policy from config,
        else ask; the skill's limits, else the config's.
        """
        spec = self.spec
        runner = await self._connect()
        if runner is None:
            return self.result
        ready = prepare_run(
            spec.skill,
            spec.params,
            runner,
            settings=self.settings,
            prompts=self.prompts,
            operator=self.operator,
            redactor=self.redactor,
            show=self._emit_to_view,
            choices=RunChoices(prompt=spec.prompt),
            transcript=spec.transcript,
            early=list(spec.early),
            run_id=self.run_id,
        )
        self.transcript_path = ready.path
        self.session = ready.session
        try:
            self.result = await ready.run()
        except BaseException:
            # Cancelled (the app quits): the session wrote its `aborted` result already.
            self.result = self.session.result or RunFinished(
                status="aborted", steps=0, message="interrupted", exit_code=EXIT_INTERRUPTED
            )
            raise
        return self.result
