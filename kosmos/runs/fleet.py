"""A fleet's sessions: one skill on many hosts, each host's session built alike.

The fleet core (`kosmos.fleet`) opens each host and hands `FleetSessions` the host's parts;
the session it gets back runs under the host's own approval policy (config may pin a host
under its name or its target), with the run's choices and one transcript per host in the
run's directory, which `FleetRecorder` writes.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from msgspec import structs

from kosmos.config import Settings
from kosmos.engine.guard import redact_event
from kosmos.engine.resume import Resumed
from kosmos.engine.session import Session
from kosmos.errors import RecordError
from kosmos.events import Event, RunFinished, RunPlanned
from kosmos.fleet.journal import Journal, write_fleet_json
from kosmos.fleet.orchestrator import Fleet, SessionParts
from kosmos.fleet.results import FleetFinished
from kosmos.fleet.shard import Shard
from kosmos.prompts import Prompts
from kosmos.runs.assembly import RunChoices, session_options
from kosmos.runs.policy import resolve_policy
from kosmos.safety import Redactor
from kosmos.skills.model import Skill


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._@-]+", "_", name)[:80] or "host"


def fleet_run_dir(
    settings: Settings, skill: str, run_id: str, *, shard: Shard | None = None
) -> Path:
    """Where a fleet run's transcripts go: one new folder under the transcript folder, named
    for the skill, the run and (`--shard`) the share of the hosts this job takes."""
    assert settings.transcript_dir is not None
    stamp = time.strftime("%Y%m%d-%H%M%S")
    part = f"-shard-{shard.index}-of-{shard.total}" if shard else ""
    return settings.transcript_dir / f"{stamp}-{_safe(skill)}-fleet-{run_id[:8]}{part}"


def write_fleet_result(
    run_dir: Path, result: FleetFinished, journal: Journal | None = None
) -> None:
    """The fleet's result beside its transcripts (`fleet.json`), whole or not at all, sealed
    with the `journal`'s transcripts; a RecordError when the disk does not take it."""
    write_fleet_json(run_dir / "fleet.json", result, journal)


@dataclass
class FleetSessions:
    """The fleet's session factory (`Fleet(make_session=...)`): each host's session."""

    skill: Skill
    params: Mapping[str, str]
    settings: Settings
    prompts: Prompts
    redactor: Redactor
    journal: Journal
    choices: RunChoices = field(default_factory=RunChoices)
    run_id: str = ""
    # `--resume DIR`: the interrupted hosts' runs, each continued with what it started with.
    resumes: Mapping[str, Resumed] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # The skill file's warnings are said once for the fleet, not once per host.
        self.skill = structs.replace(self.skill, warnings=())
        # Alike on every host but for the approval policy.
        self.options = session_options(self.skill, self.settings, self.choices, policy="ask")

    def __call__(self, parts: SessionParts) -> Session:
        host = parts.host
        policy, _ = resolve_policy(
            self.settings,
            host.name,
            flag=self.choices.policy,
            yes=self.choices.yes,
            target=host.target,
        )
        options = replace(self.options, policy=policy)
        if (resume := self.resumes.get(host.name)) is not None:
            options = session_options(
                self.skill, self.settings, self.choices, policy=policy, resumed=resume.started
            )
        return Session(
            self.skill,
            params=self.params,
            runner=parts.runner,
            provider=parts.provider,
            operator=parts.operator,
            prompts=self.prompts,
            emit=parts.emit,
            options=options,
            run_id=f"{self.run_id}-{host.name}",
            transcript=str(self.journal.path(host.name)),
            redactor=self.redactor,
            synced=self.journal.synced,
        )


class FleetRecorder:
    """The fleet's events into each host's file in the run's directory (`Fleet(on_event=...)`
    calls it first; set `fleet` once the fleet is built).

    A host that never ran a session (unreachable, not started) keeps its plan (`run_planned`)
    before its result, so that `--resume` of its file starts it anew. A disk that stops taking
    events stops the fleet with that RecordError (exit 7): no more hosts start.
    """

    def __init__(self, sessions: FleetSessions) -> None:
        self.sessions = sessions
        self.fleet: Fleet | None = None

    def __call__(self, event: Event) -> None:
        fleet, journal = self.fleet, self.sessions.journal
        try:
            run = fleet.runs.get(event.host or "") if fleet is not None else None
            if isinstance(event, RunFinished) and run is not None and run.session is None:
                journal.write(self._planned(run.name, run.spec.target))
            journal.write(event)
        except RecordError as e:
            if fleet is None:
                raise
            fleet.stop(e)

    def _planned(self, host: str, target: str) -> Event:
        s = self.sessions
        plan = RunPlanned(
            host=host,
            skill=s.skill.name,
            skill_path=s.skill.path,
            params=dict(s.params),
            prompt=s.choices.prompt,
            target=target,
        )
        return redact_event(plan, s.redactor)
