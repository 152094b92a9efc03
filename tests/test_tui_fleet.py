"""The TUI's fleet view, driven with Pilot: hosts are local folders, the LLM is scripted."""

from __future__ import annotations

import json
import os
from pathlib import Path

from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import Button, Input, Label

from kosmos.events import CommandFinished, RunFinished
from kosmos.fleet.targets import HostSpec
from kosmos.transcript import read_transcript
from kosmos.tui.app import KosmosApp
from kosmos.tui.screens.fleet import FleetScreen
from kosmos.tui.widgets.command import CmdStep
from kosmos.tui.widgets.fleet_approval import FleetSummary, SummaryTable
from kosmos.tui.widgets.run_view import RunView
from kosmos.tui.widgets.step_head import StepHead
from kosmos.tui.widgets.steps import DoneCard
from tests.conftest import run_cli
from tests.fleethelpers import Hosts, host_dirs, scripted
from tests.llmserver import ScriptedLLM
from tests.tuihelpers import make_app, until

SIZE = (140, 50)


def fleet_app(llm: ScriptedLLM, home: Path, names: list[str], *, mark: bool = True) -> KosmosApp:
    """The app with `names` as hosts, each a folder under home/hosts, all marked at start."""
    app = make_app(llm.base_url, home, params={"unit": "nginx"}, hosts=["local", *names])
    app.config.open_runner = Hosts(host_dirs(home / "hosts", names))
    if mark:
        app.config.fleet = [HostSpec(n, n) for n in names]
    return app


async def start_fleet(pilot: Pilot, app: KosmosApp) -> None:
    """Once the skill's form is up, ctrl+r on the main screen opens the fleet screen; ctrl+r
    there starts the hosts."""
    await until(pilot, lambda: app.main.query("#params-form Input"), "the form")
    await pilot.press("ctrl+r")
    await until(pilot, lambda: isinstance(app.screen, FleetScreen), "the fleet screen")
    screen = app.screen
    assert isinstance(screen, FleetScreen) and not screen.started
    await pilot.press("ctrl+r")
    await until(pilot, lambda: screen.started, "the fleet started")


def fleet_screen(app: KosmosApp) -> FleetScreen:
    screen = app.screen
    assert isinstance(screen, FleetScreen), f"the fleet screen is not in front: {screen}"
    return screen


def waiting_on(app: KosmosApp, command: str, count: int):
    def check() -> bool:
        screen = app.screen
        if not isinstance(screen, FleetScreen):
            return False
        bar = screen.bar
        focused = app.focused
        return (
            bar.request is not None
            and bar.request.proposal.command == command
            and len(bar.hosts) == count
            # The asking host's step has the focus (its view is built, then the step asks).
            and isinstance(focused, CmdStep)
            and focused.awaiting
        )

    return check


def fleet_done(app: KosmosApp):
    return lambda: isinstance(app.screen, FleetScreen) and bool(app.screen.query(FleetSummary))


async def run_all_to_the_end(
    pilot: Pilot, app: KosmosApp, commands: list[str], hosts: int
) -> FleetScreen:
    """Start the fleet, `A` on each command as all `hosts` wait on it, then the summary."""
    await start_fleet(pilot, app)
    for command in commands:
        await until(pilot, waiting_on(app, command, hosts), f"{command} waiting on {hosts}")
        await pilot.press("A")
    await until(pilot, fleet_done(app), "the summary", limit=60)
    return fleet_screen(app)


async def shown(pilot: Pilot, screen: FleetScreen, host: str) -> RunView:
    """`host`'s run view, built from its events once the run has ended (its done card)."""
    screen.show_host(host)

    def built() -> bool:
        return screen.shown_host == host and screen.view.result is not None

    await until(pilot, built, f"{host}'s run view built")
    return screen.view


async def test_run_on_all_approves_every_host_and_the_table_follows(
    llm: ScriptedLLM, home: Path
) -> None:
    names = ["web1", "web2", "web3"]
    llm.default = scripted(["[CMD] uname -s", "[CMD] echo second", "[DONE] all checked"])
    app = fleet_app(llm, home, names)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.main.sidebar.marked == names, "the hosts marked")
        await start_fleet(pilot, app)
        await until(pilot, waiting_on(app, "uname -s", 3), "uname waiting on 3 hosts")
        screen = fleet_screen(app)
        # The fleet's thread yields to the screen's: a batch thread, the screen's is not.
        assert screen.fleet is not None and screen.fleet.native_id is not None
        assert os.sched_getscheduler(screen.fleet.native_id) == os.SCHED_BATCH
        assert os.sched_getscheduler(0) == os.SCHED_OTHER
        states = lambda: {screen.table.state_of(n) for n in names}  # noqa: E731
        await until(pilot, lambda: states() == {"approval"}, "every host's row says approval")
        assert screen.bar.query_one("#run-all", Button).label.plain == "Run on all 3 (A)"
        await pilot.press("A")
        await until(pilot, waiting_on(app, "echo second", 3), "echo waiting on 3 hosts")
        await pilot.click("#run-all")
        await until(pilot, fleet_done(app), "the summary")
        assert [screen.table.state_of(n) for n in names] == ["done"] * 3
        for name in names:
            view = await shown(pilot, screen, name)
            assert [s.state for s in view.cmd_steps.values()] == ["ok", "ok"]
            assert view.query_one(DoneCard).result.status == "done"
        summary = screen.query_one(FleetSummary)
        assert summary.result.exit_code == 0 and summary.result.counts == {"done": 3}
        table = "\n".join(summary.query_one(SummaryTable).lines)
        assert all(n in table for n in names) and "LAST EXIT" not in table
        assert "LAST EXIT" in str(summary.query_one("#summary-head", Label).render())
        run_dir = screen.controller.run_dir
        await pilot.press("ctrl+w")
        await until(pilot, lambda: not isinstance(app.screen, FleetScreen), "back to main")
    # Asked twice in all, each time for every host; each host ran both commands.
    assert sorted(p.name for p in run_dir.iterdir()) == [
        "fleet.json",
        "web1.jsonl",
        "web2.jsonl",
        "web3.jsonl",
    ]
    for name in names:
        events = read_transcript(run_dir / f"{name}.jsonl")
        ran = [e.command for e in events if isinstance(e, CommandFinished)]
        assert ran == ["uname -s", "echo second"]
        assert isinstance(events[-1], RunFinished) and events[-1].status == "done"
    assert json.loads((run_dir / "fleet.json").read_text())["counts"] == {"done": 3}


async def test_open_a_hosts_run_view_and_decide_there_only(llm: ScriptedLLM, home: Path) -> None:
    names = ["a1", "b1"]
    llm.default = scripted(["[CMD] cat code", "[DONE] ok"])
    app = fleet_app(llm, home, names)
    async with app.run_test(size=SIZE) as pilot:
        await start_fleet(pilot, app)
        await until(pilot, waiting_on(app, "cat code", 2), "cat waiting on 2 hosts")
        screen = fleet_screen(app)
        asking = screen.bar.request.proposal.host
        other = next(n for n in names if n != asking)
        # The asking host's run view is shown, its step focused: enter runs it there only.
        assert screen.shown_host == asking
        assert isinstance(app.focused, CmdStep) and app.focused.awaiting
        assert app.focused.query_one("#run", Button).display
        await pilot.press("enter")
        await until(pilot, waiting_on(app, "cat code", 1), "the other host asked on its own")
        assert screen.bar.request.proposal.host == other
        # One host waits: `A` would still run it there and on any host that proposes it later.
        assert screen.bar.query_one("#run-all", Button).label.plain == "Run on all 1 (A)"
        await pilot.press("s")
        await until(pilot, fleet_done(app), "the summary")
        # Open the first host's view from the table: its output is there.
        await pilot.press("ctrl+t")
        screen.table.move_cursor(row=names.index(asking))
        await pilot.press("enter")
        await until(pilot, lambda: screen.shown_host == asking, "the host's view")
        await until(pilot, lambda: screen.view.result is not None, "its run shown")
        view = screen.view
        assert view.display and view.cmd_steps[1].state == "ok"
        assert "0" in "\n".join(view.cmd_steps[1].query_one("#output").lines)
        # Built from the host's story, a step decided long ago has no buttons or inputs: they
        # come with a request, which the live view's step had (its Run button above).
        assert not view.cmd_steps[1].query(Button) and not view.cmd_steps[1].query(Input)
        assert (await shown(pilot, screen, other)).cmd_steps[1].state == "skipped"
        assert screen.table.state_of(asking) == "done"


async def test_a_dangerous_command_is_asked_per_host_with_its_name(
    llm: ScriptedLLM, home: Path
) -> None:
    names = ["db1", "db2"]
    llm.default = scripted(["[CMD] mkfs.ext4 /dev/kosmos-test-none", "[DONE] ok"])
    app = fleet_app(llm, home, names)
    async with app.run_test(size=SIZE) as pilot:
        await start_fleet(pilot, app)
        command = "mkfs.ext4 /dev/kosmos-test-none"
        await until(pilot, waiting_on(app, command, 1), "the first host asked")
        screen = fleet_screen(app)
        first = screen.bar.request.proposal.host
        assert screen.bar.request.dangerous and not screen.bar.can_run_all
        await pilot.press("A")  # no "run on all" for a dangerous command
        await pilot.pause()
        assert screen.bar.request is not None and screen.bar.request.proposal.host == first
        await pilot.press("enter")
        confirm = screen.view.cmd_steps[1].query_one("#confirm-input", Input)
        await until(pilot, lambda: app.focused is confirm, "the host name asked")
        second = next(n for n in names if n != first)
        await pilot.press(*second, "enter")  # the other host's name does not count here

        def second_asked() -> bool:
            bar = screen.bar
            return bar.request is not None and bar.request.proposal.host == second

        await until(pilot, second_asked, "the second host asked on its own")
        await until(pilot, lambda: isinstance(app.focused, CmdStep), "its step focused")
        await pilot.press("enter")
        confirm = screen.view.cmd_steps[1].query_one("#confirm-input", Input)
        await until(pilot, lambda: app.focused is confirm, "the host name asked again")
        await pilot.press(*second, "enter")
        await until(pilot, fleet_done(app), "the summary")
        # Refused by the engine on the first host; run on the second, whose name was typed.
        refused = (await shown(pilot, screen, first)).cmd_steps[1]
        assert f"'{second}' was typed" in str(refused.query_one("#error").render())
        assert refused.query_one(StepHead).state == "refused"
        ran = str((await shown(pilot, screen, second)).cmd_steps[1].head.state)
        assert ran.startswith("exit "), ran


async def test_one_answer_for_every_host_asking(llm: ScriptedLLM, home: Path) -> None:
    names = ["q1", "q2", "q3"]
    llm.default = scripted(["[ASK] Which port?", "[DONE] ok"])
    app = fleet_app(llm, home, names)
    async with app.run_test(size=SIZE) as pilot:
        await start_fleet(pilot, app)
        screen = fleet_screen(app)

        def all_ask() -> bool:
            bar = screen.bar
            return bar.question is not None and len(bar.hosts) == 3

        await until(pilot, all_ask, "three hosts asking")
        await until(pilot, lambda: isinstance(app.focused, Input), "the answer focused")
        assert screen.bar.answer_all
        await pilot.press(*"8080", "enter")
        await until(pilot, fleet_done(app), "the summary")
        # One host showed the question; the others got its answer.
        asked = [f.name for f in screen.feeds.values() if any(e.type == "answer" for e in f.events)]
        assert len(asked) == 3
        assert len([v for v in screen.query(RunView) if v.asks]) == 1
    answers = [r.last_user_text for r in llm.requests if r.last_user_text.startswith("User")]
    assert len(answers) == 3 and all(a.startswith("User response: 8080") for a in answers)


async def test_a_view_takes_the_focus_only_when_opened_or_asking(
    llm: ScriptedLLM, home: Path
) -> None:
    names = ["web1", "web2", "web3"]
    llm.default = scripted(["[CMD] echo ok", "[DONE] fine"])
    app = fleet_app(llm, home, names)
    async with app.run_test(size=SIZE) as pilot:
        screen = await run_all_to_the_end(pilot, app, ["echo ok"], 3)
        table = screen.table
        table.focus()
        await pilot.pause()

        def built(host: str):
            return lambda: screen.shown_host == host and screen.view.result is not None

        # Every widget mounted from here on.
        mounted: list[str] = []
        register = app._register

        def noted(parent: object, *widgets: Widget, **kwargs: object) -> list[Widget]:
            mounted.extend(type(w).__name__ for w in widgets)
            return register(parent, *widgets, **kwargs)  # type: ignore[arg-type]

        app._register = noted  # type: ignore[assignment]
        # Three hosts in turn, none of them the one shown now (the last to have asked).
        first = next(n for n in names if n != screen.shown_host)
        second = next(n for n in names if n != first)
        third = next(n for n in names if n not in (first, second))
        # Shown for a question answered meanwhile: the view waits on nothing, the table
        # keeps the focus (focusing a view restyles every step in it).
        screen.show_host(first, focus="pending")
        await until(pilot, built(first), f"{first}'s view")
        await pilot.pause()
        assert app.focused is table
        # Built from the story: its steps, and no thinking indicator for turns long answered.
        assert "CmdStep" in mounted and "DoneCard" in mounted
        assert "Thinking" not in mounted, mounted
        # Opened (enter on its row): the view takes the focus.
        table.move_cursor(row=names.index(second))
        await pilot.press("enter")
        await until(pilot, built(second), f"{second}'s view")
        await until(pilot, lambda: app.focused is screen.view, f"{second}'s view focused")
        # The focus is in the view that goes: the next view takes it, it is not lost.
        screen.show_host(third, focus="pending")
        await until(pilot, built(third), f"{third}'s view")
        await until(pilot, lambda: app.focused is screen.view, f"{third}'s view focused")


async def test_a_key_is_drawn_while_a_hosts_view_is_being_built(
    llm: ScriptedLLM, home: Path
) -> None:
    names = ["web1", "web2", "web3"]
    commands = [f"echo {n}" for n in range(1, 13)]
    llm.default = scripted([*(f"[CMD] {c}" for c in commands), "[DONE] fine"])
    app = fleet_app(llm, home, names)
    async with app.run_test(size=SIZE) as pilot:
        screen = await run_all_to_the_end(pilot, app, commands, 3)
        table = screen.table
        table.focus()
        await pilot.pause()
        # Each frame the terminal would get: the table's cursor row, and the view being built.
        frames: list[tuple[int, str | None]] = []
        display = app._display

        def drawn(on: object, update: object) -> None:
            display(on, update)  # type: ignore[arg-type]
            if update is not None and not app._batch_count:
                frames.append((table.cursor_row, screen.host_view.coming))

        app._display = drawn  # type: ignore[method-assign]
        # A host's view, 12 steps, is built with frames held; the cursor moves meanwhile.
        # The cursor goes to the host being built (another row would be shown in its place
        # if the build outlasted the cursor's rest).
        host = next(
            n for n in names if n != screen.shown_host and names.index(n) != table.cursor_row
        )
        row = names.index(host)
        screen.show_host(host)
        assert screen.host_view.coming == host
        table.move_cursor(row=row)
        await until(pilot, lambda: screen.shown_host == host, f"{host}'s view shown")
        # The cursor's new row was drawn before the build ended, not after it.
        assert (row, host) in frames, frames


async def test_hosts_marked_in_the_sidebar_by_key_and_by_glob(llm: ScriptedLLM, home: Path) -> None:
    names = ["web1", "web2", "db1"]
    llm.default = scripted(["[DONE] nothing to do"])
    app = fleet_app(llm, home, names, mark=False)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.main.query("#params-form Input"), "the form")
        sidebar = app.main.sidebar
        await pilot.press("ctrl+f", *"web*", "ctrl+g")
        assert sidebar.marked == ["web1", "web2"]
        await pilot.press("ctrl+a", "shift+end", "backspace")  # the filter emptied
        hosts = sidebar.query_one("#hosts")
        hosts.focus()
        hosts.highlighted = sidebar.hosts.index("db1")
        await pilot.press("space")
        assert sidebar.marked == ["web1", "web2", "db1"]
        hosts.highlighted = sidebar.hosts.index("web2")
        await pilot.press("space")
        assert sidebar.marked == ["web1", "db1"]
        assert "☑" in str(hosts.get_option("host:db1").prompt)
        await start_fleet(pilot, app)
        await until(pilot, fleet_done(app), "the summary")
        result = fleet_screen(app).controller.result
        assert [h.host for h in result.hosts] == ["web1", "db1"]
        assert {h.status for h in result.hosts} == {"done"}


def test_cli_fleet_flags_fail_in_one_line_before_the_screen_opens(
    cli_env: dict[str, str], home: Path, tmp_path: Path
) -> None:
    (home / ".ssh").mkdir(exist_ok=True)
    (home / ".ssh" / "config").write_text("Host web1 web2\n  HostName 127.0.0.1\n")
    done = run_cli(["tui", "--hosts", "db*"], env=cli_env, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().startswith("kosmos: --hosts 'db*' matches no alias in")
    assert "aliases: web1, web2" in done.stderr
    shown = run_cli(["tui", "--help"], env=cli_env, cwd=tmp_path)
    for flag in ("--hosts", "--inventory", "--forks"):
        assert flag in shown.stdout
