"""A key pressed before a step took the focus by itself is not for that step.

A key is stamped when the terminal gives it to the app; on a busy screen it may be handled
only after a step has taken the focus. Here such a key is made (stamped) at one moment and
handed to the app after the step took the focus: what a busy screen does to a key in flight.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from textual import events

from kosmos.tui.app import KosmosApp
from kosmos.tui.focus import REACT_S
from kosmos.tui.widgets.run_view import RunView
from tests.llmserver import ScriptedLLM
from tests.test_tui_chat import chat_app, chat_screen, chat_step_awaiting, probe_held, type_line
from tests.test_tui_fleet import fleet_app, fleet_screen, start_fleet, waiting_on
from tests.tuihelpers import awaiting_step, finished, front_view, make_app, until


def pressed_now(app: KosmosApp, key: str, char: str | None = None) -> events.Key:
    """A key the operator presses now, which reaches the app when it is posted."""
    event = events.Key(key, char)
    event.set_sender(app)
    return event


async def test_a_second_enter_pressed_before_the_next_command_showed_does_not_run_it(
    llm: ScriptedLLM, home: Path
) -> None:
    llm.script("[CMD] echo one", "[CMD] echo two", "[DONE] ok")
    app = make_app(llm.base_url, home, params={"unit": "nginx"})
    async with app.run_test(size=(140, 45)) as pilot:
        await pilot.press("ctrl+r")
        await until(pilot, awaiting_step(app, 1), "step 1 awaiting approval")
        # Enter, and at once Enter again: both pressed before the next command showed.
        once, twice = pressed_now(app, "enter", "\r"), pressed_now(app, "enter", "\r")
        app.post_message(once)
        await until(pilot, awaiting_step(app, 2), "step 2 awaiting approval, focused")
        app.post_message(twice)
        await pilot.pause(0.5)
        step = front_view(app).cmd_steps[2]
        # Dropped: the command nobody had seen still waits, and nothing ran.
        assert step.awaiting and app.focused is step
        assert len(llm.requests) == 2
        await pilot.press("enter")  # pressed with the command in sight: it runs
        await until(pilot, finished(app), "the run's end")
        assert step.state == "ok" and len(llm.requests) == 3


async def test_an_enter_pressed_as_the_command_was_drawn_does_not_run_it(
    llm: ScriptedLLM, home: Path
) -> None:
    llm.script("[CMD] echo one", "[DONE] ok")
    app = make_app(llm.base_url, home, params={"unit": "nginx"})
    async with app.run_test(size=(140, 45)) as pilot:
        await pilot.press("ctrl+r")
        await until(pilot, awaiting_step(app, 1), "step 1 awaiting approval")
        taken = app.focus_taken
        assert taken is not None and taken.shown_at is not None
        # Pressed a tenth of a second after the frame that showed the command: too soon to
        # have read it. The one pressed at the end of the window is an answer.
        soon = pressed_now(app, "enter", "\r")
        soon.time = taken.shown_at + REACT_S / 3
        app.post_message(soon)
        await pilot.pause(0.5)
        step = front_view(app).cmd_steps[1]
        assert step.awaiting and app.focused is step and len(llm.requests) == 1
        read = pressed_now(app, "enter", "\r")
        read.time = taken.shown_at + REACT_S
        app.post_message(read)
        await until(pilot, finished(app), "the run's end")
        assert step.state == "ok"


async def test_keys_meant_for_the_host_table_stay_there_when_a_host_asks(
    llm: ScriptedLLM, home: Path
) -> None:
    names = ["a1", "b1", "c1"]
    gate = threading.Event()  # every host's first reply waits for the keys

    def reply(record: Any) -> str:
        if len(record.messages) < 4:
            gate.wait(20)
            return "[CMD] cat code"
        return "[DONE] ok"

    llm.default = reply
    app = fleet_app(llm, home, names)
    async with app.run_test(size=(140, 50)) as pilot:
        await start_fleet(pilot, app)
        screen = fleet_screen(app)
        await until(pilot, lambda: screen.table.has_focus, "the table focused")
        row = screen.table.cursor_row
        # Down, then Enter ("open this host"), pressed in the table before any host asked.
        down, enter = pressed_now(app, "down"), pressed_now(app, "enter", "\r")
        gate.set()
        await until(pilot, waiting_on(app, "cat code", 3), "every host asking, a step focused")
        app.post_message(down)
        await pilot.pause(0.5)
        # It went to the table, and the focus with it.
        assert screen.table.has_focus and screen.table.cursor_row == row + 1
        app.post_message(enter)
        # The table opened the host under its cursor: no host's command ran.
        await until(pilot, lambda: screen.shown_host == names[row + 1], "that host shown")
        await pilot.pause(0.5)
        assert screen.bar.request is not None and len(screen.bar.hosts) == 3
        assert all(screen.table.state_of(name) != "done" for name in names)
        await pilot.press("A")  # a key pressed with the bar in sight: it acts
        await until(pilot, lambda: screen.finished, "the fleet done")
        assert all(screen.table.state_of(name) == "done" for name in names)


async def test_a_key_typed_in_the_chat_stays_in_the_chat_when_its_skill_asks(
    llm: ScriptedLLM, services: Any, home: Path
) -> None:
    gate = probe_held(llm, home, "echo probe", "ok")  # the first reply waits for the key
    app = chat_app(llm, services, home)
    async with app.run_test(size=(120, 45)) as pilot:
        await type_line(pilot, app, "is cron ok?")
        screen = chat_screen(app)
        await until(pilot, lambda: screen.busy, "the chat busy with the skill")
        before = app.focused
        typed = pressed_now(app, "s", "s")  # for what had the focus: not "skip"
        gate.set()

        await until(pilot, chat_step_awaiting(app), "the command awaiting approval, focused")
        step = screen.conversation.query_one(RunView).cmd_steps[1]
        app.post_message(typed)
        await pilot.pause(0.5)
        assert step.awaiting and len(llm.requests) == 3  # not skipped
        assert app.focused is before is screen.input and screen.input.value == "s"
