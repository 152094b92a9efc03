"""`kosmos run --resume DIR`: finish a fleet that was killed, from its plan and transcripts.

Hosts that never started (no transcript, a 0-byte or cut one) start; hosts that ended keep
their results; interrupted hosts go on as `--resume` of one run does. With a canary: one that
ended done is replayed from its transcript (as `--canary-from` does); one that ended otherwise
skips the hosts that never started; one that was interrupted resumes beside the others, as the
fleet goes on without a canary.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

from kosmos.engine.resume import Resumed, resume_state
from kosmos.errors import UsageError
from kosmos.fleet.canary import CanaryRecord
from kosmos.fleet.journal import host_file_name
from kosmos.fleet.orchestrator import Fleet
from kosmos.fleet.plan import FleetPlan, HostRecord, hold_plan, host_record, prepare, read_plan
from kosmos.prompts import Prompts
from kosmos.seal import verify_file


@dataclass
class FleetResume:
    """A killed fleet's plan and where each of its hosts stands."""

    directory: Path
    plan: FleetPlan
    records: dict[str, HostRecord]
    resumes: dict[str, Resumed] = field(default_factory=dict)
    canary_record: CanaryRecord | None = None  # the ended canary, replayed
    canary_host: str | None = None
    notes: list[str] = field(default_factory=list)
    hold: int | None = None  # the lock on the plan while this run drives the fleet (hold_plan)

    def count(self, state: str) -> int:
        return sum(1 for r in self.records.values() if r.state == state)

    def line(self) -> str:
        return (
            f"resuming the fleet in {self.directory}: {self.count('ended')} ended (kept), "
            f"{self.count('interrupted')} interrupted (resumed), {self.count('new')} not started"
        )

    def keep_ended(self, fleet: Fleet) -> None:
        """The ended hosts' results into `fleet`, which will not run them again."""
        for name, record in self.records.items():
            if record.state == "ended":
                fleet.keep(name, record.events)
        if self.canary_host is not None:
            fleet.runs[self.canary_host].canary = True


def load_fleet(directory: Path, prompts: Prompts, key: bytes | None) -> FleetResume:
    """The fleet run in `directory`, ready to finish; each host's file prepared to append to.
    UsageError when it cannot be resumed or has nothing left to do."""
    plan = read_plan(directory)
    hold = hold_plan(directory)
    try:
        return _load(directory, plan, hold, prompts, key)
    except BaseException:
        os.close(hold)
        raise


def _load(
    directory: Path, plan: FleetPlan, hold: int, prompts: Prompts, key: bytes | None
) -> FleetResume:
    records = {name: host_record(directory / host_file_name(name)) for name, _target in plan.hosts}
    state = FleetResume(directory, plan, records, hold=hold)
    if state.count("ended") == len(records) and (directory / "fleet.json").exists():
        raise UsageError(
            f"--resume {directory}: every host of this fleet ended; nothing to resume "
            f"(read it: kosmos log {directory})"
        )
    for name, record in records.items():
        path = directory / host_file_name(name)
        if record.state == "interrupted":
            resumed = resume_state(record.events, prompts, source=str(path))
            state.resumes[name] = replace(resumed, earlier=tuple(record.events))
        prepare(path, record)
    _canary(state, plan, key)
    return state


def _canary(state: FleetResume, plan: FleetPlan, key: bytes | None) -> None:
    if plan.canary is None:
        return
    record = state.records[plan.canary]
    result = record.result
    if record.state == "ended" and result is not None and result.status == "done":
        path = state.directory / host_file_name(plan.canary)
        replayed = CanaryRecord.from_transcript(record.events, str(path), plan.skill)
        replayed.trusted = verify_file(path, key).trust == "signed"
        state.canary_record, state.canary_host = replayed, plan.canary
    elif record.state == "interrupted":
        state.notes.append(
            f"the canary {plan.canary} was interrupted: it resumes beside the other hosts, "
            "which go on without a canary"
        )
    else:
        return  # not started: it goes first again; ended otherwise: the rest are skipped
    plan.canary = None
