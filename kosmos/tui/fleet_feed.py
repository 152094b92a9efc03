"""A fleet host as the screen keeps it: its story as data, and its view when it is shown.

The fleet runs on a thread of its own (`fleet_thread`); each host's events reach the screen
in order, with the questions it waits on (`fleet_wire.Ask`). A `HostFeed` keeps its host's
events as data (command output kept per step, bounded) and the question the host waits on,
and plays, for the one `RunView` built when the host is selected, the parts a single run's
controller and operator play: the host's story so far, then its events as they come, and the
decisions handed back.
"""

from __future__ import annotations

import json
import pickle
import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from textual.message import Message

from kosmos.events import (
    CommandFinished,
    CommandStarted,
    Event,
    RunFinished,
    event_type,
    parse_event,
)
from kosmos.tui.fleet_wire import Answer, Ask, Asked, Output, StopCommand, Told
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

# The `type`s of the events that start a command, and of those that end it.
STARTS = event_type(CommandStarted)
FINISHED = event_type(RunFinished)
ENDS = {event_type(CommandFinished), FINISHED}


def _message(ask: Ask) -> Message:
    """What a host's view shows for `ask`."""
    if ask.kind == "approval":
        return ApprovalNeeded(ask.payload)
    if ask.kind == "question":
        return QuestionNeeded(ask.payload)
    reason, kind = ask.payload
    return RetryNeeded(reason, kind)


# zlib's window (the most of a dictionary it uses), and how many dictionaries a fleet keeps.
WINDOW = 32 * 1024
DICTIONARIES = 4


class Packer:
    """Compresses the stories of one fleet's ended hosts, each against the longest story packed
    before it (zlib's preset dictionary): the hosts of a fleet tell much the same story (the
    same system prompt, skill and commands), so each packs to little more than what is its
    own. A story of 7.8 KB packs to 0.45 KB this way, against 2.4 KB alone (a 3-command skill,
    100 hosts).

    The first host to end is often one that could not be reached, whose short story would make
    a poor dictionary for all the rest: a story more than twice as long as the dictionary
    becomes the next one (at most `DICTIONARIES`, each at most zlib's window). A packed story
    starts with the number of the dictionary it was packed against."""

    def __init__(self) -> None:
        self._dictionaries: list[bytes] = []

    def pack(self, data: bytes) -> bytes:
        tail = data[-WINDOW:]
        known = self._dictionaries
        if len(known) < DICTIONARIES and (not known or len(tail) > 2 * len(known[-1])):
            known.append(tail)
        packer = zlib.compressobj(zdict=known[-1])
        return bytes([len(known) - 1]) + packer.compress(data) + packer.flush()

    def unpack(self, packed: bytes) -> bytes:
        unpacker = zlib.decompressobj(zdict=self._dictionaries[packed[0]])
        return unpacker.decompress(packed[1:]) + unpacker.flush()


class HostFeed:
    """One host of the fleet on the screen's side: its story as data, and its view if shown."""

    def __init__(self, name: str, packer: Packer | None = None) -> None:
        self.name = name
        self._packer = packer or Packer()
        # Sends to the fleet (an answer, the stop key), and reads the bar's "the same
        # answer for every host" box; both set when the fleet starts.
        self.send: Callable[[Any], bool] = lambda item: False
        self.answer_all: Callable[[], bool] = lambda: False
        # The host's events, slimmed, as the JSON lines the fleet sent, and its output per
        # step: parsed only when the host is shown. Once its run has ended, both are kept
        # compressed (`_packed`): a thousand finished hosts' stories stay small.
        self._story: list[str] = []
        self._kept: dict[int, str] = {}
        self._packed = b""
        self.view: RunView | None = None
        self.output = StepOutputs()
        self.command_running = False
        self.asking: Ask | None = None

    @property
    def events(self) -> list[Event]:
        """The host's events so far (as a view built now gets them)."""
        return [parse_event(json.loads(line)) for line in self._stored()[0]]

    def _stored(self) -> tuple[list[str], dict[int, str]]:
        """The host's story so far (its events' lines) and the newest output of each step."""
        if self._packed:
            return pickle.loads(self._packer.unpack(self._packed))
        return self._story, self._kept

    def _pack(self) -> None:
        """The ended run's story and output, compressed (a view unpacks them when built)."""
        self._packed = self._packer.pack(pickle.dumps(self._stored()))
        self._story, self._kept = [], {}

    # -- the view -------------------------------------------------------------------------

    def attach(self, view: RunView) -> None:
        """Show this host in `view`: its story so far, then what comes (and what it waits on)."""
        self.view = view
        # A feed plays, for the view, the parts a single run's controller and operator play
        # (the output tail, the decision handed back): the same calls, not the same classes.
        view.controller = self  # type: ignore[assignment]
        view.operator = self  # type: ignore[assignment]
        self.output = StepOutputs()
        story, kept = self._stored()
        for line in story:
            event = parse_event(json.loads(line))
            view.post_message(EngineEvent(event))
            if isinstance(event, CommandStarted) and event.step in kept:
                self.output.feed(event.step, kept[event.step])
                view.post_message(OutputReady(event.step))
        if self.asking is not None:
            view.post_message(_message(self.asking))

    def detach(self) -> None:
        self.view = None
        self.output = StepOutputs()

    # -- what the RunView calls -------------------------------------------------------------

    def stop_command(self) -> bool:
        return self.command_running and self.send(StopCommand(self.name))

    @property
    def waiting(self) -> bool:
        return self.asking is not None

    def resolve(self, value: Any) -> bool:
        """The view's answer (an Approval, a text, a bool), for this host only."""
        asking = self.asking
        if asking is None:
            return False
        self.asking = None
        return self.send(Answer(asking.id, value, self.answer_all()))

    # -- what the fleet sends ---------------------------------------------------------------

    def take(self, item: Told | Output) -> None:
        """One of the host's events, kept and (if the host is shown) passed to its view."""
        view = self.view
        if self._packed:  # more after the run's end (a retry): kept as it comes again
            self._story, self._kept = self._stored()
            self._packed = b""
        if isinstance(item, Output):
            kept = self._kept.get(item.step, "") + item.text
            self._kept[item.step] = kept[-KEPT_OUTPUT:]
            # Batched as in a single run: one queued message per burst, not per chunk.
            if view is not None and self.output.feed(item.step, item.text):
                view.post_message(OutputReady(item.step))
            return
        self._story.append(item.line)
        if item.type == STARTS:
            self.command_running = True
        elif item.type in ENDS:
            self.command_running = False
            if item.type == FINISHED:
                self._pack()
        if view is not None:
            view.post_message(EngineEvent(parse_event(json.loads(item.line))))

    def ask(self, ask: Ask) -> None:
        self.asking = ask
        if self.view is not None:
            self.view.post_message(_message(ask))

    def asked(self, done: Asked) -> None:
        """The fleet stopped waiting on this ask: whatever the view still offers is void."""
        if self.asking is not None and self.asking.id == done.id:
            self.asking = None
        view = self.view
        if view is not None and view.pending is not None and self.asking is None:
            view.pending = None
            view.post_message(RunStateChanged(view.id or ""))
