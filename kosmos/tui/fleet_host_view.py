"""The one run view under a fleet's table: the shown host's run, built from its story.

A host's view is built when the host is shown, from the events its `HostFeed` keeps. Built in
plain sight, each of its steps would be laid out and drawn as it is mounted, a dozen frames for
one host; so it is built hidden (a hidden widget is neither laid out nor drawn), and takes the
shown view's place once it has caught up with the host's story, in one frame.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable
from typing import Literal

from textual.containers import Vertical
from textual.timer import Timer

from kosmos.tui.fleet_feed import HostFeed
from kosmos.tui.widgets.run_view import RunView

# Frames are held back for a view being built at most this long (seconds).
HOLD_AT_MOST_S = 1.0

# What a view takes the focus for once shown: nothing; what its run waits on, if it still
# waits on something then (a host that asked, whose question may be answered meanwhile); or
# the view itself where it waits on nothing (the operator opened it).
Focus = Literal["", "pending", "view"]
_RANK = {"": 0, "pending": 1, "view": 2}


class HostView:
    """Shows one host's run at a time in `box`."""

    def __init__(
        self,
        box: Callable[[], Vertical],
        feeds: dict[str, HostFeed],
        title: Callable[[str], str],
        on_shown: Callable[[], None] = lambda: None,
    ) -> None:
        self._box = box
        self.feeds = feeds
        self._title = title
        self._on_shown = on_shown
        self.view: RunView | None = None
        self.host: str | None = None
        # The view being built (hidden), its host, and what it takes the focus for when shown.
        self._coming: tuple[RunView, str, Focus] | None = None
        self._ids = itertools.count(1)
        # Frames held back while a view is built (each mount of its steps would make one).
        self._held = contextlib.ExitStack()
        self._hold_timer: Timer | None = None

    @property
    def coming(self) -> str | None:
        """The host whose view is being built, if one is."""
        return self._coming[1] if self._coming is not None else None

    def show(self, host: str, *, focus: Focus = "") -> None:
        """Show `host`'s run (built now, shown once it has caught up), then focus as `focus`
        says."""
        feed = self.feeds.get(host)
        if feed is None:
            return
        if self._coming is not None:
            view, coming, wants_focus = self._coming
            if coming == host:
                self._coming = (view, coming, max(wants_focus, focus, key=_RANK.__getitem__))
                return
            # Another host was asked for meanwhile: that one is not shown after all.
            self.feeds[coming].detach()
            view.remove()
            self._coming = None
        if host == self.host and self.view is not None and feed.view is self.view:
            self._focus(self.view, focus)
            return
        if self.host is not None:
            self.feeds[self.host].detach()  # its view stays on screen until the next is ready
        view = RunView(self._title(host), id=f"fleet-run-{next(self._ids)}")
        view.display = False
        box = self._box()
        if self._hold_timer is None:
            self._held.enter_context(box.app.batch_update())
            # However the build ends, the screen is drawn again within a second.
            self._hold_timer = box.set_timer(HOLD_AT_MOST_S, self._release)
        box.mount(view)
        feed.attach(view)
        self._coming = (view, host, focus)
        # Posted after the story's events: it runs once the view has handled all of them.
        view.call_later(self._caught_up, view)

    def _caught_up(self, view: RunView) -> None:
        if self._coming is None or self._coming[0] is not view:
            return  # replaced by another host's view meanwhile
        _, host, focus = self._coming
        self._coming = None
        self._release()
        old = self.view
        if old is not None:
            focused = old.app.focused
            if focus == "pending" and focused is not None and old in focused.ancestors_with_self:
                focus = "view"  # the focus is in the view that goes: it goes to this one
            old.remove()
        view.display = True
        self.view, self.host = view, host
        view.call_after_refresh(view.scroll_end, animate=False)
        self._focus(view, focus)
        self._on_shown()

    def let_a_frame_through(self) -> None:
        """A key changed the screen while a view is being built: draw one frame for it now,
        then hold frames again until the build ends (a key waits for no build)."""
        if self._hold_timer is None or self._coming is None:
            return
        self._held.close()
        box = self._box()
        box.call_after_refresh(self._hold_again, self._coming[0])

    def _hold_again(self, view: RunView) -> None:
        if self._hold_timer is not None and self._coming is not None and self._coming[0] is view:
            self._held.enter_context(view.app.batch_update())

    def close(self) -> None:
        """The screen goes: frames held back for a view being built are let go."""
        self._coming = None
        self._release()

    def _release(self) -> None:
        """Let the screen draw again."""
        if self._hold_timer is not None:
            self._hold_timer.stop()
            self._hold_timer = None
        self._held.close()

    @staticmethod
    def _focus(view: RunView, focus: Focus) -> None:
        # What the run waits on takes the focus; the view itself only when it waits on
        # nothing and was opened. Focusing a view restyles every step in it (a host's view
        # has dozens): a view that comes up for a question answered meanwhile leaves the
        # focus where it is. A host that asked takes it by itself: a key pressed before
        # then goes where it was pressed (kosmos.tui.focus).
        if view.pending is not None and focus:
            view.call_after_refresh(view.focus_pending, by_itself=focus == "pending")
        elif focus == "view":
            view.focus()
