"""Runs that start from a transcript: `--resume` continues one, `--replay` plays one again."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from kosmos.engine.operator import Operator
from kosmos.engine.resume import Resumed, never_started, resume_state
from kosmos.errors import UsageError
from kosmos.events import Event, Notice, RunPlanned
from kosmos.llm.provider import Provider
from kosmos.prompts import Prompts
from kosmos.resources import bundled_recording
from kosmos.transcript import read_transcript

if TYPE_CHECKING:
    from kosmos.engine.replay import Recording
    from kosmos.engine.session import Session


def load_events(path: Path, flag: str) -> list[Event]:
    """A transcript's events; UsageError naming `flag` when it cannot be read as one."""
    try:
        return read_transcript(path)
    except FileNotFoundError:
        raise UsageError(f"{path}: no such transcript; check {flag}") from None
    except UsageError as e:  # the file and line that is not a kosmos event
        raise UsageError(f"{e}; check {flag}") from None
    except OSError as e:
        raise UsageError(f"{path}: not a readable kosmos transcript ({e}); check {flag}") from e


@dataclass(frozen=True)
class Planned:
    """`--resume` of a fleet host whose run never started (unreachable, not started): the
    run as planned, to start anew into the same file, and the line that says so."""

    plan: RunPlanned
    note: str


def load_resume(path: Path, prompts: Prompts) -> Resumed | Planned:
    """Where the run recorded in `path` stopped (`--resume`), or the plan of a fleet host's
    run that never started."""
    events = load_events(path, "--resume")
    if (planned := never_started(events, str(path))) is not None:
        return Planned(*planned)
    return replace(resume_state(events, prompts, source=str(path)), earlier=tuple(events))


@dataclass
class Replay:
    """A recording to replay; `tolerant`: differences only warn; `bundled`: recorded on
    another machine, so its outputs differ by nature and one notice says so."""

    recording: Recording
    tolerant: bool = False
    bundled: bool = False

    def attach(self, session: Session) -> None:
        """Give the session the replay's gate and where its differences are told."""
        from kosmos.engine.replay import ReplayGate, ReplayProvider

        provider = session.provider
        assert isinstance(provider, ReplayProvider)
        session.replay_of = self.recording.source
        recorded = self.recording
        session.gate = ReplayGate(recorded.decided, session.gate, interrupted=recorded.interrupted)
        provider.warn = self._warner(session)

    def _warner(self, session: Session) -> Callable[[str], None]:
        """Where the replayed run's outputs differ: a notice each, or one for a bundled demo."""
        if not self.bundled:
            return lambda text: session.emit(Notice(message=text))
        shown = False

        def once(text: str) -> None:
            nonlocal shown
            if not shown:
                shown = True
                session.emit(
                    Notice(
                        message=f"{text}; expected: the recording was made on another host "
                        "(further differences are not shown)"
                    )
                )

        return once


def load_replay(ref: str, skill: str, *, tolerant: bool = False) -> Replay:
    """`--replay TRANSCRIPT` (or `bundled`) for a run of `skill`."""
    from kosmos.engine.replay import Recording

    path, bundled = Path(ref), ref == "bundled"
    if bundled:
        path, tolerant = bundled_recording(skill), True
        if not path.is_file():
            raise UsageError(
                f"no bundled recording for {skill}; "
                "try: kosmos run system-overview --replay bundled"
            )
    recording = Recording.from_events(load_events(path, "--replay"), str(path))
    if recording.started.skill != skill:
        raise UsageError(
            f"{path} records a run of {recording.started.skill}, not {skill}; "
            f"try: kosmos run {recording.started.skill} --replay {ref}"
        )
    return Replay(recording, tolerant, bundled)


def replay_parts(replay: Replay, operator: Operator) -> tuple[Provider, Operator]:
    """The recording's LLM, and an operator answering as the recorded one did."""
    from kosmos.engine.replay import ReplayOperator, ReplayProvider

    provider = ReplayProvider(replay.recording, tolerant=replay.tolerant)
    return provider, ReplayOperator(replay.recording.decided, operator)
