"""The fleet screen's canary and LLM bound: picked by key or flag, the canary runs first and the
others follow only if it is done; `kosmos tui --canary/--llm-concurrency` as a user runs it."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from msgspec.structs import replace
from textual.widgets import Label, Static

from kosmos.tui.screens.fleet import FleetScreen
from kosmos.tui.widgets.fleet_approval import FleetSummary, SummaryTable
from tests.conftest import run_cli
from tests.fleethelpers import host_of, scripted
from tests.llmserver import Recorded, ScriptedLLM
from tests.test_tui_fleet import SIZE, fleet_app, fleet_done, waiting_on
from tests.tuihelpers import until


def bindings(screen: FleetScreen) -> dict[str, bool]:
    """What the footer offers: each binding's description and whether it is enabled."""
    return {b.binding.description: b.enabled for b in screen.active_bindings.values()}


async def open_fleet(pilot, app) -> FleetScreen:
    await until(pilot, lambda: app.main.query("#params-form Input"), "the form")
    await pilot.press("ctrl+r")
    await until(pilot, lambda: isinstance(app.screen, FleetScreen), "the fleet screen")
    return app.screen


async def test_the_canary_picked_by_key_runs_first_and_the_others_replay_it(
    llm: ScriptedLLM, home: Path
) -> None:
    names = ["web1", "web2", "web3"]
    llm.default = scripted(["[CMD] echo one", "[DONE] fine"])
    app = fleet_app(llm, home, names)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_fleet(pilot, app)
        # Nothing runs until ctrl+r; the footer offers Start and Canary.
        assert not screen.started and llm.requests == []
        assert bindings(screen)["Start"] and bindings(screen)["Canary"]
        screen.table.move_cursor(row=1)
        await pilot.press("c")
        assert screen.table.cells_of("web2")[0] == "web2 (canary)"
        assert screen.table.cells_of("web1")[0] == "web1"
        title = str(screen.query_one("#fleet-title").render())
        assert "canary web2 first" in title
        await pilot.press("ctrl+r")
        await until(pilot, waiting_on(app, "echo one", 1), "the canary asking alone")
        assert screen.bar.request.proposal.host == "web2"
        assert [screen.table.state_of(n) for n in ("web1", "web3")] == ["queued", "queued"]
        assert not bindings(screen).get("Canary", False)  # picked before the start only
        # Enter runs it on the canary only: the other two then wait on it, asked once.
        await pilot.press("enter")
        await until(pilot, waiting_on(app, "echo one", 2), "the others waiting on it")
        assert set(screen.bar.hosts) == {"web1", "web3"}
        text = str(screen.query_one("#approval-text").render())
        assert "the yes on the canary ran it on web2 only" in text
        await pilot.press("A")
        await until(pilot, fleet_done(app), "the summary")
        result = screen.controller.result
        assert {h.host: h.status for h in result.hosts} == dict.fromkeys(names, "done")
        assert {h.host: h.mode for h in result.hosts} == {
            "web1": "replay",
            "web2": "canary",
            "web3": "replay",
        }
        summary = screen.query_one(FleetSummary)
        table = "\n".join(summary.query_one(SummaryTable).lines)
        assert "canary" in table
        assert "MODE" in str(summary.query_one("#summary-head", Label).render())
        report = str(summary.query_one("#fleet-report", Static).render())
        assert "3 hosts (web1, web2, web3): done: fine" in report
    # The others replayed the canary's plan; each asked the LLM once, for its own report (their
    # knowledge files name them, so no conversation is the canary's).
    assert sorted(host_of(r) for r in llm.requests) == ["web1", "web2", "web2", "web3"]


async def test_a_canary_from_the_flag_that_is_not_done_skips_the_others(
    llm: ScriptedLLM, home: Path
) -> None:
    names = ["web1", "web2", "web3"]
    llm.default = scripted(["[CMD] echo one", "[CMD] echo two", "[DONE] fine"])
    app = fleet_app(llm, home, names)
    app.config.canary = "web3"
    # The canary reaches its step limit: not done, so the others never start.
    app.config.settings = replace(app.config.settings, max_steps=1)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_fleet(pilot, app)
        assert screen.table.cells_of("web3")[0] == "web3 (canary)"
        # c on the canary itself: no canary; again: web3 is the canary once more.
        screen.table.move_cursor(row=2)
        await pilot.press("c")
        assert screen.canary is None and screen.table.cells_of("web3")[0] == "web3"
        await pilot.press("c")
        assert screen.canary == "web3"
        await pilot.press("ctrl+r")
        await until(pilot, fleet_done(app), "the summary")
        result = screen.controller.result
        assert {h.host: h.status for h in result.hosts} == {
            "web1": "skipped",
            "web2": "skipped",
            "web3": "step_limit",
        }
        assert "canary web3 ended step_limit" in result.hosts[0].message
        assert screen.table.state_of("web1") == "skipped"
    assert {host_of(r) for r in llm.requests} == {"web3"}


async def test_llm_concurrency_bounds_the_fleet_screens_requests(
    llm: ScriptedLLM, home: Path
) -> None:
    lock = threading.Lock()
    state = {"now": 0, "peak": 0}
    inner = scripted(["[DONE] ok"])

    def reply(record: Recorded) -> str:
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        time.sleep(0.1)  # a reply that takes a while: the requests in flight overlap
        with lock:
            state["now"] -= 1
        return inner(record)

    names = ["web1", "web2", "web3", "web4"]
    llm.default = reply
    app = fleet_app(llm, home, names)
    app.config.llm_concurrency = 1
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_fleet(pilot, app)
        assert "LLM requests 1 at once" in str(screen.query_one("#fleet-title").render())
        await pilot.press("ctrl+r")
        await until(pilot, fleet_done(app), "the summary")
        assert screen.controller.result.counts == {"done": 4}
    assert len(llm.requests) == 4 and state["peak"] == 1


def test_cli_canary_must_be_a_marked_host(
    cli_env: dict[str, str], home: Path, tmp_path: Path
) -> None:
    (home / ".ssh").mkdir(exist_ok=True)
    (home / ".ssh" / "config").write_text("Host web1 web2\n  HostName 127.0.0.1\n")
    done = run_cli(["tui", "--hosts", "web*", "--canary", "db1"], env=cli_env, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "kosmos: --canary db1: not one of the marked hosts (web1, web2); pick one of them"
    )
    bad = run_cli(["tui", "--llm-concurrency", "0"], env=cli_env, cwd=tmp_path)
    assert bad.returncode == 2 and "--llm-concurrency: must be at least 1, got 0" in bad.stderr
    shown = run_cli(["tui", "--help"], env=cli_env, cwd=tmp_path)
    assert "--canary HOST" in shown.stdout and "--llm-concurrency N" in shown.stdout
