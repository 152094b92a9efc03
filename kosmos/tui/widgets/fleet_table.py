"""The fleet's host table: host, state, step, last command, elapsed, exit code.

A fleet may have a thousand hosts; the table draws only the rows in view, each from the host's
live state when its line is drawn. Its `tick` compares the rows in view with what was drawn and
asks for those lines alone: the work per tick stays that of one screenful, whatever the fleet's
size, and column widths are fixed once, never measured again.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from kosmos.engine.guard import visible
from kosmos.tui.fleet_wire import RunRow

COLUMNS = ("host", "state", "step", "last command", "elapsed", "exit")
COMMAND_WIDTH = 40

STATE_STYLES = {
    "done": "green",
    "failed": "red",
    "error": "red",
    "unreachable": "red",
    "aborted": "red",
    "step_limit": "yellow",
    "needs_input": "yellow",
    "approval": "bold magenta",
    "question": "bold magenta",
    "running": "cyan",
    "queued": "dim",
    "skipped": "dim",
}

# Widths of the columns after the host's: the longest state ("running (replay)"), a step
# number, the command as `_short` cuts it, an elapsed time up to a day, an exit code.
FIXED_WIDTHS = (16, 4, COMMAND_WIDTH, 8, 4)
HOST_WIDTH = (4, 40)  # the host column's least and most
PAD = 1  # blank cells either side of each column


def _short(text: str | None, width: int = COMMAND_WIDTH) -> str:
    if not text:
        return ""
    flat = visible(" ".join(text.split()), one_line=True)
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def row_of(run: RunRow, now: float) -> tuple[str, ...]:
    """One host's cells as plain text (what the table compares to skip unchanged cells)."""
    state = run.state + (" (replay)" if run.state == "running" and run.mode == "replay" else "")
    name = visible(run.name, one_line=True)
    return (
        f"{name} (canary)" if run.canary else name,
        state,
        str(run.step or ""),
        _short(run.last_command),
        _elapsed(run, now),
        "" if run.last_exit is None else str(run.last_exit),
    )


def _elapsed(run: RunRow, now: float) -> str:
    if not run.started:
        return ""
    if run.finished is None:  # still counting: whole seconds, so the row changes once a second
        return f"{int(run.elapsed(now))}s"
    return f"{run.elapsed(now):.1f}s"


def _fit(text: str, width: int) -> str:
    return text.ljust(width) if len(text) <= width else text[: width - 1] + "…"


class FleetTable(ScrollView, can_focus=True):
    """One line per host under a fixed header; a cursor row that keys and the mouse move."""

    BINDINGS = [
        Binding("up", "cursor(-1)", "Up", show=False),
        Binding("down", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "edge(0)", "First host", show=False),
        Binding("end", "edge(1)", "Last host", show=False),
        Binding("enter", "select", "Open host", show=False),
    ]

    COMPONENT_CLASSES = {"fleet-table--header", "fleet-table--cursor"}

    DEFAULT_CSS = """
    FleetTable {
        background: $surface;
        height: auto;
        & > .fleet-table--header { text-style: bold; background: $panel; }
        & > .fleet-table--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
        }
        &:focus > .fleet-table--cursor {
            background: $block-cursor-background;
            color: $block-cursor-foreground;
            text-style: $block-cursor-text-style;
        }
    }
    """

    @dataclass
    class Highlighted(Message):
        """The cursor came to `host`'s row."""

        host: str

    @dataclass
    class Selected(Message):
        """Enter (or a click on the cursor's row) on `host`'s row."""

        host: str

    cursor_row: reactive[int] = reactive(0, layout=False, repaint=False)

    def __init__(self) -> None:
        super().__init__(id="fleet-table")
        self._runs: list[RunRow] = []
        self._rows: dict[str, int] = {}
        # What each row in view showed when its line was last drawn (row -> cells).
        self._drawn: dict[int, tuple[str, ...]] = {}
        self._widths: tuple[int, ...] = ()
        self._styles: dict[str, Style] = {k: Style.parse(v) for k, v in STATE_STYLES.items()}

    # -- data ---------------------------------------------------------------------------------

    def set_runs(self, runs: Sequence[RunRow]) -> None:
        """The hosts the table shows, in this order (their state is read as lines are drawn)."""
        self._runs = list(runs)
        self._rows = {run.name: i for i, run in enumerate(self._runs)}
        longest = max((len(run.name) for run in self._runs), default=0) + len(" (canary)")
        host = min(max(longest, HOST_WIDTH[0]), HOST_WIDTH[1])
        self._widths = (host, *FIXED_WIDTHS)
        width = sum(w + 2 * PAD for w in self._widths)
        self.virtual_size = Size(width, len(self._runs) + 1)
        self.cursor_row = min(self.cursor_row, max(len(self._runs) - 1, 0))
        self._drawn.clear()
        self.refresh()

    @property
    def row_count(self) -> int:
        return len(self._runs)

    def cells_of(self, host: str, now: float | None = None) -> tuple[str, ...]:
        """`host`'s row as the table shows it."""
        run = self._runs[self._rows[host]]
        return row_of(run, time.monotonic() if now is None else now)

    def state_of(self, host: str) -> str:
        row = self._rows.get(host)
        return row_of(self._runs[row], 0.0)[1] if row is not None else ""

    @property
    def highlighted_host(self) -> str | None:
        if not self._runs:
            return None
        return self._runs[self.cursor_row].name

    def visible_rows(self) -> range:
        """The rows in view now (the header takes the first line)."""
        top = round(self.scroll_offset.y)
        height = max(self.scrollable_content_region.height - 1, 0)
        return range(top, min(top + height, len(self._runs)))

    def tick(self, now: float | None = None) -> int:
        """Ask for the lines in view whose cells changed; returns how many."""
        now = time.monotonic() if now is None else now
        changed = 0
        for row in self.visible_rows():
            if self._drawn.get(row) != row_of(self._runs[row], now):
                self.refresh_line(row + 1)
                changed += 1
        return changed

    # -- drawing -------------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        if y == 0:
            style = self.get_component_rich_style("fleet-table--header")
            cells = tuple(name.upper() for name in COLUMNS)
            return self._strip(cells, width, style)
        row = round(self.scroll_offset.y) + y - 1
        if row >= len(self._runs):
            return Strip.blank(width, self.rich_style)
        run = self._runs[row]
        cells = row_of(run, time.monotonic())
        self._drawn[row] = cells
        base = self.rich_style
        if row == self.cursor_row:
            base = base + self.get_component_rich_style("fleet-table--cursor")
        state = self._styles.get(run.state)
        return self._strip(cells, width, base, state)

    def _strip(
        self, cells: tuple[str, ...], width: int, style: Style, state: Style | None = None
    ) -> Strip:
        pad = " " * PAD
        segments = []
        for i, (cell, w) in enumerate(zip(cells, self._widths, strict=False)):
            text = pad + _fit(cell, w) + pad
            segments.append(Segment(text, style + state if i == 1 and state else style))
        x = round(self.scroll_offset.x)
        return Strip(segments).crop(x, x + width).extend_cell_length(width, style)

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        self._drawn.clear()

    def watch_cursor_row(self, old: int, new: int) -> None:
        for row in (old, new):
            self.refresh_line(row + 1)
        self._keep_in_view(new)
        if self._runs:
            self.post_message(self.Highlighted(self._runs[new].name))

    def _keep_in_view(self, row: int) -> None:
        height = max(self.scrollable_content_region.height - 1, 1)
        top = round(self.scroll_offset.y)
        if row < top:
            self.scroll_to(y=row, animate=False, immediate=True)
        elif row >= top + height:
            self.scroll_to(y=row - height + 1, animate=False, immediate=True)

    # -- keys and the mouse --------------------------------------------------------------------

    def move_cursor(self, *, row: int) -> None:
        """Put the cursor on `row` (kept within the table)."""
        if self._runs:
            self.cursor_row = min(max(row, 0), len(self._runs) - 1)

    def action_cursor(self, delta: int) -> None:
        self.move_cursor(row=self.cursor_row + delta)

    def action_page(self, direction: int) -> None:
        page = max(self.scrollable_content_region.height - 2, 1)
        self.move_cursor(row=self.cursor_row + direction * page)

    def action_edge(self, end: int) -> None:
        self.move_cursor(row=len(self._runs) - 1 if end else 0)

    def action_select(self) -> None:
        host = self.highlighted_host
        if host is not None:
            self.post_message(self.Selected(host))

    async def _on_click(self, event: events.Click) -> None:
        y = event.get_content_offset(self)
        if y is None or y.y == 0:
            return
        row = round(self.scroll_offset.y) + y.y - 1
        if row >= len(self._runs):
            return
        if row == self.cursor_row:
            self.action_select()
        else:
            self.cursor_row = row
