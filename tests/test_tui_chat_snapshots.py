"""An SVG snapshot of the chat screen: a tool's result, then a skill awaiting approval.

Update after a deliberate change of the look: `pytest tests/test_tui_chat_snapshots.py
--snapshot-update`, then review the SVG.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, Static

from kosmos.tui.widgets.run_view import RunView
from tests.chatkit import load_services_module, relevant, select
from tests.llmserver import ScriptedLLM
from tests.test_tui_chat import (
    chat_app,
    chat_screen,
    chat_step_awaiting,
    type_line,
    until,
    write_skill,
)

SERVICES = load_services_module()


@pytest.fixture
def services() -> Iterator[Any]:
    server = SERVICES.ExampleServices().start()
    try:
        yield server
    finally:
        server.stop()


def test_chat_with_a_skill_awaiting_approval(
    snap_compare, llm: ScriptedLLM, services: Any, home: Path
) -> None:
    write_skill(home / "skills")
    llm.script(relevant(), select("generate_haiku", theme="autumn"))
    llm.script(relevant(), select("probe", unit="cron"), "[CMD] systemctl status cron --no-pager")
    app = chat_app(llm, services, home)

    async def run_before(pilot: Pilot) -> None:
        await type_line(pilot, app, "a haiku about autumn")
        await type_line(pilot, app, "is cron ok?")

        await until(pilot, chat_step_awaiting(app), "the command awaiting approval")
        # The transcript's name carries the time: show a fixed one.
        view = chat_screen(app).conversation.query_one(RunView)
        view.query_one("#run-title", Static).update("probe @ local · transcript probe.jsonl")
        for field in app.screen.query(Input):
            field.cursor_blink = False
        await pilot.pause()

    assert snap_compare(app, terminal_size=(110, 40), run_before=run_before)
