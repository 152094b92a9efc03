"""SVG snapshots of the TUI's main states, at a fixed size, with nothing time-dependent shown.

Update them after a deliberate change of the look: `pytest tests/test_tui_snapshots.py
--snapshot-update`, then review the SVGs.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from kosmos.tui.widgets.step_head import StepHead
from tests.llmserver import ScriptedLLM
from tests.tuihelpers import awaiting_step, finished, make_app, until

SIZE = (120, 36)


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # Paths on screen are shown relative to the working folder: the same in every run.
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _app(llm: ScriptedLLM, home: Path, **kwargs: object):
    return make_app(
        llm.base_url,
        home,
        bundled=False,
        transcript=Path("run.jsonl"),
        params={"unit": "nginx"},
        **kwargs,
    )


async def _ready(pilot: Pilot) -> None:
    """The skill is selected and its form shown: ctrl+r can start it."""
    await until(pilot, lambda: pilot.app.main.query("#params-form Input"), "the form")


async def _steady(pilot: Pilot) -> None:
    """No blinking cursor, the host listed as connected, nothing left to lay out."""
    app = pilot.app
    await until(pilot, lambda: "connected" in str(app.main.sidebar.states), "local connected")
    for field in app.query(Input):
        field.cursor_blink = False
    for screen_input in app.screen.query(Input):
        screen_input.cursor_blink = False
    await pilot.pause()


def _mask_times(pilot: Pilot) -> None:
    """Durations differ run to run: show fixed ones in their place."""
    main = pilot.app.main
    for step in main.query(".cmd-step"):
        head = step.query_one(StepHead)
        if "exit" in head.state:
            head.set_state("exit 0 · 0.0 s · 6 B", "ok")
    for stats in main.query(".done-card .stats"):
        if "duration" in str(stats.render()):
            stats.update("steps: 3 · duration: 0.0 s · commands run: 1 · exit code: 0")


def test_skill_selected_with_form(snap_compare, llm: ScriptedLLM, home: Path, here: Path) -> None:
    assert snap_compare(_app(llm, home), terminal_size=SIZE, run_before=_steady)


def test_command_output_and_next_awaiting_approval(
    snap_compare, llm: ScriptedLLM, home: Path, here: Path
) -> None:
    llm.script("[CMD] printf 'one\\ntwo\\n'", "[CMD] systemctl status nginx --no-pager")
    app = _app(llm, home)

    async def run_before(pilot: Pilot) -> None:
        await _ready(pilot)
        await pilot.press("ctrl+r")
        await until(pilot, awaiting_step(app, 1), "step 1 awaiting approval")
        await pilot.press("enter")
        await until(pilot, awaiting_step(app, 2), "step 2 awaiting approval")
        _mask_times(pilot)
        await _steady(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_ask(snap_compare, llm: ScriptedLLM, home: Path, here: Path) -> None:
    llm.script("[MESSAGE] Checking **nginx** first.", "[ASK] Which port should answer?")
    app = _app(llm, home)

    async def run_before(pilot: Pilot) -> None:
        await _ready(pilot)
        await pilot.press("ctrl+r")
        await until(pilot, lambda: isinstance(app.focused, Input), "the question focused")
        await pilot.press(*"80")
        await _steady(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_done(snap_compare, llm: ScriptedLLM, home: Path, here: Path) -> None:
    llm.script("[CMD] echo ok", "[DONE] nginx is **healthy**: port 80 answers.")
    app = _app(llm, home)

    async def run_before(pilot: Pilot) -> None:
        await _ready(pilot)
        await pilot.press("ctrl+r")
        await until(pilot, awaiting_step(app, 1), "step 1 awaiting approval")
        await pilot.press("enter")
        await until(pilot, finished(app), "the run's end")
        _mask_times(pilot)
        await _steady(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
