"""A step's first line (StepHead): its tag and state in one widget, each state in its colour,
a new state repainted without laying the screen out again; a step's output area, with
scrollbars only where the output outgrows it."""

from __future__ import annotations

from pathlib import Path

from textual.app import App, ComposeResult
from textual.containers import VerticalScroll

import kosmos.tui.app
from kosmos.tui.widgets.command import CmdStep
from kosmos.tui.widgets.output_log import OutputLog
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


class Steps(App[None]):
    CSS = CSS

    def compose(self) -> ComposeResult:
        yield VerticalScroll(id="box")


async def test_output_shows_scrollbars_only_when_it_outgrows_its_area() -> None:
    app = Steps()
    async with app.run_test(size=(100, 50)) as pilot:
        short, long_, wide = CmdStep(1, "hostname"), CmdStep(2, "seq 40"), CmdStep(3, "wide")
        await app.query_one("#box").mount_all([short, long_, wide])
        for step, text in (
            (short, "web1\nup 3 days\n"),
            (long_, "".join(f"{n}\n" for n in range(1, 41))),
            (wide, "x" * 300 + "\n"),
        ):
            step.started()
            step.write(text)
        await pilot.pause()
        await pilot.pause()
        logs = [step.query_one("#output", OutputLog) for step in (short, long_, wide)]
        # A short output: its lines and nothing more, no scrollbar beside or under them.
        assert logs[0].region.height == 2
        assert not logs[0].show_vertical_scrollbar and not logs[0].show_horizontal_scrollbar
        # Forty lines: the area stops at 16 rows and scrolls.
        assert logs[1].region.height == 16 and logs[1].show_vertical_scrollbar
        assert not logs[1].show_horizontal_scrollbar
        # A line wider than the area: a horizontal scrollbar under it.
        assert logs[2].show_horizontal_scrollbar and not logs[2].show_vertical_scrollbar


async def test_a_focus_change_restyles_a_step_once() -> None:
    app = Steps()
    async with app.run_test(size=(100, 50)) as pilot:
        step = CmdStep(1, "hostname")
        await app.query_one("#box").mount(step)
        step.started()
        step.write("web1\n")
        app.set_focus(None)
        await pilot.pause()
        applied: list[object] = []
        apply = app.stylesheet.apply

        def counted(node: object, *args: object, **kwargs: object) -> None:
            applied.append(node)
            apply(node, *args, **kwargs)  # type: ignore[arg-type]

        app.stylesheet.apply = counted  # type: ignore[method-assign]
        for focus in (step, None):  # in, then out
            applied.clear()
            app.set_focus(focus)
            await pilot.pause()
            assert app.focused is focus
            inside = set(step.walk_children(with_self=True))
            restyled = [node for node in applied if node in inside]
            # Every widget of the step restyled (`.step:focus-within`) once, the step itself
            # once more (its `:focus`).
            assert inside <= set(restyled), restyled
            assert len(restyled) == len(inside) + 1, restyled
