"""A long chat on the TUI's chat screen: older lines fold into one widget, and look the same."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.style import Style

from kosmos.tui.app import KosmosApp
from kosmos.tui.widgets.chat_conversation import KEEP, ChatHistory, ChatLine
from tests.chatkit import relevant, select
from tests.llmserver import ScriptedLLM
from tests.test_tui_chat import SIZE, chat_app, chat_screen, ready, said, type_line, until


def reply(record: Any) -> str:  # tests.llmserver.Recorded
    if record.system.startswith("You are the intent classifier"):
        last = record.messages[-1]["content"]
        return relevant("nothing" not in last)
    return select("generate_haiku", theme="autumn")


def rows(app: KosmosApp) -> list[list[tuple[str, Style | None]]]:
    """The conversation as drawn on screen, cell by cell (character and style), without its
    scrollbar."""
    conversation = chat_screen(app).conversation
    region = conversation.content_region
    strips = app.screen._compositor.render_strips()
    return [
        [(c, seg.style) for seg in strips[y].crop(region.x, region.right - 2) for c in seg.text]
        for y in range(region.y, region.bottom)
    ]


def text(row: list[tuple[str, Style | None]]) -> str:
    return "".join(c for c, _ in row)


async def turn(pilot: Any, app: KosmosApp, line: str) -> None:
    await type_line(pilot, app, line)
    await until(pilot, lambda: f"› {line}" in said(app), f"the line {line!r} shown")
    await until(pilot, ready(app), "the input, back after the request")


async def test_old_lines_fold_and_stay_as_they_were_drawn(
    llm: ScriptedLLM, services: Any, home: Path
) -> None:
    llm.default = reply
    app = chat_app(llm, services, home, skills=False)
    # Each request in turn: the help (a bar at its left), a result, one the agent refuses.
    lines = [["/help", "a haiku, please", "nothing at all"][n % 3] + f" #{n}" for n in range(40)]
    lines[0] = "/help"
    async with app.run_test(size=SIZE) as pilot:
        conversation = chat_screen(app).conversation
        count = 0
        while len(conversation.children) < KEEP - 4:
            await turn(pilot, app, lines[count])
            count += 1
        assert not conversation.query(ChatHistory)
        conversation.scroll_home(animate=False)
        await pilot.pause()
        before = rows(app)
        texts_before = said(app)
        for line in lines[count:]:
            await turn(pilot, app, line)
        # Only the newest widgets (and the last request's lines) stay as they were; the rest
        # is one block of rows.
        assert len(conversation.children) <= KEEP + 6
        (history,) = conversation.query(ChatHistory)
        assert conversation.children[0] is history
        assert {kind for _, kind in history.entries} >= {"help", "result", "operator", "progress"}
        # Every line is still there, in order; the oldest ones draw as they did.
        everything = said(app)
        assert everything[: len(texts_before)] == texts_before
        assert [t for t in everything if t.startswith("› ")] == [f"› {line}" for line in lines]
        conversation.scroll_home(animate=False)
        await pilot.pause()
        after = rows(app)
        assert [text(r) for r in after] == [text(r) for r in before]
        for y, (now, then) in enumerate(zip(after, before, strict=True)):
            assert now == then, f"row {y}: {text(then)!r}"
        # And the newest ones are at the bottom, lines of their own.
        conversation.scroll_end(animate=False)
        await pilot.pause()
        assert isinstance(conversation.children[-1], ChatLine)
        assert any(f"› {lines[-1]}" in text(r) for r in rows(app))
