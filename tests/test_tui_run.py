"""kosmos tui, driven with Pilot through whole runs against the scripted LLM on `local`."""

from __future__ import annotations

import json
from pathlib import Path

from textual.widgets import Input

from kosmos.transcript import read_transcript
from kosmos.tui.widgets.command import CmdStep
from kosmos.tui.widgets.step_head import StepHead
from kosmos.tui.widgets.steps import AskStep, DoneCard, ErrorCard, MessageStep, Thinking
from tests.llmserver import Hang, ScriptedLLM, Status
from tests.tuihelpers import (
    awaiting_step,
    finished,
    focused_in,
    front_view,
    make_app,
    processes_running,
    until,
)


async def test_run_skip_and_edit_reach_the_llm(llm: ScriptedLLM, home: Path) -> None:
    llm.script("[CMD] echo one", "[CMD] echo two", "[CMD] echo three", "[DONE] all **done**")
    app = make_app(llm.base_url, home, params={"unit": "nginx"})
    async with app.run_test(size=(140, 45)) as pilot:
        await pilot.press("ctrl+r")
        await until(pilot, awaiting_step(app, 1), "step 1 awaiting approval")
        await pilot.press("enter")
        await until(pilot, awaiting_step(app, 2), "step 2 awaiting approval")
        await pilot.press("s")
        await until(pilot, awaiting_step(app, 3), "step 3 awaiting approval")
        await pilot.press("e")
        edit = front_view(app).cmd_steps[3].query_one("#edit-input", Input)
        assert app.focused is edit and edit.value == "echo three"
        await pilot.press(*" edited", "enter")  # the cursor starts at the end
        await until(pilot, finished(app), "the run's end")
        view = front_view(app)
        steps = view.cmd_steps
        assert steps[1].state == "ok" and steps[2].state == "skipped"
        assert steps[3].command == "echo three edited" and steps[3].has_class("edited")
        assert "one" in "\n".join(steps[1].query_one("#output").lines)
        card = view.query_one(DoneCard)
        assert card.result.status == "done" and card.text == "all **done**"
        transcript = view.controller.transcript_path
    users = [r.last_user_text for r in llm.requests]
    assert users[1].startswith("Command output:\none")
    assert users[2].startswith("User skipped the command.")
    assert users[3].startswith("Command output:\nthree edited")
    # The transcript is the headless one: every persisted event, the edit recorded.
    events = read_transcript(transcript)
    decisions = [e for e in events if e.type == "command_decision"]
    assert [d.decision for d in decisions] == ["run", "skip", "edit"]
    assert decisions[2].command == "echo three edited" and decisions[2].proposed == "echo three"
    assert events[-1].type == "result" and events[-1].status == "done"
    assert json.loads(transcript.read_text().splitlines()[0])["params"] == {
        "unit": "nginx",
        "mode": "quick",
    }


async def test_a_command_that_runs_unasked_says_why(llm: ScriptedLLM, home: Path) -> None:
    llm.script("[CMD] echo one", "[CMD] uptime", "[CMD] rm -f ./kosmos-no-such-file", "[DONE] ok")
    app = make_app(llm.base_url, home, params={"unit": "nginx"})
    async with app.run_test(size=(140, 45)) as pilot:
        await pilot.press("ctrl+r")
        await until(pilot, awaiting_step(app, 1), "step 1 awaiting approval")
        await pilot.press("a")  # this one, and reads from now on unasked
        await until(pilot, awaiting_step(app, 3), "step 3 (a write) awaiting approval")
        await pilot.press("enter")
        await until(pilot, finished(app), "the run's end")
        steps = front_view(app).cmd_steps
        notes = {n: [str(w.render()) for w in steps[n].query("#unasked")] for n in steps}
        transcript = front_view(app).controller.transcript_path
    # Only the read that nobody was asked about says so, with the policy's reason.
    assert notes == {1: [], 2: ["runs without asking (read-only: uptime)"], 3: []}
    decisions = [e for e in read_transcript(transcript) if e.type == "command_decision"]
    assert [(d.by, d.asked) for d in decisions] == [
        ("operator", True),
        ("policy", False),
        ("operator", True),
    ]


async def test_ask_required_optional_and_message(llm: ScriptedLLM, home: Path) -> None:
    question = "Which port? [default: 8080] [/b]"  # brackets are text, not markup
    llm.script(f"[ASK] {question}", "[ASK:optional] Tag?", "[MESSAGE] Port **ok**", "[DONE] ok")
    app = make_app(llm.base_url, home, params={"unit": "db"})
    async with app.run_test(size=(140, 45)) as pilot:
        await pilot.press("ctrl+r")

        def asking(step: int):
            def check() -> bool:
                ask = front_view(app).asks.get(step)
                return ask is not None and focused_in(app, ask) and isinstance(app.focused, Input)

            return check

        await until(pilot, asking(1), "the required question")
        ask = front_view(app).asks[1]
        assert str(ask.query_one(".question").render()) == question
        await pilot.press("enter")  # empty: a required question cannot be skipped
        await pilot.press("escape")
        await pilot.pause()
        assert ask.awaiting and "needs an answer" in str(ask.query_one("#error").render())
        assert len(llm.requests) == 1
        await pilot.press(*"8080", "enter")
        await until(pilot, asking(2), "the optional question")
        await pilot.press("escape")
        await until(pilot, finished(app), "the run's end")
        view = front_view(app)
        assert not view.asks[1].awaiting and not view.asks[2].awaiting
        assert "skipped" in view.asks[2].query_one(StepHead).state
        assert view.query_one(MessageStep).text == "Port **ok**"
        assert len(view.query(AskStep)) == 2
    users = [r.last_user_text for r in llm.requests]
    assert users[1].startswith("User response: 8080")
    assert users[2].startswith("User response: \n") or users[2].startswith("User response:")
    assert users[3].startswith("[Continue after informational message]")


async def test_llm_error_card_retries_the_same_request(llm: ScriptedLLM, home: Path) -> None:
    llm.script(Status(500), "[DONE] recovered")
    app = make_app(llm.base_url, home, params={"unit": "x"})
    async with app.run_test(size=(140, 45)) as pilot:
        await pilot.press("ctrl+r")
        await until(pilot, lambda: bool(front_view(app).query(ErrorCard)), "the error card")
        card = front_view(app).query_one(ErrorCard)
        assert "500" in card.reason
        await until(pilot, lambda: app.focused is card.query_one("#retry"), "Retry focused")
        await pilot.press("r")
        await until(pilot, finished(app), "the run's end")
        assert front_view(app).result.status == "done"
    assert len(llm.requests) == 2
    assert llm.requests[0].messages == llm.requests[1].messages


async def test_giving_up_after_an_error_ends_the_run(llm: ScriptedLLM, home: Path) -> None:
    llm.script(Status(500))
    app = make_app(llm.base_url, home, params={"unit": "x"})
    async with app.run_test(size=(140, 45)) as pilot:
        await pilot.press("ctrl+r")
        await until(pilot, lambda: bool(front_view(app).query(ErrorCard)), "the error card")
        await pilot.press("escape")
        await until(pilot, finished(app), "the run's end")
        result = front_view(app).result
        assert result.status == "error" and result.exit_code == 5


async def test_stop_key_ends_a_hanging_command(llm: ScriptedLLM, home: Path) -> None:
    llm.script("[CMD] echo started; sleep 60; echo never", "[DONE] stopped")
    app = make_app(llm.base_url, home, params={"unit": "x"})
    async with app.run_test(size=(140, 45)) as pilot:
        await pilot.press("ctrl+r")
        await until(pilot, awaiting_step(app, 1), "step 1 awaiting approval")
        await pilot.press("enter")
        view = front_view(app)
        await until(pilot, lambda: view.controller.command_running, "the command running")
        await until(
            pilot,
            lambda: "started" in "".join(view.cmd_steps[1].query_one("#output").lines),
            "its first output",
        )
        await pilot.press("ctrl+c")
        await until(pilot, finished(app), "the run's end")
        assert "stopped after" in view.cmd_steps[1].head.state
    assert "never" not in llm.requests[1].last_user_text
    assert "started" in llm.requests[1].last_user_text


async def test_quit_asks_while_a_command_runs(llm: ScriptedLLM, home: Path) -> None:
    llm.script("[CMD] sleep 61.25")
    transcript = home / "quit.jsonl"
    app = make_app(llm.base_url, home, params={"unit": "x"}, transcript=transcript)
    async with app.run_test(size=(140, 45)) as pilot:
        await pilot.press("ctrl+r")
        await until(pilot, awaiting_step(app, 1), "step 1 awaiting approval")
        await pilot.press("enter")
        await until(pilot, lambda: front_view(app).controller.command_running, "running")
        await pilot.press("ctrl+q")
        await until(pilot, lambda: type(app.screen).__name__ == "QuitModal", "the quit question")
        await pilot.press("n")
        await until(pilot, lambda: app.screen is app.main, "back at the run")
        assert front_view(app).controller.command_running
        await pilot.press("ctrl+q")
        await until(pilot, lambda: type(app.screen).__name__ == "QuitModal", "the quit question")
        await pilot.press("y")
        await until(pilot, lambda: not app.is_running, "the app closed", limit=10)
    events = read_transcript(transcript)
    assert events[-1].type == "result" and events[-1].status == "aborted"
    assert not processes_running("sleep 61.25")


async def test_two_runs_in_two_tabs_at_once(llm: ScriptedLLM, home: Path) -> None:
    def reply(request):
        first = request.messages[1]["content"]
        unit = "alpha" if "unit: alpha" in first else "beta"
        if request.last_user_text.startswith("Command output"):
            return f"[DONE] {unit} finished"
        return f"[CMD] echo {unit}"

    llm.default = reply
    app = make_app(llm.base_url, home, params={"unit": "alpha"})
    async with app.run_test(size=(140, 45)) as pilot:
        await pilot.press("ctrl+r")
        await until(pilot, awaiting_step(app, 1), "run 1 awaiting approval")
        first = front_view(app)
        # Back to the Skill tab: change the param, start a second run while the first waits.
        app.main.tabs.active = "skill-tab"
        await pilot.pause()
        app.main.query_one("#param-unit", Input).value = "beta"
        await pilot.press("ctrl+r")
        await until(pilot, lambda: front_view(app) is not first, "the second tab in front")
        second = front_view(app)
        await until(pilot, awaiting_step(app, 1), "run 2 awaiting approval")
        await pilot.press("enter")
        await until(pilot, finished(app), "run 2's end")
        assert second.result.status == "done" and first.result is None
        assert first.cmd_steps[1].awaiting
        await pilot.press("ctrl+n")  # Skill tab
        await pilot.press("ctrl+n")  # run 1
        await until(pilot, lambda: front_view(app) is first, "run 1 in front")
        await until(pilot, awaiting_step(app, 1), "run 1 focused")
        await pilot.press("enter")
        await until(pilot, finished(app), "run 1's end")
        assert first.query_one(DoneCard).text == "alpha finished"
        assert second.query_one(DoneCard).text == "beta finished"
        assert len(app.main.query(CmdStep)) == 2


async def test_thinking_indicator_shows_while_the_llm_works(llm: ScriptedLLM, home: Path) -> None:
    llm.script(Hang(1.5, "[DONE] slow but done"))
    app = make_app(llm.base_url, home, params={"unit": "x"})
    async with app.run_test(size=(140, 45)) as pilot:
        await pilot.press("ctrl+r")
        await until(pilot, lambda: bool(front_view(app).query(Thinking)), "the indicator")
        text = str(front_view(app).query_one(Thinking).render())
        assert "thinking · step 1 ·" in text and text.endswith(" s")
        await until(pilot, finished(app), "the run's end")
        await until(pilot, lambda: not front_view(app).query(Thinking), "the indicator gone")


async def test_file_reads_and_memory_steps_have_their_own_widget(
    llm: ScriptedLLM, home: Path
) -> None:
    (home / "notes.txt").write_text("port 80\n")
    memory = home / "memory"
    llm.script(
        f"[GET-FILE] {home}/notes.txt",
        "[STORE] MEMORY_web.md\nweb listens on 80\nsecond line",
        "[STORE] MEMORY_other.md\nnot wanted",
        "[RETRIEVE] MEMORY_Bad.md",
        "[DONE] noted",
    )
    app = make_app(
        llm.base_url, home, params={"unit": "web"}, settings={"memory": True, "memory_dir": memory}
    )
    async with app.run_test(size=(140, 45)) as pilot:
        await pilot.press("ctrl+r")

        def awaiting(step: int):
            def check() -> bool:
                widget = front_view(app).action_steps.get(step)
                return widget is not None and widget.awaiting and app.focused is widget

            return check

        await until(pilot, awaiting(1), "the file read awaiting approval")
        read = front_view(app).action_steps[1]
        assert "notes.txt" in str(read.query_one("#target").render())
        await pilot.press("enter")
        await until(pilot, awaiting(2), "the memory write awaiting approval")
        store = front_view(app).action_steps[2]
        assert "web listens on 80" in str(store.query_one("#preview").render())
        assert "writes the memory note MEMORY_web.md" in str(store.query_one("#risk").render())
        await pilot.press("enter")
        await until(pilot, awaiting(3), "the second memory write")
        await pilot.press("s")
        await until(pilot, finished(app), "the run's end")
        steps = front_view(app).action_steps
        assert [steps[i].state for i in (1, 2, 3, 4)] == ["ok", "ok", "skipped", "failed"]
        assert "is not a memory name" in str(steps[4].query_one("#outcome").render())
        assert not front_view(app).cmd_steps
    users = [r.last_user_text for r in llm.requests]
    assert users[1] == "File content:\nport 80\n\n[Step 2 of 100]"
    assert users[2] == "Memory stored: MEMORY_web.md\n\n[Step 3 of 100]"
    assert (memory / "MEMORY_web.md").read_text() == "web listens on 80\nsecond line\n"
    assert not (memory / "MEMORY_other.md").exists()
    assert llm.requests[0].system.startswith("--- Target OS: Linux ---")


async def test_a_steps_controls_come_under_its_command_even_after_an_error_line() -> None:
    """A step mounts its controls with its first request and its error line with its first
    error; whichever came first, they stand in the same order under the command."""
    from textual.app import App, ComposeResult

    from kosmos.engine.operator import CommandProposal

    class One(App[None]):
        def compose(self) -> ComposeResult:
            yield CmdStep(1, "echo one")

    app = One()
    async with app.run_test() as pilot:
        step = app.query_one(CmdStep)
        assert not step.query(Input)  # nothing to act on before a request
        step.decided("refused", "echo one", "refused: the host's name was not typed")
        await pilot.pause()
        step.request(CommandProposal(1, "echo one", "web1"))
        await pilot.pause()
        order = [w.id for w in step.children if w.id]
        assert order == [
            "command",
            "risk",
            "actions",
            "edit-input",
            "confirm-input",
            "error",
            "output",
        ], order
