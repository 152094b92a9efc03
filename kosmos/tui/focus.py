"""Keys go where the focus was when they were pressed, not where the program moved it since.

A run's step takes the focus by itself when it starts to wait (a command to approve, a
question, a retry), so that its keys are the ones that apply. A key the operator pressed
before that moment was meant for what had the focus then, and may reach the app only after
the move when the screen is busy: an Enter meant for the fleet's host table ("open this
host") would run the asking host's command, an `s` skip it, and a second Enter pressed
quickly after approving one command would approve the next, which nobody has seen yet.

So a key pressed before the program moved the focus never acts on the widget that took it.
If the widget it was pressed on is still there and outside the run that took the focus (the
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


@dataclass(frozen=True)
class _Moved:
    at: float  # when the program moved the focus
    before: Widget | None  # what had the focus then
    taker: Widget  # what took it
    scope: Widget  # the run whose step took it


class KeyRoutingApp(App[int]):
    """An app whose runs' steps take the focus through `take_focus`."""

    _moved: _Moved | None = None

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
            self._moved = _Moved(time.monotonic(), before, widget, scope)

    async def on_event(self, event: events.Event) -> None:
        moved = self._moved
        if moved is not None and isinstance(event, events.Key) and not event.is_forwarded:
            if event.time >= moved.at or self.screen.focused is not moved.taker:
                self._moved = None  # pressed after the move, or the focus has moved again
            elif self._usable(moved):
                self._moved = None
                self.screen.set_focus(moved.before, scroll_visible=False)
            else:
                self.bell()
                return
        await super().on_event(event)

    def _usable(self, moved: _Moved) -> bool:
        """Whether the key can go back to where it was pressed."""
        before = moved.before
        return (
            before is not None
            and before.is_attached
            and before.screen is self.screen
            and before.focusable
            and moved.scope not in before.ancestors_with_self
        )
