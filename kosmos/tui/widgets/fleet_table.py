"""The fleet's host table: host, state, step, last command, elapsed, exit code."""

from __future__ import annotations

import time
from collections.abc import Sequence

from rich.text import Text
from textual.widgets import DataTable

from kosmos.engine.guard import visible
from kosmos.fleet.orchestrator import HostRun

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


def _short(text: str | None, width: int = COMMAND_WIDTH) -> str:
    if not text:
        return ""
    flat = visible(" ".join(text.split()), one_line=True)
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def row_of(run: HostRun, now: float) -> tuple[str, ...]:
    """One host's cells as plain text (what the table compares to skip unchanged cells)."""
    state = run.state + (" (replay)" if run.state == "running" and run.mode == "replay" else "")
    name = visible(run.name, one_line=True)
    return (
        f"{name} (canary)" if run.canary else name,
        state,
        str(run.step or ""),
        _short(run.last_command),
        f"{run.elapsed(now):.1f}s" if run.started else "",
        "" if run.last_exit is None else str(run.last_exit),
    )


class FleetTable(DataTable[Text | str]):
    """Redrawn from the fleet's live state by the screen's timer, changed cells only."""

    def __init__(self) -> None:
        super().__init__(id="fleet-table", cursor_type="row", zebra_stripes=False)
        self._rows: dict[str, tuple[str, ...]] = {}

    def on_mount(self) -> None:
        for name in COLUMNS:
            self.add_column(name.upper(), key=name)

    def update_runs(self, runs: Sequence[HostRun], now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        for run in runs:
            cells = row_of(run, now)
            old = self._rows.get(run.name)
            if old == cells:
                continue
            styled = [
                Text(cell, style=STATE_STYLES.get(run.state, "")) if i == 1 else cell
                for i, cell in enumerate(cells)
            ]
            if old is None:
                self.add_row(*styled, key=run.name)
            else:
                for i, column in enumerate(COLUMNS):
                    if cells[i] != old[i]:
                        self.update_cell(run.name, column, styled[i], update_width=True)
            self._rows[run.name] = cells

    def state_of(self, host: str) -> str:
        row = self._rows.get(host)
        return row[1] if row else ""

    @property
    def highlighted_host(self) -> str | None:
        if not self.row_count:
            return None
        key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key
        return str(key.value) if key.value is not None else None
