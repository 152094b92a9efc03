"""A fleet host as the screen keeps it, and the fleet's desk that asks the screen across threads.

The fleet runs in a thread of its own (`fleet_thread`). Its `TuiFleetDesk` puts what it needs
from the operator into the screen's `Outbox`, with a way back; each host's events go the same
way, in order. On the screen's side, a `HostFeed` keeps its host's events as data (command
output kept per step, bounded) and the question the host waits on, and plays, for the one
`RunView` built when the host is selected, the parts a single run's controller and operator
play: the host's story so far, then its events as they come, and the decisions handed back.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from textual.message import Message

from kosmos.engine.operator import Approval
from kosmos.engine.session import Session
from kosmos.errors import HostError, KosmosError
from kosmos.events import (
    CommandFinished,
    CommandOutput,
    CommandStarted,
    Event,
    LLMReply,
    LLMRequest,
    RunFinished,
    parse_event,
)
from kosmos.fleet.approvals import (
    AnswerRequest,
    ApprovalBroker,
    ApprovalRequest,
    FleetAnswer,
    FleetApproval,
)
from kosmos.hosts.runner import HostPrompter
from kosmos.safety import Redactor
from kosmos.tui.fleet_thread import Outbox
from kosmos.tui.messages import (
    ApprovalNeeded,
    EngineEvent,
    OutputReady,
    QuestionNeeded,
    RetryNeeded,
    RunStateChanged,
)
from kosmos.tui.output import StepOutputs

if TYPE_CHECKING:
    from kosmos.tui.widgets.run_view import RunView

# The output of one step a host keeps for a view built later: the newest characters (the
# step's widget shows its last 500 lines; the transcript keeps head and tail of all of it).
KEPT_OUTPUT = 32 * 1024


@dataclass(frozen=True)
class Ask:
    """A host waits on the operator: `message` for its view; `answer` takes the value back."""

    host: str
    id: int
    message: Message
    answer: Callable[[Any], None]


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
class OnScreen:
    """A modal the fleet needs (a host key, a secret): `make` runs in the screen's loop."""

    make: Callable[[], Awaitable[Any]]
    reply: Callable[[Any, BaseException | None], None]


def _slim(event: Event) -> Event:
    """`event` as a view built later shows it: without the texts a view never shows (what the
    LLM was sent and answered, a command's output that `HostFeed.kept` already holds)."""
    if isinstance(event, LLMRequest):
        return event.model_copy(update={"new_messages": []})
    if isinstance(event, LLMReply):
        return event.model_copy(update={"content": "", "tool_calls": [], "usage": None})
    if isinstance(event, CommandFinished):
        return event.model_copy(update={"output": "", "sent_to_llm": ""})
    return event


class HostFeed:
    """One host of the fleet on the screen's side: its story as data, and its view if shown."""

    def __init__(self, name: str, call: Callable[..., bool] = lambda fn, *args: False) -> None:
        self.name = name
        # Runs a function in the fleet's loop (the stop key); replaced when the fleet starts.
        self.call = call
        # The host's events, slimmed, as JSON: a thousand hosts' stories stay small until one
        # is shown.
        self._story: list[str] = []
        self.kept: dict[int, str] = {}
        self.view: RunView | None = None
        self.output = StepOutputs()
        # Set from the fleet's thread when the host's session is built.
        self.session: Session | None = None
        self.asking: Ask | None = None
        self._wrap: Callable[[Any], Any] = lambda value: value

    @property
    def events(self) -> list[Event]:
        """The host's events so far (as a view built now gets them)."""
        return [parse_event(json.loads(line)) for line in self._story]

    # -- the view -------------------------------------------------------------------------

    def attach(self, view: RunView) -> None:
        """Show this host in `view`: its story so far, then what comes (and what it waits on)."""
        self.view = view
        # A feed plays, for the view, the parts a single run's controller and operator play
        # (the output tail, the decision handed back): the same calls, not the same classes.
        view.controller = self  # type: ignore[assignment]
        view.operator = self  # type: ignore[assignment]
        self.output = StepOutputs()
        for event in self.events:
            view.post_message(EngineEvent(event))
            if isinstance(event, CommandStarted) and event.step in self.kept:
                self.output.feed(event.step, self.kept[event.step])
                view.post_message(OutputReady(event.step))
        if self.asking is not None:
            view.post_message(self.asking.message)

    def detach(self) -> None:
        self.view = None
        self.output = StepOutputs()

    # -- what the RunView calls -------------------------------------------------------------

    @property
    def command_running(self) -> bool:
        return self.session is not None and self.session.command_running

    def stop_command(self) -> bool:
        session = self.session
        return session is not None and session.command_running and self.call(session.stop_command)

    @property
    def waiting(self) -> bool:
        return self.asking is not None

    def resolve(self, value: Any) -> bool:
        """The view's answer (an Approval, a text, a bool), for this host only."""
        asking = self.asking
        if asking is None:
            return False
        self.asking = None
        asking.answer(value)
        return True

    # -- what the fleet sends ---------------------------------------------------------------

    def take(self, event: Event) -> None:
        """One of the host's events, kept and (if the host is shown) passed to its view."""
        view = self.view
        if isinstance(event, CommandOutput):
            kept = self.kept.get(event.step, "") + event.text
            self.kept[event.step] = kept[-KEPT_OUTPUT:]
            # Batched as in a single run: one queued message per burst, not per chunk.
            if view is not None and self.output.feed(event.step, event.text):
                view.post_message(OutputReady(event.step))
            return
        self._story.append(_slim(event).model_dump_json())
        if isinstance(event, RunFinished):
            self.session = None  # let go of the finished run (the fleet has too)
        if view is not None:
            view.post_message(EngineEvent(event))

    def ask(self, ask: Ask) -> None:
        self.asking = ask
        if self.view is not None:
            self.view.post_message(ask.message)

    def asked(self, done: Asked) -> None:
        """The fleet stopped waiting on this ask: whatever the view still offers is void."""
        if self.asking is not None and self.asking.id == done.id:
            self.asking = None
        view = self.view
        if view is not None and view.pending is not None and self.asking is None:
            view.pending = None
            view.post_message(RunStateChanged(view.id or ""))


def _settle(future: asyncio.Future[Any], value: Any) -> None:
    if not future.done():
        future.set_result(value)


class TuiFleetDesk:
    """The broker's front end, in the fleet's thread: each question goes to the screen, named
    by its host, and the answer comes back into this loop."""

    def __init__(
        self,
        outbox: Outbox,
        prompter: HostPrompter,
        redactor: Redactor,
        answer_all: Callable[[], bool] = lambda: False,
    ) -> None:
        self.outbox = outbox
        self.prompter = prompter
        self.redactor = redactor
        # Read on the screen's side when the operator answers: the same answer for everyone?
        self.answer_all = answer_all
        self.broker: ApprovalBroker | None = None
        self.current: ApprovalRequest | None = None
        self._current: asyncio.Future[Any] | None = None
        self._ids = itertools.count(1)

    async def _ask(self, host: str, message: Message, wrap: Callable[[Any], Any]) -> Any:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()

        def answer(value: Any) -> None:  # the screen's thread
            result = wrap(value)
            with contextlib.suppress(RuntimeError):  # the fleet's loop has closed
                loop.call_soon_threadsafe(_settle, future, result)

        ask = Ask(host, next(self._ids), message, answer)
        self.outbox.put(ask)
        try:
            if isinstance(message, ApprovalNeeded):
                self._current = future
            return await future
        finally:
            self.outbox.put(Asked(host, ask.id))

    async def decide(self, request: ApprovalRequest) -> FleetApproval:
        self.current = request
        self.outbox.put(Waiting(request))
        try:
            return await self._ask(
                request.proposal.host, ApprovalNeeded(request.proposal), FleetApproval
            )
        finally:
            self.current = None
            self._current = None
            self.outbox.put(Waiting(None))

    def run_on_all(self, command: str, inferred: bool) -> int:
        """Run `command` on every host waiting on it and on those that propose it later (never
        a dangerous one); returns how many hosts it released now. In the fleet's loop."""
        if self.broker is None:
            return 0
        released = self.broker.decide_all(command, Approval.run(), inferred=inferred)
        current, future = self.current, self._current
        same = current is not None and (current.proposal.command, current.proposal.inferred) == (
            command,
            inferred,
        )
        if same and current is not None and not current.dangerous and future is not None:
            _settle(future, FleetApproval(Approval.run(), "all"))
        return released

    async def answer(self, request: AnswerRequest) -> FleetAnswer:
        self.outbox.put(Waiting(request))

        def scoped(value: str | None) -> FleetAnswer:
            several = len(request.hosts) > 1
            return FleetAnswer(value, "all" if several and self.answer_all() else "host")

        try:
            return await self._ask(request.host, QuestionNeeded(request.question), scoped)
        finally:
            self.outbox.put(Waiting(None))

    async def retry(self, host: str, error: KosmosError) -> bool:
        kind = "host" if isinstance(error, HostError) else "LLM"
        reason = RetryNeeded(self.redactor(str(error)), kind)
        self.outbox.put(Waiting(host))
        return bool(await self._ask(host, reason, bool))

    async def ask_secret(self, host: str, prompt: str) -> str | None:
        return await self._on_screen(lambda: self.prompter.ask_secret(f"{host}: {prompt}"))

    async def confirm_host_key(self, host: str, key_type: str, fingerprint: str) -> bool:
        return bool(
            await self._on_screen(
                lambda: self.prompter.confirm_host_key(host, key_type, fingerprint)
            )
        )

    async def _on_screen(self, make: Callable[[], Awaitable[Any]]) -> Any:
        """Await `make()` in the screen's loop (a modal), from the fleet's."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()

        def reply(value: Any, error: BaseException | None) -> None:  # the screen's thread
            def settle() -> None:
                if future.done():
                    return
                if error is not None:
                    future.set_exception(error)
                else:
                    future.set_result(value)

            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(settle)

        self.outbox.put(OnScreen(make, reply))
        return await future
