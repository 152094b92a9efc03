"""One skill on many hosts from the TUI: the fleet's parts, each host's feed, the fleet's desk.

The fleet core (`kosmos.fleet`) runs a session per host; here each host gets a `HostFeed` that
plays, for that host's `RunView`, the parts a single run's controller and operator play: the
batched output tail, the stop key, and the decision the view hands back.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from textual.message import Message
from textual.message_pump import MessagePump

from kosmos.config import Settings
from kosmos.engine.operator import Approval
from kosmos.engine.session import Session
from kosmos.errors import HostError, KosmosError
from kosmos.events import CommandOutput, Event, Notice
from kosmos.fleet.approvals import (
    AnswerRequest,
    ApprovalBroker,
    ApprovalRequest,
    FleetAnswer,
    FleetApproval,
)
from kosmos.fleet.journal import Journal
from kosmos.fleet.orchestrator import DEFAULT_FORKS, Fleet, SessionParts
from kosmos.fleet.results import FleetFinished
from kosmos.fleet.targets import HostSpec
from kosmos.hosts.factory import make_runner
from kosmos.hosts.passphrases import Passphrases
from kosmos.hosts.runner import HostPrompter, Runner
from kosmos.hosts.sshconfig import SSHConfigFile, local_user
from kosmos.llm.factory import make_provider
from kosmos.prompts import Prompts
from kosmos.runs.fleet import FleetRecorder, FleetSessions, fleet_run_dir, write_fleet_result
from kosmos.safety import Redactor
from kosmos.skills.model import Skill
from kosmos.tui.messages import (
    ApprovalNeeded,
    EngineEvent,
    OutputReady,
    QuestionNeeded,
    RetryNeeded,
)
from kosmos.tui.output import StepOutputs

RunnerFactory = Callable[[HostSpec], Runner]


@dataclass(frozen=True)
class FleetSpec:
    """What the operator started: a skill with its params on several hosts."""

    skill: Skill
    params: dict[str, str]
    hosts: list[HostSpec]
    forks: int = DEFAULT_FORKS
    llm_concurrency: int | None = None
    # The host that runs first; the others follow (replaying its run) only if it is done.
    canary: str | None = None


class HostFeed:
    """One host of the fleet as its `RunView` sees it: the controller and the operator."""

    def __init__(self, name: str, view: MessagePump) -> None:
        self.name = name
        self.view = view
        self.output = StepOutputs()
        self.session: Session | None = None
        self._pending: asyncio.Future[Any] | None = None
        self._wrap: Callable[[Any], Any] = lambda value: value

    # -- what RunView and the screen call ------------------------------------------------

    @property
    def command_running(self) -> bool:
        return self.session is not None and self.session.command_running

    def stop_command(self) -> bool:
        return self.session is not None and self.session.stop_command()

    @property
    def waiting(self) -> bool:
        return self._pending is not None and not self._pending.done()

    def resolve(self, value: Any) -> bool:
        """The view's answer (an Approval, a text, a bool), for this host only."""
        return self.settle(self._wrap(value))

    def settle(self, result: Any) -> bool:
        """Give the awaited result as the desk returns it (a FleetApproval for all hosts)."""
        if not self.waiting:
            return False
        assert self._pending is not None
        self._pending.set_result(result)
        return True

    # -- what the fleet calls --------------------------------------------------------------

    def emit(self, event: Event) -> None:
        if isinstance(event, CommandOutput):
            # Batched as in a single run: one queued message per burst, not per chunk.
            if self.output.feed(event.step, event.text):
                self.view.post_message(OutputReady(event.step))
            return
        self.view.post_message(EngineEvent(event))

    async def ask(self, message: Message, wrap: Callable[[Any], Any]) -> Any:
        self._pending = asyncio.get_running_loop().create_future()
        self._wrap = wrap
        self.view.post_message(message)
        try:
            return await self._pending
        finally:
            self._pending = None


class TuiFleetDesk:
    """The broker's front end in the TUI: each question goes to the asking host's run view;
    `on_request` tells the fleet screen what waits (for "Run on all N", "answer all")."""

    def __init__(
        self,
        feeds: dict[str, HostFeed],
        prompter: HostPrompter,
        redactor: Redactor,
        on_request: Callable[[ApprovalRequest | AnswerRequest | str | None], None],
        answer_all: Callable[[], bool] = lambda: False,
    ) -> None:
        self.feeds = feeds
        self.prompter = prompter
        self.redactor = redactor
        self.on_request = on_request
        # Read when the operator answers: the same answer for every host asking it?
        self.answer_all = answer_all
        self.current: ApprovalRequest | None = None

    async def decide(self, request: ApprovalRequest) -> FleetApproval:
        feed = self.feeds[request.proposal.host]
        self.current = request
        self.on_request(request)
        try:
            return await feed.ask(ApprovalNeeded(request.proposal), lambda a: FleetApproval(a))
        finally:
            self.current = None
            self.on_request(None)

    def run_on_all(self) -> bool:
        """Run the waiting command on every host proposing it; never for a dangerous one."""
        request = self.current
        if request is None or request.dangerous:
            return False
        return self.feeds[request.proposal.host].settle(FleetApproval(Approval.run(), "all"))

    async def answer(self, request: AnswerRequest) -> FleetAnswer:
        feed = self.feeds[request.host]
        self.on_request(request)

        def scoped(value: str | None) -> FleetAnswer:
            several = len(request.hosts) > 1
            return FleetAnswer(value, "all" if several and self.answer_all() else "host")

        try:
            return await feed.ask(QuestionNeeded(request.question), scoped)
        finally:
            self.on_request(None)

    async def ask_secret(self, host: str, prompt: str) -> str | None:
        return await self.prompter.ask_secret(f"{host}: {prompt}")

    async def retry(self, host: str, error: KosmosError) -> bool:
        kind = "host" if isinstance(error, HostError) else "LLM"
        reason = RetryNeeded(self.redactor(str(error)), kind)
        self.on_request(host)
        return bool(await self.feeds[host].ask(reason, bool))

    async def confirm_host_key(self, host: str, key_type: str, fingerprint: str) -> bool:
        return await self.prompter.confirm_host_key(host, key_type, fingerprint)


@dataclass
class FleetController:
    """Owns one fleet run: its sessions, the broker, the transcripts in one run directory."""

    spec: FleetSpec
    settings: Settings
    prompts: Prompts
    prompter: HostPrompter
    redactor: Redactor
    feeds: dict[str, HostFeed]
    on_request: Callable[[ApprovalRequest | AnswerRequest | str | None], None]
    answer_all: Callable[[], bool] = lambda: False
    open_runner: RunnerFactory | None = None
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    fleet: Fleet | None = None
    broker: ApprovalBroker | None = None
    desk: TuiFleetDesk | None = None
    run_dir: Path | None = None
    result: FleetFinished | None = None
    # ~/.ssh/config, read once for all the fleet's hosts.
    ssh_config: SSHConfigFile = field(
        default_factory=lambda: SSHConfigFile(Path.home() / ".ssh" / "config", local_user())
    )
    # Key passphrases typed in this session (in memory only), shared with single runs.
    passphrases: Passphrases = field(default_factory=Passphrases)

    def __post_init__(self) -> None:
        self.desk = TuiFleetDesk(
            self.feeds, self.prompter, self.redactor, self.on_request, self.answer_all
        )
        self.broker = ApprovalBroker(self.desk)

    def _runner(self, spec: HostSpec) -> Runner:
        if self.open_runner is not None:
            return self.open_runner(spec)
        assert self.broker is not None
        feed = self.feeds[spec.name]

        def notify(message: str) -> None:
            feed.emit(Notice(message=self.redactor(message), host=spec.name))

        return make_runner(
            spec.target,
            self.settings,
            prompter=self.broker.desk_for(spec.name),
            notify=notify,
            ssh_config=self.ssh_config,
            passphrases=self.passphrases,
        )

    async def run(self) -> FleetFinished:
        """Run every host to its end; each host's events reach its file and its run view."""
        spec, settings = self.spec, self.settings
        assert settings.transcript_dir is not None and self.broker is not None
        self.run_dir = fleet_run_dir(settings, spec.skill.name, self.run_id)
        journal = Journal(self.run_dir)
        provider = make_provider(settings)
        broker = self.broker

        # The config's choices, as a single TUI run takes them; each host its own policy.
        sessions = FleetSessions(
            spec.skill,
            spec.params,
            settings,
            self.prompts,
            self.redactor,
            journal,
            run_id=self.run_id,
        )
        recorder = FleetRecorder(sessions)

        def on_event(event: Event) -> None:
            recorder(event)
            if event.host is not None and event.host in self.feeds:
                self.feeds[event.host].emit(event)

        def make_session(parts: SessionParts) -> Session:
            session = sessions(parts)
            self.feeds[parts.host.name].session = session
            return session

        self.fleet = Fleet(
            spec.hosts,
            open_runner=self._runner,
            make_operator=lambda h: broker.desk_for(h.name),
            make_session=make_session,
            provider=provider,
            forks=spec.forks,
            llm_concurrency=spec.llm_concurrency,
            canary=spec.canary,
            on_event=on_event,
            redact=self.redactor,
            transcript_of=journal.path,
        )
        recorder.fleet = self.fleet
        try:
            self.result = await self.fleet.run()
        finally:
            await broker.aclose()
            journal.close()
            await provider.aclose()
            if self.fleet.result is not None:
                self.result = self.fleet.result
                write_fleet_result(self.run_dir, self.result)
        return self.result
