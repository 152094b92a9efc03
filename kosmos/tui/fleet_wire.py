"""What crosses between the fleet's thread and the screen: small picklable records.

The fleet runs on a thread and a loop of its own (`fleet_thread`), so that a host's next step
never waits for a frame to be drawn, nor a key for a hundred key exchanges. The fleet sends its
events, in order, and these records; the screen answers with the commands at the bottom. Both
go over a `Link`, pickled. Nothing here imports Textual.
"""

from __future__ import annotations

import asyncio
import pickle
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import msgspec
from msgspec.structs import replace

from kosmos.config import Settings
from kosmos.events import CommandFinished, CommandOutput, Event, LLMReply, LLMRequest
from kosmos.fleet.approvals import AnswerRequest, ApprovalRequest
from kosmos.fleet.orchestrator import DEFAULT_FORKS, HostRun
from kosmos.fleet.results import FleetFinished
from kosmos.fleet.targets import HostSpec
from kosmos.prompts import Prompts
from kosmos.safety import Redactor
from kosmos.skills.model import Skill

# How often (seconds) the fleet sends the table's changed rows, and the screen redraws the rows
# in view, while the fleet runs.
ROWS_S = 0.25
# How long the fleet gathers what it sends before it sends it: one wake-up of the screen
# for all that a busy fleet said in that time, not one for each turn of its loop.
SEND_S = 0.05

# -- what the operator started ------------------------------------------------------------------


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


@dataclass(frozen=True)
class FleetJob:
    """Everything the fleet's process needs to run `spec` (sent once, when it starts)."""

    spec: FleetSpec
    settings: Settings
    prompts: Prompts
    redactor: Redactor
    run_id: str
    run_dir: Path  # where the transcripts go
    # Key passphrases typed earlier in this TUI session (in memory only, never written).
    passphrases: dict[Path, str] = field(default_factory=dict, repr=False)
    # Tests open their hosts through this (a picklable callable) instead of SSH.
    open_runner: Any = None


# -- from the fleet to the screen ----------------------------------------------------------------


def slim(event: Event) -> Event:
    """`event` as the screen needs it: without the texts a host's view never shows (what the
    LLM was sent, bar the system prompt, and what it answered; a command's output, which
    reaches the screen as `Output` already)."""
    if isinstance(event, LLMRequest):
        system = [m for m in event.new_messages if m.role == "system"]
        return replace(event, new_messages=system)
    if isinstance(event, LLMReply):
        return replace(event, content="", tool_calls=[], usage=None)
    if isinstance(event, CommandFinished):
        return replace(event, output="", sent_to_llm="")
    return event


@dataclass(frozen=True, slots=True)
class Told:
    """One of a host's events, slimmed, as its JSON line: the screen keeps the text and parses
    it only for the host it shows (a model rebuilt per event would cost the screen's loop more
    than the frame it is drawing)."""

    host: str
    type: str  # the event's `type`
    line: str


@dataclass(frozen=True, slots=True)
class Output:
    """A chunk of a host's command output (`CommandOutput`)."""

    host: str
    step: int
    text: str


def told(event: Event) -> Told | Output:
    """A host's event as it crosses to the screen."""
    assert event.host is not None
    if isinstance(event, CommandOutput):
        return Output(event.host, event.step, event.text)
    return Told(event.host, event.type, msgspec.json.encode(slim(event)).decode())


@dataclass
class RunRow:
    """One host's row in the fleet table: a copy of its `HostRun`, as the screen draws it."""

    name: str
    state: str = "queued"
    mode: str = "llm"
    canary: bool = False
    step: int = 0
    last_command: str | None = None
    last_exit: int | None = None
    started: float | None = None
    finished: float | None = None

    @classmethod
    def of(cls, run: HostRun) -> RunRow:
        return cls(
            run.name,
            run.state,
            run.mode,
            run.canary,
            run.step,
            run.last_command,
            run.last_exit,
            run.started,
            run.finished,
        )

    def elapsed(self, now: float | None = None) -> float:
        # Both sides read the same monotonic clock.
        if self.started is None:
            return 0.0
        return (self.finished or now or time.monotonic()) - self.started


AskKind = Literal["approval", "question", "retry"]


@dataclass(frozen=True)
class Ask:
    """A host waits on the operator: an approval of `payload` (a proposal), an answer to it (a
    question), or a retry (`payload` is the reason and its kind); `Answer(id, …)` settles it."""

    host: str
    id: int
    kind: AskKind
    payload: Any


@dataclass(frozen=True)
class Asked:
    """The host no longer waits on ask `id` (answered, decided for all, or the run ended)."""

    host: str
    id: int


@dataclass(frozen=True)
class Waiting:
    """What the approval bar shows: a command, a question, a host's error card (its name)."""

    request: ApprovalRequest | AnswerRequest | str | None


@dataclass(frozen=True)
class Prompt:
    """A modal the fleet needs: a secret (`args`: host, prompt) or a host key (`args`: host,
    key type, fingerprint); `Reply(id, …)` answers it."""

    id: int
    kind: Literal["secret", "host_key"]
    args: tuple[str, ...]


@dataclass(frozen=True)
class Rows:
    """The rows that changed since the last `Rows`, what waits on the operator, grouped by
    command, and the hosts asking the question on the bar (if any)."""

    rows: list[RunRow]
    waiting: list[ApprovalRequest]
    asking: tuple[str, ...] = ()


@dataclass(frozen=True)
class Released:
    """`A` released `count` hosts waiting on `command` (the fleet's answer)."""

    command: str
    count: int


@dataclass(frozen=True)
class Kept:
    """A key passphrase typed for a fleet host, kept for the rest of the TUI session."""

    path: Path
    passphrase: str = field(repr=False)


@dataclass(frozen=True)
class Ended:
    """The fleet has ended: its result, or the internal error that stopped it (as text)."""

    result: FleetFinished | None
    error: str | None = None
    cancelled: bool = False


# -- from the screen to the fleet ----------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """The operator's answer to ask `id`; `all`: the same answer for every host asking it."""

    id: int
    value: Any
    all: bool = False


@dataclass(frozen=True)
class RunAll:
    """`A`: run `command` on every host waiting on it, and on those that propose it later."""

    command: str
    inferred: bool


@dataclass(frozen=True)
class StopCommand:
    host: str


@dataclass(frozen=True)
class Reply:
    """The answer to `Prompt(id)`; `error`: why the screen could not ask."""

    id: int
    value: Any
    error: str | None = None


@dataclass(frozen=True)
class Cancel:
    """End every host's run as aborted, then the fleet's thread."""


@dataclass(frozen=True)
class Fixed:
    """The hosts asking a question when it was sent (an `AnswerRequest.waiting` that pickles);
    the screen keeps it current from `Rows.asking`."""

    hosts: tuple[str, ...]

    def __call__(self) -> tuple[str, ...]:
        return self.hosts


class Link:
    """The way between the screen's thread and the fleet's. Every item crosses pickled, so
    neither side ever holds an object the other changes: the screen's items (the job, then
    answers and keys) reach the fleet's loop as calls there (`listen`); the fleet's batches
    reach `outbox`, which the screen drains."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        self._pending: list[bytes] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._deliver: Callable[[bytes], None] = lambda data: None
        self._open = True
        self.outbox: Callable[[bytes], None] = lambda data: None

    # -- the screen's side

    def send(self, item: Any) -> bool:
        """Send `item` to the fleet; False once the fleet or the screen has hung up."""
        data = pickle.dumps(item)
        with self._lock:
            if not self._open:
                return False
            return self._pass(data)

    def hang_up(self) -> None:
        """The screen has gone: the fleet ends as cancelled (a fleet not started, at once),
        and nothing more is sent to it."""
        with self._lock:
            if self._open:
                self._pass(pickle.dumps(Cancel()))
                self._open = False
            self._arrived.notify_all()

    def _pass(self, data: bytes) -> bool:
        if self._loop is None:  # the fleet is not listening yet: it takes these first
            self._pending.append(data)
            self._arrived.notify_all()
            return True
        try:
            self._loop.call_soon_threadsafe(self._deliver, data)
        except RuntimeError:  # its loop has closed
            return False
        return True

    # -- the fleet's side

    def job(self) -> Any:
        """The first item the screen sends (its `FleetJob`, or `Cancel` when it hung up first);
        None once the link is closed."""
        with self._lock:
            while self._open and not self._pending:
                self._arrived.wait()
            data = self._pending.pop(0) if self._pending else None
        return None if data is None else pickle.loads(data)

    def listen(self, loop: asyncio.AbstractEventLoop, take: Callable[[Any], None]) -> None:
        """From now on, each item the screen sends is `take`n in `loop` (the caller's)."""

        def deliver(data: bytes) -> None:
            take(pickle.loads(data))

        with self._lock:
            self._loop, self._deliver = loop, deliver
            pending, self._pending = self._pending, []
        for data in pending:
            loop.call_soon(deliver, data)

    def close(self) -> None:
        """The fleet has ended: the screen's sends fail from now on."""
        with self._lock:
            self._loop, self._open = None, False
            self._pending.clear()
            self._arrived.notify_all()

    def to_screen(self, items: list[Any]) -> None:
        """A batch for the screen."""
        self.outbox(pickle.dumps(items))
