"""A step's first line (StepHead): its tag and state in one widget, each state in its colour,
a new state repainted without laying the screen out again."""

from __future__ import annotations

from pathlib import Path

from textual.app import App, ComposeResult
from textual.containers import VerticalScroll

import kosmos.tui.app
from kosmos.tui.widgets.step_head import StepHead

CSS = (Path(kosmos.tui.app.__file__).parent / "kosmos.tcss").read_text()


class Box(App[None]):
    CSS = CSS

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield StepHead("[CMD] step 3", "proposed")


def _state_colour(head: StepHead) -> object:
    line = head.render()
    spans = [s for s in line.spans if line.plain[s.start : s.end] == head.state]
    return spans[0].style.color if spans else None  # type: ignore[union-attr]


async def test_tag_and_state_in_one_line_each_state_in_its_colour() -> None:
    app = Box()
    async with app.run_test(size=(80, 10)) as pilot:
        head = app.query_one(StepHead)
        assert head.render().plain == "[CMD] step 3  proposed"
        assert _state_colour(head) is None  # a state of no kind: the line's own colour
        colours = {}
        for kind in ("ok", "failed", "awaiting", "running", "skipped"):
            head.set_state(f"state {kind}", kind)
            await pilot.pause()
            assert head.render().plain == f"[CMD] step 3  state {kind}"
            colours[kind] = _state_colour(head)
        # Five kinds, five colours, none of them missing.
        assert None not in colours.values() and len(set(colours.values())) == 5
        # The tag is bold; the state is not.
        line = head.render()
        tag = [s for s in line.spans if line.plain[s.start : s.end] == "[CMD] step 3"]
        assert tag and tag[0].style.bold  # type: ignore[union-attr]


async def test_a_new_state_repaints_the_line_and_lays_nothing_out() -> None:
    app = Box()
    async with app.run_test(size=(80, 10)) as pilot:
        head = app.query_one(StepHead)
        await pilot.pause()
        before = head._layout_updates, app.screen._layout_updates
        for n in range(5):
            head.set_state(f"running {n}.0 s", "running")
            await pilot.pause()
        assert app.screen.query_one(StepHead).region.height == 1
        assert (head._layout_updates, app.screen._layout_updates) == before
        assert head.render().plain.endswith("running 4.0 s")
