"""Helpers for fleet tests: hosts as local directories, a scripted LLM that knows each host."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kosmos.config import Settings
from kosmos.engine.operator import Operator
from kosmos.engine.session import Session, SessionOptions
from kosmos.events import Event
from kosmos.fleet.orchestrator import Fleet, SessionParts
from kosmos.fleet.results import FleetFinished, HostSummary
from kosmos.fleet.targets import HostSpec
from kosmos.hosts.local import LocalRunner
from kosmos.hosts.runner import Runner
from kosmos.llm.factory import make_provider
from kosmos.prompts import Prompts
from tests.helpers import ScriptOperator, make_skill
from tests.llmserver import Recorded

KNOWLEDGE = ".kosmos-panel/ai_system_promt.md"


def host_dirs(root: Path, names: Sequence[str], codes: dict[str, int] | None = None) -> Path:
    """One working directory per host; its knowledge file names the host for the LLM."""
    for name in names:
        d = root / name
        (d / ".kosmos-panel").mkdir(parents=True)
        (d / KNOWLEDGE).write_text(f"host: {name}\n")
        (d / "code").write_text(str((codes or {}).get(name, 0)))
    return root


def host_of(record: Recorded) -> str:
    m = re.search(r"host: (\S+)", record.system)
    return m.group(1) if m else "?"


def steps_of(record: Recorded) -> int:
    return sum(1 for m in record.messages if m["role"] == "user")


# What the scripted LLM says at each step of a 3-command skill; the last reply is [DONE].
THREE = ("[CMD] echo one", "[CMD] cat code; exit $(cat code)", "[CMD] pwd", "[DONE] all checked")


def scripted(replies: Sequence[str] = THREE, per_host: dict[str, Sequence[str]] | None = None):
    """A script item for `llm.default`: the step's reply, chosen by the request's length."""

    def reply(record: Recorded) -> str:
        script = (per_host or {}).get(host_of(record), replies)
        return script[min(steps_of(record), len(script)) - 1]

    return reply


@dataclass
class FleetRun:
    result: FleetFinished
    events: list[Event]
    operators: dict[str, Operator] = field(default_factory=dict)

    def of(self, host: str, kind: type | None = None) -> list:
        return [e for e in self.events if e.host == host and (kind is None or isinstance(e, kind))]

    def host(self, name: str) -> HostSummary:
        return next(h for h in self.result.hosts if h.host == name)


class Hosts:
    """Runner factory for hosts that are local directories (plus any the test adds)."""

    def __init__(self, root: Path, extra: dict[str, Callable[[HostSpec], Runner]] | None = None):
        self.root = root
        self.extra = extra or {}

    def __call__(self, spec: HostSpec) -> Runner:
        if spec.name in self.extra:
            return self.extra[spec.name](spec)
        env = {**os.environ, "FLEET_HOST": spec.name, "HOME": str(self.root / spec.name)}
        return LocalRunner(cwd=self.root / spec.name, env=env)


class FallsOver:
    """A host opener that cannot reach the TUI's fleet: unpickled on its thread, it raises,
    and that thread ends with a traceback, as a crash of it would."""

    def __reduce__(self) -> tuple[Callable[[str], None], tuple[str]]:
        return _fall_over, ("the fleet fell over on arrival",)

    def __call__(self, spec: HostSpec) -> Runner:
        raise AssertionError("never called")


def _fall_over(message: str) -> None:
    raise RuntimeError(message)


async def run_fleet(
    base_url: str,
    names: Sequence[str],
    *,
    open_runner: Callable[[HostSpec], Runner],
    make_operator: Callable[[HostSpec], Operator] | None = None,
    forks: int = 10,
    llm_concurrency: int | None = None,
    canary: str | None = None,
    options: SessionOptions | None = None,
) -> FleetRun:
    """Run a probe skill on `names` with the scripted LLM at `base_url`."""
    provider = make_provider(Settings(base_url=base_url, llm_retries=0))
    prompts = Prompts.load()
    skill = make_skill()
    events: list[Event] = []
    operators: dict[str, Operator] = {}

    def operator(spec: HostSpec) -> Operator:
        op = make_operator(spec) if make_operator else ScriptOperator()
        operators[spec.name] = op
        return op

    def session(parts: SessionParts) -> Session:
        return Session(
            skill,
            params={},
            runner=parts.runner,
            provider=parts.provider,
            operator=parts.operator,
            prompts=prompts,
            emit=parts.emit,
            options=options or SessionOptions(non_interactive=True),
        )

    fleet = Fleet(
        [HostSpec(n, n) for n in names],
        open_runner=open_runner,
        make_operator=operator,
        make_session=session,
        provider=provider,
        forks=forks,
        llm_concurrency=llm_concurrency,
        canary=canary,
        on_event=events.append,
    )
    try:
        result = await fleet.run()
    finally:
        await provider.aclose()
    return FleetRun(result, events, operators)
