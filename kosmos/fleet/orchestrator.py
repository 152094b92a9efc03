"""Run one skill on many hosts: a session per host, bounded forks and LLM concurrency.

The front end supplies the parts that differ per front end as factories (how to open a
host's runner, which operator a host gets, how to build a session) and receives every
event tagged with its host. `Fleet.runs` is the live state a table or a TUI shows.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from msgspec.structs import replace

from kosmos.engine.operator import Approval, CommandProposal, Operator, Question
from kosmos.engine.resume import Resumed
from kosmos.engine.session import Session
from kosmos.errors import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    HostError,
    KosmosError,
    RunStatus,
    UsageError,
)
from kosmos.events import (
    CommandDecision,
    CommandFinished,
    CommandStarted,
    Directive,
    Emit,
    Event,
    LLMRequest,
    RunFinished,
    RunStarted,
)
from kosmos.fleet.adapters import BoundedProvider, NamedRunner
from kosmos.fleet.canary import CanaryRecord, Replay
from kosmos.fleet.reports import OWN
from kosmos.fleet.results import FleetFinished, HostSummary, fleet_result
from kosmos.fleet.targets import HostSpec
from kosmos.hosts.runner import Runner
from kosmos.llm.provider import Provider

DEFAULT_FORKS = 10

HostState = Literal[
    "queued",
    "connecting",
    "thinking",
    "replaying",
    "approval",
    "question",
    "running",
    "done",
    "failed",
    "step_limit",
    "needs_input",
    "error",
    "aborted",
    "unreachable",
    "skipped",
]


@dataclass(frozen=True)
class SessionParts:
    """What the orchestrator hands the front end's session factory for one host."""

    host: HostSpec
    runner: Runner
    provider: Provider
    operator: Operator
    emit: Emit


RunnerFactory = Callable[[HostSpec], Runner]
OperatorFactory = Callable[[HostSpec], Operator]
SessionFactory = Callable[[SessionParts], Session]


@dataclass
class HostRun:
    """One host's live state in the fleet."""

    spec: HostSpec
    state: HostState = "queued"
    step: int = 0
    last_command: str | None = None
    last_exit: int | None = None
    started: float | None = None
    finished: float | None = None
    result: RunFinished | None = None
    replay: Replay | None = None
    session: Session | None = None
    canary: bool = False
    # The kernel lock as the host's run found it (RunStarted.lock), its policy, and how many
    # commands ran there unasked outside the lock.
    lock: str | None = None
    policy: str | None = None
    unlocked: int = 0
    pending_unasked: bool = False

    @property
    def name(self) -> str:
        return self.spec.name

    def elapsed(self, now: float | None = None) -> float:
        if self.started is None:
            return 0.0
        return (self.finished or now or time.monotonic()) - self.started

    @property
    def report_from(self) -> str:
        """What this host's report was made from: `own` outputs, or another host's name."""
        return self.replay.report_from if self.replay is not None else OWN

    @property
    def mode(self) -> str:
        """How the LLM drove this host: llm, canary, replay, or replay then llm."""
        if self.canary:
            return "canary"
        if self.replay is None:
            return "llm"
        return "replay" if self.replay.following else "diverged"


class _Tracked:
    """A host's operator that marks the host as waiting for a person while it asks."""

    def __init__(self, inner: Operator, run: HostRun) -> None:
        self.inner = inner
        self.run = run

    async def _waiting(self, state: HostState, call: Any) -> Any:
        before = self.run.state
        self.run.state = state
        try:
            return await call
        finally:
            if self.run.state == state:
                self.run.state = before

    async def approve(self, proposal: CommandProposal) -> Approval:
        return await self._waiting("approval", self.inner.approve(proposal))

    async def answer(self, question: Question) -> str | None:
        return await self._waiting("question", self.inner.answer(question))

    async def retry(self, error: KosmosError) -> bool:
        return await self.inner.retry(error)

    async def ask_secret(self, prompt: str) -> str | None:
        return await self._waiting("question", self.inner.ask_secret(prompt))


class Fleet:
    """Runs a session on every host, at most `forks` at once; with a canary, that host first."""

    def __init__(
        self,
        hosts: Sequence[HostSpec],
        *,
        open_runner: RunnerFactory,
        make_operator: OperatorFactory,
        make_session: SessionFactory,
        provider: Provider,
        forks: int = DEFAULT_FORKS,
        llm_concurrency: int | None = None,
        canary: str | None = None,
        canary_record: CanaryRecord | None = None,
        on_event: Emit | None = None,
        redact: Callable[[str], str] | None = None,
        skill: str | None = None,
        shard: str | None = None,
        transcript_of: Callable[[str], Any] | None = None,
        resumes: Mapping[str, Resumed] | None = None,
    ) -> None:
        if not hosts:
            raise UsageError("no hosts to run on; give --host, --hosts or -i INVENTORY")
        names = [h.name for h in hosts]
        if canary is not None and canary not in names:
            raise UsageError(
                f"--canary {canary}: not one of this run's hosts ({', '.join(names[:10])}"
                f"{', …' if len(names) > 10 else ''}); pick one of them"
            )
        self.hosts = list(hosts)
        self.open_runner = open_runner
        self.make_operator = make_operator
        self.make_session = make_session
        self.provider = BoundedProvider(provider, llm_concurrency or forks)
        self.forks = forks
        self.canary = canary
        # --canary-from: every host replays a finished run recorded on another host.
        self.canary_record = canary_record
        self.skill = skill
        self.shard = shard
        self.on_event = on_event
        # Sessions mask secrets in their own events; this masks the fleet's (connect errors).
        self.redact = redact or (lambda text: text)
        # Where each host's transcript is (named in results of hosts that never ran a session).
        self.transcript_of = transcript_of
        # `--resume DIR`: the hosts whose runs were interrupted go on from their transcripts.
        self.resumes = dict(resumes or {})
        self.runs = {h.name: HostRun(h, canary=h.name == canary) for h in hosts}
        # `stop`: the error that ended the fleet early (its record cannot be kept, say).
        self.stopped: KosmosError | None = None
        self._forks = asyncio.Semaphore(forks)
        self._started = 0.0
        self._finished: float | None = None
        self.result: FleetFinished | None = None

    # -- running -----------------------------------------------------------------------

    async def run(self) -> FleetFinished:
        """Run every host to its end; unreachable or failing hosts never stop the others.

        Cancelled (Ctrl-C), every host's run ends as aborted and `result` still holds the
        fleet's outcome, emitted like a finished one.
        """
        self._started = time.monotonic()
        try:
            if self.canary_record is not None:
                record = self.canary_record
                await _all([self._host(r, replay_of=record) for r in self.runs.values()])
            elif self.canary is None:
                await _all([self._host(r) for r in self.runs.values()])
            else:
                await self._with_canary(self.runs[self.canary])
        finally:
            self._finished = time.monotonic()
            for run in self.runs.values():
                if run.result is None and run.started is None:
                    self._not_started(run, self.stopped or "the fleet was interrupted")
                elif run.result is None:
                    self._end_without_session(
                        run, "aborted", EXIT_INTERRUPTED, "interrupted before it finished"
                    )
            self.result = self.summary()
            self._emit(self.result)
        return self.result

    def keep(self, name: str, events: Sequence[Event]) -> None:
        """`--resume DIR`: a host whose run ended before the fleet stopped keeps its result
        (from its transcript's events) and is not run again."""
        run = self.runs[name]
        for event in events:
            if isinstance(event, RunStarted | CommandFinished | RunFinished | CommandDecision):
                self._track(run, event)

    def stop(self, error: KosmosError) -> None:
        """End the fleet early with `error`: no more hosts start, and each host's run under
        way ends now, its command stopped as Ctrl-C stops it. `run` still returns the
        summary, whose exit code is the error's."""
        if self.stopped is not None:
            return
        self.stopped = error
        for run in self.runs.values():
            if run.session is not None and run.result is None:
                run.session.stop(error)

    def _not_started(self, run: HostRun, why: KosmosError | str) -> None:
        code = why.exit_code if isinstance(why, KosmosError) else EXIT_INTERRUPTED
        self._end_without_session(run, "skipped", code, f"not started: {why}")

    async def _with_canary(self, canary: HostRun) -> None:
        record = CanaryRecord(canary.name)
        await self._host(canary, record=record)
        others = [r for r in self.runs.values() if r is not canary]
        assert canary.result is not None
        if self.stopped is not None:
            return  # the others are reported as not started
        if canary.result.status != "done":
            for run in others:
                self._end_without_session(
                    run,
                    "skipped",
                    canary.result.exit_code,
                    f"not run: the canary {canary.name} ended {canary.result.status}",
                )
            return
        await _all([self._host(r, replay_of=record) for r in others])

    async def _host(
        self,
        run: HostRun,
        *,
        record: CanaryRecord | None = None,
        replay_of: CanaryRecord | None = None,
    ) -> None:
        if run.result is not None:  # ended in the run this one resumes
            return
        async with self._forks:
            if self.stopped is not None:
                return self._not_started(run, self.stopped)
            run.started = time.monotonic()
            run.state = "connecting"
            runner: Runner | None = None
            try:
                runner = self.open_runner(run.spec)
                if runner.name != run.name:
                    runner = NamedRunner(runner, run.name)
                await runner.connect()
            except KosmosError as e:
                unreachable = isinstance(e, HostError)
                status = "unreachable" if unreachable else e.status
                self._end_without_session(run, status, e.exit_code, str(e))
                if runner is not None:
                    await _close_quietly(runner)
                return
            except Exception as e:
                self._end_without_session(run, "error", EXIT_FAILED, f"{type(e).__name__}: {e}")
                if runner is not None:
                    await _close_quietly(runner)
                return
            if self.stopped is not None:
                await _close_quietly(runner)
                return self._end_without_session(
                    run, "skipped", self.stopped.exit_code, f"not started: {self.stopped}"
                )
            try:
                await self._session(run, runner, record, replay_of)
            except Exception as e:
                self._end_without_session(run, "error", EXIT_FAILED, f"{type(e).__name__}: {e}")
            finally:
                await _close_quietly(runner)

    async def _session(
        self,
        run: HostRun,
        runner: Runner,
        record: CanaryRecord | None,
        replay_of: CanaryRecord | None,
    ) -> None:
        emit = self._emitter(run, record)
        operator: Operator = _Tracked(self.make_operator(run.spec), run)
        provider: Provider = self.provider
        # A resumed host goes on from its own transcript: a replay would start at step 1.
        if replay_of is not None and run.name not in self.resumes:
            run.replay = Replay(replay_of, provider, operator, emit, host=run.name)
            provider, operator = run.replay.provider, run.replay.operator
        session = self.make_session(SessionParts(run.spec, runner, provider, operator, emit))
        if run.replay is not None:
            run.replay.attach(session)
        run.session = session
        try:
            await session.run(self.resumes.pop(run.name, None))
        finally:
            # Its result is in `run.result`: a thousand finished hosts' histories and runners
            # would only weigh on memory and on every garbage collection.
            run.session = None

    def _emitter(self, run: HostRun, record: CanaryRecord | None) -> Emit:
        def emit(event: Event) -> None:
            if event.host != run.name:
                event = replace(event, host=run.name)
            if isinstance(event, RunFinished):
                # A host's time in a fleet runs from its start, its connection included, in
                # its result as in its row and the fleet's summary (its session starts after).
                run.finished = time.monotonic()
                event = replace(event, duration_s=run.elapsed())
                if run.report_from != OWN and event.status == "done":
                    event = replace(event, report_from=run.report_from)
            self._track(run, event)
            if record is not None:
                record.observe(event)
            if run.replay is not None:
                run.replay.observe(event)
            self._emit(event)

        return emit

    def _emit(self, event: Event) -> None:
        if self.on_event is not None:
            self.on_event(event)

    def _track(self, run: HostRun, event: Event) -> None:
        match event:
            case LLMRequest():
                following = run.replay is not None and run.replay.following
                run.state = "replaying" if following else "thinking"
                run.step = event.step
            case Directive():
                run.step = event.step
            case CommandStarted():
                run.state = "running"
                run.last_command = event.command
            case CommandFinished():
                run.last_exit = event.exit_code
                if run.pending_unasked and not event.locked:
                    run.unlocked += 1
            case RunStarted():
                run.lock, run.policy = event.lock, event.policy
            case CommandDecision():
                run.pending_unasked = not event.asked and event.decision in ("run", "edit")
            case RunFinished():
                run.result = event
                run.state = event.status
            case _:
                pass

    def _end_without_session(
        self, run: HostRun, status: RunStatus, exit_code: int, message: str
    ) -> None:
        """A host that ended without a session result: unreachable, skipped, interrupted."""
        if run.result is not None:
            return
        run.finished = time.monotonic()
        where = self.transcript_of(run.name) if self.transcript_of is not None else None
        result = RunFinished(
            host=run.name,
            status=status,
            steps=run.step,
            message=self.redact(message),
            exit_code=exit_code,
            duration_s=run.elapsed(),
            transcript=None if where is None else str(where),
        )
        run.result = result
        run.state = status
        self._emit(result)

    # -- results -----------------------------------------------------------------------

    def summary(self) -> FleetFinished:
        """The fleet's outcome so far: every host's result, counts and the exit code."""
        hosts = []
        for run in self.runs.values():
            r = run.result
            hosts.append(
                HostSummary(
                    host=run.name,
                    target=run.spec.target,
                    status=r.status if r else run.state,
                    steps=r.steps if r else run.step,
                    duration_s=round(
                        run.elapsed() if run.started is not None or r is None else r.duration_s,
                        3,
                    ),
                    last_exit_code=run.last_exit,
                    exit_code=r.exit_code if r else EXIT_INTERRUPTED,
                    commands_run=r.commands_run if r else 0,
                    message=r.message if r else "",
                    mode=run.mode,
                    diverged_at_step=run.replay.diverged_at if run.replay else None,
                    transcript=r.transcript if r else None,
                    report_from=run.report_from if r and r.status == "done" else OWN,
                    lock=run.lock,
                    policy=run.policy,
                    unlocked_commands=run.unlocked,
                )
            )
        end = self._finished or time.monotonic()
        duration = end - self._started if self._started else 0.0
        return fleet_result(
            hosts, duration, skill=self.skill, shard=self.shard, stopped=self.stopped
        )


async def _all(coros: list[Coroutine[Any, Any, None]]) -> None:
    """Run the hosts' coroutines together; cancelled, wait until every host has cleaned up.

    A plain gather returns as soon as the first child is cancelled, while the others are still
    ending their commands; the process trees of those would outlive kosmos.
    """
    tasks = [asyncio.ensure_future(c) for c in coros]
    try:
        await asyncio.gather(*tasks)
    except asyncio.CancelledError:
        # gather has asked each host to stop once; a second request would cut short the
        # shielded clean-up of a command being ended.
        for task in tasks:
            if not task.done() and not task.cancelling():
                task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


async def _close_quietly(runner: Runner) -> None:
    try:
        await runner.close()
    except Exception:
        return
