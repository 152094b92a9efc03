"""The fleet screen at scale, driven with Pilot: a table that draws only the rows in view, run
views built when a host is shown, `A` for every host waiting and later, a bounded summary, and
an app that stops waking up once the fleet has ended."""

from __future__ import annotations

from pathlib import Path

from textual.app import App, ComposeResult
from textual.widgets import Label

from kosmos.events import CommandDecision, CommandFinished
from kosmos.transcript import read_transcript
from kosmos.tui.fleet_wire import RunRow
from kosmos.tui.widgets.fleet_approval import FleetSummary, SummaryTable
from kosmos.tui.widgets.fleet_table import FleetTable
from kosmos.tui.widgets.run_view import RunView
from kosmos.tui.widgets.steps import Note
from tests.fleethelpers import FallsOver, scripted
from tests.llmserver import ScriptedLLM
from tests.test_tui_fleet import SIZE, fleet_app, fleet_done, fleet_screen, start_fleet, waiting_on
from tests.tuihelpers import processes_running, running_timers, until

HOSTS = 5000


class SeenTable(FleetTable):
    """The table, noting which host rows it drew (it draws them as it always does)."""

    def __init__(self) -> None:
        super().__init__()
        self.drawn_rows: list[int] = []

    def render_line(self, y: int):
        strip = super().render_line(y)
        if y > 0:
            self.drawn_rows.append(round(self.scroll_offset.y) + y - 1)
        return strip


class TableApp(App[None]):
    CSS = "SeenTable { height: 21; }"

    def __init__(self, runs: list[RunRow]) -> None:
        super().__init__()
        self.runs = runs

    def compose(self) -> ComposeResult:
        yield SeenTable()

    def on_mount(self) -> None:
        table = self.query_one(SeenTable)
        table.set_runs(self.runs)
        table.focus()


def screen_text(app: App[None]) -> str:
    return app.export_screenshot().replace("&#160;", " ")


async def test_the_table_draws_only_the_rows_in_view_whatever_the_fleet_size() -> None:
    runs = [RunRow(f"h{i:04d}") for i in range(HOSTS)]
    app = TableApp(runs)
    async with app.run_test(size=(120, 30)) as pilot:
        table = app.query_one(SeenTable)
        await pilot.pause()
        in_view = table.visible_rows()
        assert len(in_view) == 20  # 21 lines, the header's first
        assert set(table.drawn_rows) == set(in_view)
        # Every host changes: only the rows in view are drawn again, once each.
        table.drawn_rows.clear()
        for i, run in enumerate(runs):
            run.state, run.step, run.last_command = "running", 1, f"echo {i}"
        assert table.tick() == 20
        await pilot.pause()
        assert sorted(table.drawn_rows) == list(in_view)
        assert "echo 19" in screen_text(app) and "echo 20" not in screen_text(app)
        # Nothing changed: nothing is drawn.
        table.drawn_rows.clear()
        assert table.tick() == 0
        await pilot.pause()
        assert table.drawn_rows == []
        # The last host: the cursor brings its row into view, and only the rows around it.
        table.drawn_rows.clear()
        await pilot.press("end")
        await pilot.pause()
        assert table.highlighted_host == f"h{HOSTS - 1:04d}"
        assert set(table.drawn_rows) <= set(range(HOSTS - 20, HOSTS))
        shown = screen_text(app)
        assert f"h{HOSTS - 1:04d}" in shown and "h0000" not in shown
        await pilot.press("up", "pageup")
        assert table.cursor_row == HOSTS - 2 - 19


async def test_a_run_view_is_built_for_the_host_shown_only(llm: ScriptedLLM, home: Path) -> None:
    names = [f"web{i}" for i in range(6)]
    llm.default = scripted(["[DONE] nothing to do"])
    app = fleet_app(llm, home, names)
    async with app.run_test(size=SIZE) as pilot:
        await start_fleet(pilot, app)
        await until(pilot, fleet_done(app), "the summary")
        screen = fleet_screen(app)
        assert len(screen.query(RunView)) == 1 and screen.shown_host == "web0"
        # Every host's events are kept as data; a view is built from them when it is shown.
        assert all(f.events[-1].type == "result" for f in screen.feeds.values())
        await pilot.press("ctrl+t")
        screen.table.move_cursor(row=4)
        await pilot.press("enter")
        await until(pilot, lambda: screen.shown_host == "web4", "web4 shown")
        await until(pilot, lambda: screen.view.result is not None, "its run built")
        views = list(screen.query(RunView))
        assert views == [screen.view] and views[0].run_title == "probe @ web4"
        assert views[0].result.host == "web4" and views[0].result.status == "done"


async def test_run_on_all_releases_the_waiting_hosts_and_those_that_come_later(
    llm: ScriptedLLM, home: Path
) -> None:
    names = [f"db{i}" for i in range(5)]
    llm.default = scripted(["[CMD] echo one", "[DONE] fine"])
    app = fleet_app(llm, home, names)
    # Two hosts at a time: three of them reach the command after `A` was pressed.
    app.config.forks = 2
    async with app.run_test(size=SIZE) as pilot:
        await start_fleet(pilot, app)
        await until(pilot, waiting_on(app, "echo one", 2), "echo waiting on 2 hosts")
        screen = fleet_screen(app)
        await pilot.press("A")
        # Nothing else is pressed: the later hosts run it unasked, or the fleet never ends.
        await until(pilot, fleet_done(app), "the summary")
        said = [n.message for n in app._notifications]
        assert any("`echo one`: released 2 waiting host(s)" in m for m in said), said
        assert screen.controller.result.counts == {"done": 5}
        run_dir = screen.controller.run_dir
    for name in names:
        events = read_transcript(run_dir / f"{name}.jsonl")
        assert [e.command for e in events if isinstance(e, CommandFinished)] == ["echo one"]
        (decision,) = [e for e in events if isinstance(e, CommandDecision)]
        assert decision.decision == "run"


async def test_the_summary_scrolls_and_the_host_shown_stays_in_view(
    llm: ScriptedLLM, home: Path
) -> None:
    names = [f"n{i:02d}" for i in range(40)]
    llm.default = scripted(["[DONE] fine"])
    app = fleet_app(llm, home, names)
    async with app.run_test(size=(120, 40)) as pilot:
        await start_fleet(pilot, app)
        await until(pilot, fleet_done(app), "the summary")
        screen = fleet_screen(app)
        await pilot.pause()
        summary = screen.query_one(FleetSummary)
        rows = summary.query_one(SummaryTable)
        # Forty rows of hosts, in an area of at most twelve lines whose rows scroll.
        assert summary.outer_size.height <= 12 and rows.max_scroll_y > 0
        assert len(rows.lines) == 40 and rows.lines[-1].startswith("n39")
        head = summary.query_one("#summary-head", Label)
        view = screen.view
        await until(pilot, lambda: view.result is not None, "the host's run shown")
        assert view.region.height >= 8
        assert view.region.bottom <= screen.query_one("Keys").region.y
        rows.scroll_end(animate=False)
        await pilot.pause()
        assert rows.scroll_y == rows.max_scroll_y
        # Scrolled to the last host, the columns' names still show above the rows.
        assert "HOST" in str(head.render()) and head.region.height == 1
        assert summary.region.y < head.region.y < rows.region.y
        assert view.region.height >= 8 and screen.shown_host == "n00"


async def test_nothing_keeps_running_once_the_fleet_has_ended(llm: ScriptedLLM, home: Path) -> None:
    names = ["a1", "a2", "a3"]
    llm.default = scripted(["[CMD] echo one", "[DONE] fine"])
    app = fleet_app(llm, home, names)
    async with app.run_test(size=SIZE) as pilot:
        await start_fleet(pilot, app)
        screen = fleet_screen(app)
        # While it runs, the table's redraw ticks.
        assert any("FleetScreen" in t for t in running_timers(app))
        await until(pilot, waiting_on(app, "echo one", 3), "echo waiting on 3 hosts")
        await pilot.press("A")
        await until(pilot, fleet_done(app), "the summary")
        await pilot.press("ctrl+t", "down", "down")  # a host shown after a short rest
        await until(pilot, lambda: screen.shown_host == "a3", "a3 shown")
        await until(pilot, lambda: screen.view.result is not None, "its run built")
        await pilot.pause(0.3)
        assert running_timers(app) == []
        assert not screen.fleet.running


async def test_quitting_mid_run_ends_every_hosts_run_as_aborted(
    llm: ScriptedLLM, home: Path
) -> None:
    names = ["q1", "q2"]
    llm.default = scripted(["[CMD] echo one", "[DONE] fine"])
    app = fleet_app(llm, home, names)
    async with app.run_test(size=SIZE) as pilot:
        await start_fleet(pilot, app)
        await until(pilot, waiting_on(app, "echo one", 2), "echo waiting on 2 hosts")
        screen = fleet_screen(app)
        fleet = screen.fleet
        await pilot.press("ctrl+q")
    # The app waited for the fleet's thread: every host's transcript is closed, as aborted.
    assert not fleet.running
    for name in names:
        events = read_transcript(screen.controller.run_dir / f"{name}.jsonl")
        assert events[-1].type == "result" and events[-1].status == "aborted"


async def test_closing_the_screen_while_a_view_is_built_leaves_the_app_drawing(
    llm: ScriptedLLM, home: Path
) -> None:
    names = ["c1", "c2", "c3"]
    llm.default = scripted(["[DONE] fine"])
    app = fleet_app(llm, home, names)
    async with app.run_test(size=SIZE) as pilot:
        await start_fleet(pilot, app)
        await until(pilot, fleet_done(app), "the summary")
        screen = fleet_screen(app)
        screen.show_host("c3")  # built while the screen goes
        screen.action_close()
        await until(pilot, lambda: app.screen is app.main, "back to the main screen")
        await pilot.pause()
        assert app._batch_count == 0


async def test_a_fleet_whose_screen_has_gone_ends_every_run_and_leaves_nothing(
    llm: ScriptedLLM, home: Path
) -> None:
    """If the screen goes without a word, its end of the fleet's pipe closes, and the fleet
    ends every host's run as aborted, its command stopped, its transcript closed, and its
    thread ends."""
    names = ["g1", "g2"]
    llm.default = scripted(["[CMD] sleep 4711", "[DONE] fine"])
    app = fleet_app(llm, home, names)
    async with app.run_test(size=SIZE) as pilot:
        await start_fleet(pilot, app)
        await until(pilot, waiting_on(app, "sleep 4711", 2), "sleep waiting on 2 hosts")
        await pilot.press("A")
        # Each host's command (and the shell around it) runs.
        await until(pilot, lambda: len(processes_running("sleep 4711")) >= 2, "both sleeping")
        screen = fleet_screen(app)
        run_dir = screen.controller.run_dir
        await until(
            pilot,
            lambda: all((run_dir / f"{name}.jsonl").exists() for name in names),
            "the transcripts",
        )
        fleet = screen.fleet
        fleet.hang_up()
        await until(pilot, lambda: not fleet.running, "its end")
        assert processes_running("sleep 4711") == []
        for name in names:
            events = read_transcript(screen.controller.run_dir / f"{name}.jsonl")
            assert events[-1].type == "result" and events[-1].status == "aborted"


async def test_a_fleet_that_fails_says_why_and_keeps_its_traceback(
    llm: ScriptedLLM, home: Path
) -> None:
    """The fleet's thread may not write on the screen's terminal: when it fails, the screen
    says so with the traceback's last line (the exception), and keeps the whole traceback
    beside the transcripts."""
    app = fleet_app(llm, home, ["g1", "g2"])
    app.config.open_runner = FallsOver()
    async with app.run_test(size=SIZE) as pilot:
        await start_fleet(pilot, app)
        screen = fleet_screen(app)
        await until(pilot, lambda: screen.finished, "the fleet ended")
        await pilot.pause()
        shown = " ".join(str(note.render()) for note in screen.query(Note))
        assert "the fleet failed: RuntimeError: the fleet fell over on arrival" in shown
        log = screen.controller.run_dir / "fleet-error.log"
        assert str(log) in shown
        text = log.read_text()
        assert text.startswith("Traceback") and "_fall_over" in text
        assert screen.fleet is not None and not screen.fleet.running
