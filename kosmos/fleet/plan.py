"""A fleet's plan: its hosts and parameters, written to its run directory before any host
starts, so that `kosmos run --resume DIR` can finish a fleet that was killed.

The plan (`fleet-plan.json`) is written whole (beside, fsynced, renamed, the directory
fsynced) before the first host connects. Each host's state after that is its transcript,
which the journal fsyncs as it goes: no transcript (or one without a whole `run_started`
line: 0 bytes, cut by a full disk) is a host that never started; a `run_finished` is a host
that ended (unreachable included; not `skipped`, `aborted` or stopped by a full disk);
anything else was interrupted, and resumes as `--resume` of one run does.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import msgspec

from kosmos.errors import EXIT_RECORD, RecordError, UsageError
from kosmos.events import Event, LLMRequest, RunFinished, RunStarted
from kosmos.fleet.targets import HostSpec
from kosmos.transcript import open_append, read_transcript

PLAN = "fleet-plan.json"


class FleetPlan(msgspec.Struct, kw_only=True):
    """What a fleet was asked to do; `kosmos run --resume DIR` does the same."""

    run_id: str
    skill: str
    skill_path: str
    params: dict[str, str]
    hosts: list[tuple[str, str]]  # (name, target)
    prompt: str | None = None
    policy: str | None = None
    forks: int = 10
    llm_concurrency: int | None = None
    max_steps: int | None = None
    command_timeout: float | None = None
    protocol: str | None = None
    allow_dangerous: bool = False
    canary: str | None = None
    canary_from: str | None = None
    shard: str | None = None
    version: int = 1

    def specs(self) -> list[HostSpec]:
        return [HostSpec(name, target) for name, target in self.hosts]


def write_plan(directory: Path, plan: FleetPlan) -> None:
    """The plan into `directory`, on the disk before this returns; RecordError otherwise."""
    path = directory / PLAN
    part = path.with_name(PLAN + ".part")
    data = msgspec.json.format(msgspec.json.encode(plan), indent=2) + b"\n"
    try:
        fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(part, path)
        dfd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError as e:
        with contextlib.suppress(OSError):
            part.unlink()
        raise RecordError(
            f"cannot write {path}: {e.strerror or e}; free space there, then run the fleet again"
        ) from None


def hold_plan(directory: Path) -> int:
    """A lock on the plan for as long as this run drives the fleet (it goes with the process):
    a `--resume` of a fleet that is still running is refused. The descriptor to close."""
    path = directory / PLAN
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        raise UsageError(f"--resume {directory}: no {PLAN} there") from None
    except OSError as e:
        raise UsageError(f"--resume {path}: {e.strerror or e}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise UsageError(
            f"--resume {directory}: that fleet is still running (another kosmos holds "
            f"{PLAN}); wait for it to end, then resume it if it did not finish"
        ) from None
    return fd


def read_plan(directory: Path) -> FleetPlan:
    """The plan of the fleet run in `directory`; UsageError saying what to do otherwise."""
    path = directory / PLAN
    try:
        return msgspec.json.decode(path.read_bytes(), type=FleetPlan)
    except FileNotFoundError:
        raise UsageError(
            f"--resume {directory}: no {PLAN} there; a fleet run by an older kosmos cannot be "
            "resumed whole, resume each host's HOST.jsonl with --resume FILE"
        ) from None
    except OSError as e:
        raise UsageError(f"--resume {path}: {e.strerror or e}") from None
    except msgspec.DecodeError as e:
        raise UsageError(f"--resume {path}: not a fleet plan ({e}); was it edited?") from None


HostState = Literal["new", "ended", "interrupted"]


@dataclass(frozen=True)
class HostRecord:
    """A host's state as its transcript left it."""

    state: HostState
    events: list[Event]

    @property
    def result(self) -> RunFinished | None:
        ends = [e for e in self.events if isinstance(e, RunFinished)]
        return ends[-1] if ends else None


def host_record(path: Path) -> HostRecord:
    """Where a host's run stands, from its transcript (`path`); a file that is not one is a
    UsageError naming it."""
    try:
        events = read_transcript(path)
    except FileNotFoundError:
        return HostRecord("new", [])
    except OSError as e:
        raise UsageError(f"--resume {path}: {e.strerror or e}") from None
    end = next((e for e in reversed(events) if isinstance(e, RunFinished)), None)
    if (
        end is not None
        and end.status not in ("aborted", "skipped")
        and end.exit_code != EXIT_RECORD
    ):
        return HostRecord("ended", events)  # unreachable hosts too: they ended so
    started = [e for e in events if isinstance(e, RunStarted)]
    if not started:  # 0 bytes, cut before its first whole line, or planned and not started
        return HostRecord("new", events)
    if not any(isinstance(e, LLMRequest) for e in events[events.index(started[-1]) :]):
        return HostRecord("new", events)  # stopped before its first LLM request
    return HostRecord("interrupted", events)


def prepare(path: Path, record: HostRecord) -> None:
    """Make a host's file ready to be appended to: a host that never started starts a new
    file; an interrupted one loses only a torn last line (killed mid-write)."""
    if not path.exists():
        return
    fd = open_append(path, "the transcript")  # refused while another run writes it
    try:
        whole = 0
        if record.state != "new":
            data = path.read_bytes()
            whole = data.rfind(b"\n") + 1
        os.ftruncate(fd, whole)
    except OSError as e:
        raise RecordError(f"cannot prepare {path} to resume: {e.strerror or e}") from None
    finally:
        os.close(fd)
