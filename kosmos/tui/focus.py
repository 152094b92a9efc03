"""Keys go where the focus was when they were pressed, not where the program moved it since.

A run's step takes the focus by itself when it starts to wait (a command to approve, a
question, a retry), so that its keys are the ones that apply. A key the operator pressed
before that moment was meant for what had the focus then, and may reach the app only after
the move when the screen is busy: an Enter meant for the fleet's host table ("open this
host") would run the asking host's command, an `s` skip it, and a second Enter pressed
quickly after approving one command would approve the next, which nobody has seen yet.

A key pressed just after the move is no answer either: the step is not on the screen until
the next frame, and nobody reads a command and decides within a fraction of a second of
seeing it. An operator moving down the table while a fleet's hosts ask in waves presses a
key every few tenths of a second, and would lose most of them to the step.

So a key pressed before the program moved the focus, or less than `REACT_S` after the frame
that showed it, never acts on the widget that took it (the app's own keys, `ctrl+q`, still
act). If the widget it was pressed on is still there and outside the run that took the focus (the
host table, the chat's input), the focus goes back there and the key with it: the operator
goes on where they were, and the run waits until they turn to it. If not (it was a step the
run has since left behind, or nothing), the key is dropped and the terminal's bell rings.

Textual stamps each key with `time.monotonic()` (its clock on every system but Windows) when
it reads it from the terminal.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from textual import events
from textual.app import App
from textual.widget import Widget

# Seconds after the frame that shows a step focused during which a key is not for it.
REACT_S = 0.3

# A frame held back longer than this (a fleet host's view being built) counts as drawn then.
SHOWN_AT_MOST_S = 1.0


@dataclass
class FocusTaken:
    """The focus the program moved last, by itself."""

    at: float  # when
    before: Widget | None  # what had the focus then
    taker: Widget  # what took it
    scope: Widget  # the run whose step took it
    shown_at: float | None = None  # when the frame that shows it was drawn

    def answers(self, pressed: float) -> bool:
        """Whether a key pressed at `pressed` can be an answer to what took the focus."""
        shown = self.shown_at if self.shown_at is not None else self.at + SHOWN_AT_MOST_S
        return pressed >= shown + REACT_S


class KeyRoutingApp(App[int]):
    """An app whose runs' steps take the focus through `take_focus`."""

    focus_taken: FocusTaken | None = None

    def take_focus(self, widget: Widget, scope: Widget) -> None:
        """Focus `widget` (in `scope`, a run's view) on the program's own account.

        Like `Widget.focus`, it happens in turn with the other focus moves asked for."""
        self.call_later(self._take_focus, widget, scope)

    def _take_focus(self, widget: Widget, scope: Widget) -> None:
        if not widget.is_attached:
            return
        screen = widget.screen
        before = screen.focused
        screen.set_focus(widget, scroll_visible=False)
        if screen.focused is widget and before is not widget:
            moved = self.focus_taken = FocusTaken(time.monotonic(), before, widget, scope)
            widget.call_after_refresh(self._shown, moved)

    @staticmethod
    def _shown(moved: FocusTaken) -> None:
        moved.shown_at = time.monotonic()

    @property
    def keys_settled(self) -> bool:
        """Whether a key pressed now goes where the focus is (no step has just taken it)."""
        moved = self.focus_taken
        return moved is None or moved.answers(time.monotonic())

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key) and not event.is_forwarded and not self._route(event):
            self.bell()
            return
        await super().on_event(event)

    def _route(self, key: events.Key) -> bool:
        """Give the focus back to where `key` was pressed if it is not for what took it;
        False: the key is dropped."""
        moved = self.focus_taken
        if moved is None:
            return True
        bound = self.active_bindings.get(key.key)
        if bound is not None and bound.binding.priority:
            return True  # the app's own key (quit), whatever has the focus
        if moved.answers(key.time) or self.screen.focused is not moved.taker:
            self.focus_taken = None  # pressed once it could be seen, or the focus moved again
            return True
        if not self._usable(moved):
            return False
        self.focus_taken = None
        self.screen.set_focus(moved.before, scroll_visible=False)
        return True

    def _usable(self, moved: FocusTaken) -> bool:
        """Whether the key can go back to where it was pressed."""
        before = moved.before
        return (
            before is not None
            and before.is_attached
            and before.screen is self.screen
            and before.focusable
            and moved.scope not in before.ancestors_with_self
        )
