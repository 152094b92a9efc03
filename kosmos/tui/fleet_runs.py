"""One skill on many hosts from the TUI: what the operator started and the fleet's parts.

The fleet core (`kosmos.fleet`) runs a session per host. `FleetController.run` runs in the
fleet's own thread (`fleet_thread`); each host's events, and each question for the operator,
reach the screen through its `Outbox` (`fleet_feed`).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kosmos.config import Settings
from kosmos.engine.session import Session
from kosmos.events import Event, Notice
from kosmos.fleet.approvals import ApprovalBroker
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
from kosmos.tui.fleet_feed import HostFeed, TuiFleetDesk
from kosmos.tui.fleet_thread import Outbox

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


@dataclass
class FleetController:
    """Owns one fleet run: its sessions, the broker, the transcripts in one run directory."""

    spec: FleetSpec
    settings: Settings
    prompts: Prompts
    prompter: HostPrompter
    redactor: Redactor
    feeds: dict[str, HostFeed]
    outbox: Outbox
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
        self.desk = TuiFleetDesk(self.outbox, self.prompter, self.redactor, self.answer_all)
        self.broker = ApprovalBroker(self.desk)
        self.desk.broker = self.broker

    def _runner(self, spec: HostSpec) -> Runner:
        if self.open_runner is not None:
            return self.open_runner(spec)
        assert self.broker is not None

        def notify(message: str) -> None:
            self.outbox.put(Notice(message=self.redactor(message), host=spec.name))

        return make_runner(
            spec.target,
            self.settings,
            prompter=self.broker.desk_for(spec.name),
            notify=notify,
            ssh_config=self.ssh_config,
            passphrases=self.passphrases,
        )

    async def run(self) -> FleetFinished:
        """Run every host to its end; each host's events reach its file and the screen.
        (In the fleet's thread.)"""
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
                self.outbox.put(event)

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
