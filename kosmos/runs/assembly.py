"""From a request to a ready session, below every front end.

A front end resolves what the operator asked for (`RunChoices`), connects the host, finds
the skill and its parameters, and calls `prepare_run` with its operator and the function
that shows an event. What it gets back owns the session, the transcript and the LLM client;
the front end only drives it (signals, keys) and renders its events. Nothing here prints,
reads a terminal or installs a signal handler.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from msgspec.structs import replace

from kosmos.config import Settings
from kosmos.engine.approval import Policy
from kosmos.engine.guard import redact_event
from kosmos.engine.operator import Operator
from kosmos.engine.session import Session, SessionOptions
from kosmos.errors import RecordError
from kosmos.events import Event, RunFinished, RunStarted
from kosmos.hosts.runner import Runner
from kosmos.llm.provider import Provider
from kosmos.prompts import Prompts
from kosmos.runs.policy import resolve_policy
from kosmos.safety import Redactor
from kosmos.seal import key_bytes
from kosmos.skills.model import Skill
from kosmos.transcript import Transcript, default_path

if TYPE_CHECKING:
    # A resumed or replayed run's parts: a fresh run never loads them.
    from kosmos.engine.resume import Resumed
    from kosmos.runs.replay import Replay

Show = Callable[[Event], None]


@dataclass(frozen=True)
class RunChoices:
    """What the operator chose for a run besides skill, parameters and host.

    None leaves it to the recorded run (resume), the skill's frontmatter, then the config.
    """

    max_steps: int | None = None
    command_timeout: float | None = None
    prompt: str | None = None
    protocol: str | None = None
    policy: Policy | None = None  # --policy
    yes: bool = False  # --yes: the `auto` policy unless config pins the host
    allow_dangerous: bool = False
    non_interactive: bool = False


def session_options(
    skill: Skill,
    settings: Settings,
    choices: RunChoices,
    *,
    policy: Policy,
    resumed: RunStarted | None = None,
    replayed: RunStarted | None = None,
) -> SessionOptions:
    """How the run behaves: the operator's choices, the skill's, then the config's.

    `resumed`: a continued run keeps its step limit, history mode and prompt. The step
    protocol and memory come from a resumed or replayed run unless the operator names one.
    """
    recorded = resumed or replayed
    return SessionOptions(
        max_steps=choices.max_steps or (resumed.max_steps if resumed else settings.max_steps),
        command_timeout=choices.command_timeout or skill.timeout or settings.command_timeout,
        knowledge_timeout=settings.knowledge_timeout,
        history_mode=resumed.history_mode if resumed else skill.history_mode,
        history_max=skill.history_max,
        prompt=resumed.prompt if resumed else choices.prompt,
        non_interactive=choices.non_interactive,
        policy=policy,
        allow_dangerous=choices.allow_dangerous,
        protocol=(
            choices.protocol
            or (recorded.protocol if recorded else None)
            or skill.protocol
            or settings.protocol
        ),
        memory=settings.memory or (recorded.memory if recorded else False),
        memory_dir=settings.memory_dir,
    )


class TranscriptSink:
    """One run's transcript file. Events from before the run started (a parameter dialogue's
    turns, a notice while connecting) wait in `early` and are written right after
    `run_started`, redacted and tagged with its host. A path that cannot hold a file is a
    UsageError; a disk that stops taking events, a RecordError (once)."""

    def __init__(
        self,
        path: Path,
        redactor: Redactor,
        early: list[Event] | None = None,
        *,
        key: bytes | None = None,
    ) -> None:
        self.path = path
        self.redactor = redactor
        self.early = early if early is not None else []
        self._file = Transcript(path, key=key)

    def __call__(self, event: Event) -> None:
        self._file.write(event)
        if isinstance(event, RunStarted):
            for early in self.early:
                early = redact_event(early, self.redactor)
                self._file.write(replace(early, host=event.host))
            self.early.clear()

    def synced(self) -> Awaitable[None]:
        """Done once every event written so far is on the disk."""
        return self._file.synced()

    def close(self) -> None:
        self._file.close()


@dataclass
class ReadyRun:
    """A session ready to run, with the transcript and LLM client it owns."""

    session: Session
    transcript: TranscriptSink
    provider: Provider
    policy: Policy
    policy_from: str  # where the policy came from: `--policy`, `config hosts.X.policy`, ...
    resume: Resumed | None = None

    @property
    def path(self) -> Path:
        return self.transcript.path

    async def run(self) -> RunFinished:
        """Run the session to its end; the transcript and the LLM client are closed after."""
        try:
            return await self.session.run(self.resume)
        finally:
            await self.close()

    async def close(self) -> None:
        """Close the transcript (RecordError: its last events did not reach the disk) and the
        LLM client."""
        try:
            self.transcript.close()
        finally:
            await self.provider.aclose()


def prepare_run(
    skill: Skill,
    params: Mapping[str, str],
    runner: Runner,
    *,
    settings: Settings,
    prompts: Prompts,
    operator: Operator,
    redactor: Redactor,
    show: Show,
    choices: RunChoices | None = None,
    transcript: Path | None = None,
    early: list[Event] | None = None,
    run_id: str | None = None,
    resume: Resumed | None = None,
    replay: Replay | None = None,
) -> ReadyRun:
    """The session for `skill` on the connected `runner`, its transcript open.

    Every event goes to the transcript, then to `show`. `transcript`: the file (default: a
    new one under the transcript folder; a resumed run's own file). `early`: events from
    before the run, written after `run_started` (the list may still grow until then).
    A transcript the disk stops taking stops the session with that RecordError (exit 7).
    """
    choices = choices or RunChoices()
    run_id = run_id or uuid.uuid4().hex
    assert settings.transcript_dir is not None
    if resume is not None:
        path = transcript or Path(resume.source)
        same = path.resolve() == Path(resume.source).resolve()
        resume = dataclasses.replace(resume, same_transcript=same)
    else:
        path = transcript or default_path(settings.transcript_dir, skill.name, run_id)
    policy, policy_from = resolve_policy(
        settings, runner.name, flag=choices.policy, yes=choices.yes
    )
    options = session_options(
        skill,
        settings,
        choices,
        policy=policy,
        resumed=resume.started if resume else None,
        replayed=replay.recording.started if replay else None,
    )
    sink = TranscriptSink(path, redactor, early, key=key_bytes(settings.seal_key))

    def emit(event: Event) -> None:
        try:
            sink(event)
        except RecordError as e:
            session.stop(e)
        show(event)

    provider: Provider
    if replay is not None:
        from kosmos.runs.replay import replay_parts

        provider, operator = replay_parts(replay, operator)
    else:
        from kosmos.llm.factory import make_provider  # httpx: not for a screen that never runs one

        provider = make_provider(settings)
    session = Session(
        skill,
        params=params,
        runner=runner,
        provider=provider,
        operator=operator,
        prompts=prompts,
        emit=emit,
        options=options,
        run_id=run_id,
        transcript=str(path),
        redactor=redactor,
        synced=sink.synced,
    )
    if replay is not None:
        replay.attach(session)
    return ReadyRun(session, sink, provider, policy, policy_from, resume)
