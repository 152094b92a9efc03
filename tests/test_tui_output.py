"""Command output on screen: every byte in its own step, whatever it starts with, however fast."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Log

from kosmos.transcript import read_transcript
from kosmos.tui.output import OutputTail, StepOutputs
from tests.llmserver import ScriptedLLM
from tests.tuihelpers import awaiting_step, finished, front_view, make_app, until

# Commands that end at once, each with the lines its step must show (a tab shows as spaces).
CASES = [
    ("echo ' x'", [" x"]),
    ("printf '\\tindented\\n'", ["        indented"]),
    (
        "printf '   three\\n\\n\\n  after two empty lines\\n'",
        ["   three", "", "", "  after two empty lines"],
    ),
    ("printf '\\r'", [""]),
    ("printf 'before\\rafter\\r\\n'", ["before", "after"]),
    ("printf 'cr\\r'; sleep 0.3; printf '\\nlf\\n'", ["cr", "lf"]),
    ("printf '\\n  no newline at the end'", ["", "  no newline at the end"]),
    # A colour is drawn (see below); any other escape is shown, never sent to the terminal.
    ("printf '\\033[2Jcleared? \\033[31mred\\n'", ["␛[2Jcleared? red"]),
    ("true", []),
]


def shown(log: Log) -> list[str]:
    """The output log's lines as drawn on screen."""
    return [log.render_line(y).text.rstrip() for y in range(log.line_count)]


async def test_every_byte_of_quick_commands_is_in_its_own_step(
    llm: ScriptedLLM, home: Path
) -> None:
    # `a` runs them back to back with no question in between: the engine starts the next
    # command while the screen is still showing the last one's end.
    llm.script(*[f"[CMD] {command}" for command, _ in CASES], "[CMD] seq 700", "[DONE] ok")
    app = make_app(llm.base_url, home, params={"unit": "x"})
    async with app.run_test(size=(140, 60)) as pilot:
        await pilot.press("ctrl+r")
        await until(pilot, awaiting_step(app, 1), "step 1 awaiting approval")
        await pilot.press("a")
        await until(pilot, finished(app), "the run's end")
        view = front_view(app)
        for step, (command, lines) in enumerate(CASES, start=1):
            widget = view.cmd_steps[step]
            assert widget.command == command and widget.state == "ok", command
            log = widget.query_one("#output", Log)
            assert shown(log) == lines, command
            assert log.display == bool(lines), command
        # A long output keeps its newest 500 lines, the last one too.
        numbers = view.cmd_steps[len(CASES) + 1].query_one("#output", Log)
        assert numbers.line_count == 500
        assert list(numbers.lines) == [str(n) for n in range(201, 701)] + [""]
        transcript = view.controller.transcript_path
    outputs = [e.output for e in read_transcript(transcript) if e.type == "command_finished"]
    assert outputs[0] == " x\n" and outputs[3] == "\r"


async def test_a_running_command_shows_its_output_after_a_quick_one(
    llm: ScriptedLLM, home: Path
) -> None:
    # Step 1 prints twice: its second line waits for the next refresh, which comes after step 2
    # has begun.
    llm.script(
        "[CMD] echo quick; sleep 0.05; echo again",
        "[CMD] echo ' started'; sleep 60",
        "[DONE] stopped",
    )
    app = make_app(llm.base_url, home, params={"unit": "x"})
    async with app.run_test(size=(140, 45)) as pilot:
        await pilot.press("ctrl+r")
        await until(pilot, awaiting_step(app, 1), "step 1 awaiting approval")
        await pilot.press("a")
        view = front_view(app)
        await until(pilot, lambda: 2 in view.cmd_steps, "step 2")
        second = view.cmd_steps[2].query_one("#output", Log)
        await until(pilot, lambda: shown(second) == [" started"], "step 2's first line, live")
        assert view.controller.command_running
        assert shown(view.cmd_steps[1].query_one("#output", Log)) == ["quick", "again"]
        await pilot.press("ctrl+c")
        await until(pilot, finished(app), "the run's end")


def test_each_step_keeps_its_own_output() -> None:
    outputs = StepOutputs()
    assert outputs.feed(1, "one\n") is True
    assert outputs.feed(2, "two\n") is True  # the next command began before step 1 was shown
    assert outputs.feed(1, "more\n") is False
    assert outputs.pending == [1, 2]
    assert outputs.close(1) == "one\nmore\n"
    assert outputs.close(1) == ""
    assert outputs.take(2) == "two\n" and outputs.pending == []


def test_control_characters_are_shown_not_sent_to_the_terminal() -> None:
    tail = OutputTail()
    tail.feed("\x1b[31mred\x07\x7f\x9b\tx\x1b[1G\x1b]0;title\x07\u202e\r\n")
    # The colour stays for the log to draw; everything else that steers a terminal is shown.
    assert tail.take() == "\x1b[31mred␇␡⟨U+009B⟩\tx␛[1G␛]0;title␇⟨U+202E⟩\r\n"


def test_a_colour_cut_at_the_width_leaves_no_half_sequence() -> None:
    tail = OutputTail(max_width=8)
    tail.feed("abcde\x1b[1;31mred\n")
    assert tail.take() == "abcde…\n"


async def test_output_keeps_its_colours_on_screen(llm: ScriptedLLM, home: Path) -> None:
    llm.script(
        "[CMD] printf '\\033[1;32mGREEN\\033[0m plain\\tx \\033[2Kkept\\n'; ls --color=always -d /tmp",
        "[DONE] ok",
    )
    app = make_app(llm.base_url, home, params={"unit": "x"})
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.press("ctrl+r")
        await until(pilot, awaiting_step(app, 1), "step 1 awaiting approval")
        await pilot.press("enter")
        await until(pilot, finished(app), "the run's end")
        view = front_view(app)
        log = view.cmd_steps[1].query_one("#output", Log)
        assert shown(log)[0] == "GREEN plain     x ␛[2Kkept"
        styles = {seg.text: seg.style for seg in log.render_line(0) if seg.text.strip()}
        green = styles["GREEN"]
        assert green is not None and green.bold and green.color.number == 2
        assert styles[" plain     x ␛[2Kkept"].color != green.color
        # `ls --color` paints a directory and shows no escapes.
        assert shown(log)[1] == "/tmp"
        [tmp] = [seg for seg in log.render_line(1) if seg.text == "/tmp"]
        assert tmp.style is not None and tmp.style.color is not None
        transcript = view.controller.transcript_path
    # The LLM gets the text as a terminal would have left it: no colours, the erased line gone.
    finished_event = next(e for e in read_transcript(transcript) if e.type == "command_finished")
    assert finished_event.sent_to_llm.split() == ["kept", "/tmp"]


def test_a_carriage_return_ends_a_line_for_the_width_cut() -> None:
    tail = OutputTail(max_width=10)
    tail.feed("1234567\r1234567\r\n")
    assert tail.take() == "1234567\r1234567\r\n"


def test_feed_reports_the_first_chunk_of_a_burst() -> None:
    tail = OutputTail()
    assert tail.feed("a\n") is True
    assert tail.feed("b\n") is False
    assert tail.take() == "a\nb\n"
    assert tail.take() == ""
    assert tail.feed("c") is True


def test_a_flood_keeps_only_the_newest_text() -> None:
    tail = OutputTail(max_pending=1000)
    for i in range(10_000):
        tail.feed(f"line {i}\n")
    text = tail.take()
    assert len(text) <= 2000
    assert text.endswith("line 9999\n")
    assert tail.dropped > 50_000 and tail.total == sum(len(f"line {i}\n") for i in range(10_000))


def test_long_lines_are_cut_once_across_chunks() -> None:
    tail = OutputTail(max_width=10)
    tail.feed("x" * 8)
    first = tail.take()
    tail.feed("y" * 50)
    second = tail.take()
    tail.feed("z" * 5 + "\nshort\n")
    third = tail.take()
    assert first == "x" * 8
    assert second == "yy…"
    assert third == "\nshort\n"
