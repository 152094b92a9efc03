"""An SVG snapshot of the fleet screen's end: the host table, the summary, a host's run view.

Durations and transcript paths differ run to run: fixed ones are shown in their place.
Update after a deliberate change of the look: `pytest tests/test_tui_fleet_snapshot.py
--snapshot-update`, then review the SVG.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Static

from kosmos.tui.widgets.fleet_approval import SummaryTable
from kosmos.tui.widgets.step_head import StepHead
from tests.llmserver import ScriptedLLM
from tests.test_tui_fleet import fleet_app, fleet_done, start_fleet, waiting_on
from tests.tuihelpers import until

SIZE = (120, 40)


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _mask(pilot: Pilot) -> None:
    screen = pilot.app.screen
    for run in screen.fleet_runs:
        run.started = run.finished = 1.0  # elapsed: 0.0s
    screen.table.tick()
    table = screen.query_one(SummaryTable)
    lines = [re.sub(r"\d+\.\ds", "0.0s", line) for line in table.lines]
    table.clear()
    table.write_lines(lines)
    screen.query_one("#summary-stats", Static).update("duration: 0.0 s · exit code: 0")
    for view in [screen.view]:
        view.query_one("#run-title", Static).update(view.run_title)
        for step in view.query(".cmd-step"):
            step.query_one(StepHead).set_state("exit 0 · 0.0 s · 3 B", "ok")
        for stats in view.query(".done-card .stats"):
            if "duration" in str(stats.render()):
                stats.update("steps: 2 · duration: 0.0 s · commands run: 1 · exit code: 0")
            else:
                stats.update(f"transcript: {view.run_title.split()[-1]}.jsonl")


def test_fleet_summary(snap_compare, llm: ScriptedLLM, home: Path, here: Path) -> None:
    llm.default = lambda record: "[CMD] echo ok" if len(record.messages) < 4 else "[DONE] fine"
    app = fleet_app(llm, home, ["web1", "web2"])
    # One host at a time: each is asked in turn, so both views look the same run to run.
    app.config.forks = 1

    async def run_before(pilot: Pilot) -> None:
        await start_fleet(pilot, app)
        for host in ("web1", "web2"):

            def asked(host: str = host) -> bool:
                request = app.screen.bar.request
                return request is not None and request.proposal.host == host

            await until(pilot, asked, f"echo waiting on {host}")
            await until(pilot, waiting_on(app, "echo ok", 1), f"{host}'s step focused")
            await pilot.press("enter")
        await until(pilot, fleet_done(app), "the summary")
        screen = app.screen
        screen.table.focus()
        screen.table.move_cursor(row=0)
        screen.show_host("web1")
        await until(pilot, lambda: screen.view.result is not None, "web1's run view built")
        await pilot.pause()
        _mask(pilot)
        # The footer shows the keys of where the focus is now, not of a step that had it.
        app.screen.refresh_bindings()
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
