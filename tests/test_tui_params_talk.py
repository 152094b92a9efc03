"""The Skill tab's parameter dialogue (seed 003), driven with Pilot over the scripted LLM: say
the values in words, see them in the form and the summary, change one, then Run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.widgets import Button, Input, Static

from kosmos.events import ParamsUpdate
from kosmos.transcript import read_transcript
from kosmos.tui.app import KosmosApp
from kosmos.tui.widgets.params_talk import ParamsTalk
from tests.llmserver import ScriptedLLM, Status, call, calls
from tests.tuihelpers import awaiting_step, finished, front_view, make_app, until, write_skill

SIZE = (140, 50)
PORT_CHECK = """---
name: port-check
description: Check that a service listens on its port
params:
  - {name: service, description: the systemd unit, required: true}
  - {name: port, description: TCP port, required: true, max_length: 5}
  - {name: mode, choices: [fast, slow], default: fast}
---
Check the service's port.
"""


def talk_app(llm: ScriptedLLM, home: Path, **kw: Any) -> KosmosApp:
    write_skill(home / "skills", PORT_CHECK, folder="port-check")
    return make_app(llm.base_url, home, skill="port-check", **kw)


def field(app, name: str) -> str:
    return app.main.query_one(f"#param-{name}", Input).value


def summary(app) -> str:
    return str(app.main.query_one("#talk-summary", Static).render())


async def test_values_said_in_words_fill_the_form_then_run(llm: ScriptedLLM, home: Path) -> None:
    llm.script(
        "Which service should I check, and on which port?",
        calls(
            call("update_params", id="u1", service="nginx", port="443"),
            content="– service: nginx\n– port: 443\n– mode: fast\nShall I run it?",
        ),
        calls(call("update_params", id="u2", port="8443"), content="– port: 8443 now. Run?"),
        "[CMD] echo checking",
        "[DONE] nginx listens",
    )
    app = talk_app(llm, home)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.main.query(ParamsTalk), "the conversation offered")
        run = app.main.query_one("#talk-run", Button)
        assert run.disabled
        talk_input = app.main.query_one("#talk-input", Input)
        talk_input.focus()
        await pilot.press(*"check nginx on 443", "enter")
        await until(pilot, lambda: not run.disabled, "every value collected")
        log = [str(s.render()) for s in app.main.query(".talk-line")]
        assert log == [
            "AI: Which service should I check, and on which port?",
            "you: check nginx on 443",
            "AI: – service: nginx\n– port: 443\n– mode: fast\nShall I run it?",
        ]
        # The form beside it holds what the LLM understood; the summary says what comes next.
        assert (field(app, "service"), field(app, "port")) == ("nginx", "443")
        assert "service = nginx · port = 443 · mode = fast" in summary(app)
        assert "Run (or enter) starts the skill" in summary(app)
        # Change one value in words: the form follows.
        await pilot.press(*"no, port 8443", "enter")
        await until(pilot, lambda: field(app, "port") == "8443", "the port changed")
        await until(pilot, lambda: not run.disabled, "Run offered again")
        await until(pilot, lambda: app.focused is talk_input, "the answer field focused")
        await pilot.press("enter")  # nothing typed, every value there: enter is Run
        await until(pilot, awaiting_step(app, 1), "the run's first step awaiting approval")
        await pilot.press("enter")
        await until(pilot, finished(app), "the run's end")
        view = front_view(app)
        assert view.result.status == "done"
        path = view.controller.transcript_path
    # The dialogue offered the tools and carried the operator's words.
    dialogue = llm.requests[:3]
    assert all("tools" in r.capabilities_used() for r in dialogue)
    assert dialogue[1].messages[-1]["content"] == "check nginx on 443"
    # The run started with the confirmed values, and its transcript holds the dialogue.
    first = llm.requests[3].last_user_text
    assert "service" in first and "8443" in first and "nginx" in first
    events = read_transcript(path)
    kinds = [e.kind for e in events if isinstance(e, ParamsUpdate)]
    assert kinds[-1] == "confirm" and "update" in kinds and "turn" in kinds
    confirm = [e for e in events if isinstance(e, ParamsUpdate) and e.kind == "confirm"][0]
    assert confirm.values == {"service": "nginx", "port": "8443", "mode": "fast"}
    assert all(e.host == "local" for e in events if isinstance(e, ParamsUpdate))


async def test_an_llm_without_tools_leaves_the_form(llm: ScriptedLLM, home: Path) -> None:
    llm.reject("tools")
    app = talk_app(llm, home)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.main.query(ParamsTalk), "the conversation offered")
        await pilot.click("#talk-start")
        await until(pilot, lambda: "does not take tool calls" in summary(app), "the fallback")
        assert summary(app).endswith("fill in the form")
        assert not app.main.query_one("#talk-start", Button).disabled
        assert len(app.main.runs) == 0


async def test_an_llm_error_is_said_and_talk_tries_again(llm: ScriptedLLM, home: Path) -> None:
    llm.script(Status(500, {"error": {"message": "model crashed"}}), "Which service?")
    app = talk_app(llm, home)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.main.query(ParamsTalk), "the conversation offered")
        await pilot.click("#talk-start")
        await until(pilot, lambda: "the LLM failed" in summary(app), "the error")
        assert "model crashed" in summary(app) and summary(app).endswith("Talk tries again")
        talk = app.main.query_one("#talk-start", Button)
        assert not talk.disabled
        # A button ignores a click while it still shows the last one (0.2 s).
        await until(pilot, lambda: not talk.has_class("-active"), "Talk pressable again")
        await pilot.click("#talk-start")
        await until(pilot, lambda: app.main.query(".talk-ai"), "the LLM's question")
        assert "still needed: service, port" in summary(app)
    assert len(llm.requests) == 2


async def test_escape_leaves_the_conversation(llm: ScriptedLLM, home: Path) -> None:
    llm.script("Which service?")
    app = talk_app(llm, home)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.main.query(ParamsTalk), "the conversation offered")
        await pilot.click("#talk-start")
        await until(pilot, lambda: app.main.query(".talk-ai"), "the LLM's question")
        await until(pilot, lambda: isinstance(app.focused, Input), "the answer field focused")
        await pilot.press("escape")
        await until(pilot, lambda: "conversation left" in summary(app), "the conversation left")
        assert len(app.main.runs) == 0 and len(llm.requests) == 1


async def test_not_offered_when_the_params_are_given_or_the_llm_has_no_tools(
    llm: ScriptedLLM, home: Path
) -> None:
    app = talk_app(llm, home, params={"service": "nginx", "port": "80"})
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.main.query("#params-form Input"), "the form")
        assert not app.main.query(ParamsTalk)
    no_tools = {"providers": {"openai": {"capabilities": {"tools": False}}}}
    app = talk_app(llm, home, settings=no_tools)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.main.query("#params-form Input"), "the form")
        assert not app.main.query(ParamsTalk)
    assert llm.requests == []


async def test_a_value_the_skill_refuses_is_shown_with_why(llm: ScriptedLLM, home: Path) -> None:
    llm.script(
        calls(
            call("update_params", id="u1", service="nginx", port="123456"),
            content="Which port, then?",
        ),
    )
    app = talk_app(llm, home)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.main.query(ParamsTalk), "the conversation offered")
        talk_input = app.main.query_one("#talk-input", Input)
        # The box asks for this skill's own params.
        assert talk_input.placeholder == "service, port: say them in your own words (enter sends)"
        talk_input.focus()
        await pilot.press(*"nginx on port 123456", "enter")
        await until(pilot, lambda: app.main.query(".talk-rejected"), "the refused value")
        log = [str(s.render()) for s in app.main.query(".talk-line")]
        assert log[:2] == [
            "AI: Which port, then?",
            "not taken: port = 123456: must be at most 5 characters (got 6)",
        ]
        assert field(app, "service") == "nginx" and field(app, "port") == ""
