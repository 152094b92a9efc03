"""What the operator asked `kosmos run` for on the command line, one host or a fleet."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, cast

from kosmos.engine.approval import Policy
from kosmos.events import RunPlanned
from kosmos.runs.assembly import RunChoices

if TYPE_CHECKING:
    from kosmos.fleet.plan import FleetPlan


@dataclass
class RunRequest:
    """What the operator asked for on the command line."""

    skill: str | None
    host: str | None = None
    params: Sequence[str] = ()
    prompt: str | None = None
    answers: Sequence[str] = ()
    non_interactive: bool = False
    yes: bool = False
    json: bool = False
    max_steps: int | None = None
    command_timeout: float | None = None
    transcript: Path | None = None
    skills_dirs: Sequence[Path] = field(default_factory=tuple)
    policy: Policy | None = None
    allow_dangerous: bool = False
    resume: Path | None = None
    replay: str | None = None
    replay_tolerant: bool = False
    protocol: str | None = None
    # A fleet: every --host, a --hosts pattern, an inventory (issue: fleets).
    hosts: Sequence[str] = ()
    hosts_pattern: str | None = None
    inventory: Path | None = None
    forks: int = 10
    llm_concurrency: int | None = None
    canary: str | None = None
    # --canary-from: a finished run on one host that every host of this run replays.
    canary_from: Path | None = None
    # --shard K/N: this job takes only its share of the hosts (kosmos.fleet.shard).
    shard: str | None = None

    def choices(self) -> RunChoices:
        return RunChoices(
            max_steps=self.max_steps,
            command_timeout=self.command_timeout,
            prompt=self.prompt,
            protocol=self.protocol,
            policy=self.policy,
            yes=self.yes,
            allow_dangerous=self.allow_dangerous,
            non_interactive=self.non_interactive,
        )

    def planned(self, plan: RunPlanned) -> RunRequest:
        """`--resume` of a fleet host that never started: its planned run (the skill from where
        it was found, if it is still there), into the transcript being resumed."""
        path = Path(plan.skill_path)
        return dataclasses.replace(
            self,
            skill=str(path) if path.is_file() else plan.skill,
            resume=None,
            host=self.host or plan.target,
            prompt=plan.prompt,
            params=[f"{k}={v}" for k, v in plan.params.items()],
            transcript=self.transcript or self.resume,
        )

    def from_plan(self, plan: FleetPlan, directory: Path) -> RunRequest:
        """`--resume DIR` of a fleet: the run its plan recorded (the skill from where it was
        found, if it is still there), into the same directory; how to ask stays this run's."""
        path = Path(plan.skill_path)
        return dataclasses.replace(
            self,
            skill=str(path) if path.is_file() else plan.skill,
            resume=None,
            transcript=directory,
            params=[f"{k}={v}" for k, v in plan.params.items()],
            prompt=plan.prompt,
            policy=cast(Policy | None, plan.policy),
            forks=plan.forks,
            llm_concurrency=plan.llm_concurrency,
            max_steps=plan.max_steps,
            command_timeout=plan.command_timeout,
            protocol=plan.protocol,
            allow_dangerous=plan.allow_dangerous,
            canary=plan.canary,
            canary_from=Path(plan.canary_from) if plan.canary_from else None,
            shard=plan.shard,
        )

    @property
    def fleet(self) -> bool:
        """More than one host, a pattern, an inventory, a canary, a shard, or `--resume` of a
        fleet's directory: a fleet run."""
        return (
            (self.resume is not None and self.resume.is_dir())
            or len(self.hosts) > 1
            or self.hosts_pattern is not None
            or self.inventory is not None
            or self.canary is not None
            or self.canary_from is not None
            or self.shard is not None
        )
