"""The TUI's chat screen, driven with Pilot: the scripted LLM, the example services, real runs."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import asyncssh
from textual.pilot import Pilot
from textual.widgets import OptionList

from kosmos.chat.catalog import TEXTS
from kosmos.cli import build_parser
from kosmos.config import Settings
from kosmos.prompts import Prompts
from kosmos.skills.discovery import SkillLibrary
from kosmos.transcript import read_transcript
from kosmos.tui.app import KosmosApp, TuiConfig
from kosmos.tui.screens.chat import ChatScreen
from kosmos.tui.screens.main import MainScreen
from kosmos.tui.screens.modals import QuitModal
from kosmos.tui.widgets.run_view import RunView
from tests.chatkit import closed_port, example_chat, load_services_module, relevant, select
from tests.llmserver import ScriptedLLM, Status
from tests.sshserver import InProcessSSHServer, write_client_home
from tests.tuihelpers import awaiting_step, until

SERVICES = load_services_module()
SIZE = (120, 45)

PROBE = """---
name: probe
description: Check whether a systemd unit is healthy
params:
  - name: unit
    description: the unit to check
    required: true
    max_length: 12
---
## What I do
Check the unit.
"""


def en(key: str, **values: Any) -> str:
    return TEXTS[key][0].format(**values)


def write_skill(root: Path, text: str = PROBE, folder: str = "probe") -> None:
    path = root / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def probe_held(llm: ScriptedLLM, home: Path, command: str, done: str) -> threading.Event:
    """The probe skill, chosen in the chat for "is cron ok?": its first reply (`[CMD]
    command`) is held until the returned event is set, then `[DONE] done`."""
    write_skill(home / "skills")
    gate = threading.Event()

    def first_step(_: object) -> str:
        gate.wait(20)
        return f"[CMD] {command}"

    llm.script(relevant(), select("probe", unit="cron"), first_step, f"[DONE] {done}")
    return gate


def chat_app(
    llm: ScriptedLLM,
    services: Any,
    home: Path,
    *,
    chat: bool = True,
    host: str = "local",
    hosts: list[str] | None = None,
    skills: bool = True,
) -> KosmosApp:
    """The app on the scripted LLM and the example services; skills from `home/skills`."""
    settings = Settings(
        base_url=llm.base_url,
        llm_retries=0,
        transcript_dir=home / "runs",
        chat=example_chat(services.base_url, skills=skills),
    )
    config = TuiConfig(
        settings=settings,
        # Only the test's skills (no bundled ones): the greeting lists exactly these.
        library=SkillLibrary([(home / "skills", "--skills-dir")], cwd=home),
        prompts=Prompts.load(),
        hosts=hosts or [host],
        host=host,
        env={"LANG": "en_US.UTF-8"},
        home=home,
        chat=chat,
    )
    return KosmosApp(config)


def chat_screen(app: KosmosApp) -> ChatScreen:
    screen = app.get_screen("chat")
    assert isinstance(screen, ChatScreen)
    return screen


def chat_step_awaiting(app: KosmosApp) -> Callable[[], bool]:
    """The chat's skill run's first command awaits approval, focused."""

    def run() -> RunView | None:
        views = chat_screen(app).conversation.query(RunView)
        return views.first(RunView) if views else None

    return awaiting_step(app, 1, run)


def said(app: KosmosApp, kind: str | None = None) -> list[str]:
    return chat_screen(app).conversation.lines(kind)


def ready(app: KosmosApp) -> Callable[[], bool]:
    """The chat waits for the operator: not busy, its input focused."""

    def check() -> bool:
        screen = chat_screen(app)
        return not screen.busy and app.focused is screen.input

    return check


async def type_line(pilot: Pilot, app: KosmosApp, text: str) -> None:
    await until(pilot, ready(app), "the input, ready for a line")
    chat_screen(app).input.value = text
    await pilot.press("enter")


async def test_greeting_then_an_http_tool_result(
    llm: ScriptedLLM, services: Any, home: Path
) -> None:
    llm.script(relevant(), select("generate_haiku", theme="autumn"))
    app = chat_app(llm, services, home, skills=False)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.is_screen_installed("chat"), "the chat screen")
        await until(pilot, lambda: said(app, "help"), "the greeting")
        greeting = said(app, "help")[0]
        assert greeting.startswith(en("greeting"))
        assert "generate_haiku" in greeting and "rag_search" in greeting
        await type_line(pilot, app, "a haiku about autumn")
        expected = "Haiku: " + SERVICES.haiku("autumn")["haiku_text"].replace("\n", " | ")
        await until(pilot, lambda: expected in said(app, "result"), "the haiku")
        await until(pilot, ready(app), "the input, back after the request")
        lines = said(app)
        assert lines[lines.index("› a haiku about autumn") + 1] == en("classifying")
        assert 'Chose tool generate_haiku with parameters theme="autumn"' in lines
        assert any(line.startswith("#syllables per line: ") for line in said(app, "result"))
    # The same core as `kosmos chat`: the classification prompt listed the tools.
    assert "generate_haiku" in llm.requests[0].system


async def test_a_chosen_skill_runs_in_the_chat_with_approval(
    llm: ScriptedLLM, services: Any, home: Path
) -> None:
    # The skill's first reply is held until the operator has left.
    gate = probe_held(llm, home, "echo unit-$((6*7))", "cron is healthy")
    app = chat_app(llm, services, home)
    async with app.run_test(size=SIZE) as pilot:
        await type_line(pilot, app, "is cron ok?")
        # The operator leaves for the main screen: they hear when the run waits for them.
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)
        gate.set()

        def told() -> bool:
            return any("waits for you" in n.message for n in app._notifications)

        await until(pilot, told, "a notice that the chat's run waits")

        await pilot.press("ctrl+t")
        await until(
            pilot, chat_step_awaiting(app), "the command awaiting approval in the chat, focused"
        )
        view = chat_screen(app).conversation.query_one(RunView)
        assert chat_screen(app).busy  # the chat waits for the run
        assert len(llm.requests) == 3  # classify, select, the skill's first step: nothing ran
        await pilot.press("enter")
        done = en("skill_done", skill="probe", message="cron is healthy")
        await until(pilot, lambda: done in said(app, "result"), "the run's summary in the chat")
        await until(pilot, ready(app), "the input, back after the run")
        assert view.result is not None and view.result.status == "done"
        assert "unit-42" in "\n".join(view.cmd_steps[1].query_one("#output").lines)
        transcript = view.controller.transcript_path
        # The summary comes after the run view in the conversation.
        children = list(chat_screen(app).conversation.children)
        summary = next(w for w in children if done in getattr(w, "texts", ()))
        assert children.index(view) < children.index(summary)
    assert "unit-42" in llm.requests[3].last_user_text
    events = read_transcript(transcript)
    decisions = [e for e in events if e.type == "command_decision"]
    assert [d.decision for d in decisions] == ["run"]
    assert events[-1].type == "result" and events[-1].status == "done"


async def test_an_llm_error_shows_the_seed_text_and_the_reason(
    llm: ScriptedLLM, services: Any, home: Path
) -> None:
    llm.script(Status(500, {"error": {"message": "model crashed"}}))
    llm.script(relevant(False))
    app = chat_app(llm, services, home, skills=False)
    async with app.run_test(size=SIZE) as pilot:
        await type_line(pilot, app, "what is kosmos")
        await until(pilot, lambda: en("llm_error") in said(app, "error"), "the seed's error text")
        await until(pilot, lambda: said(app, "reason"), "the reason")
        assert "model crashed" in said(app, "reason")[-1]
        await until(pilot, ready(app), "the input, after the chat ended")
        screen = chat_screen(app)
        assert screen.agent is None and screen.ended == 5
        assert any(line.startswith(en("chat_ended")) for line in said(app, "note"))
        log = screen.log_path
        assert log is not None and "classify_intent // LLM Error: " in log.read_text()
        # Typing again starts a new conversation: a greeting, then the request.
        await type_line(pilot, app, "hi")
        await until(pilot, lambda: en("irrelevant") in said(app, "result"), "the second answer")
        greetings = [i for i, x in enumerate(said(app)) if x.startswith(en("greeting"))]
        assert len(greetings) == 2 and said(app)[greetings[1] + 1] == "› hi"
        assert screen.log_path != log


async def test_the_chat_key_keeps_the_conversation_and_exit_goes_back(
    llm: ScriptedLLM, services: Any, home: Path
) -> None:
    llm.script(relevant(False))
    app = chat_app(llm, services, home, chat=False, skills=False)
    async with app.run_test(size=SIZE) as pilot:
        assert isinstance(app.screen, MainScreen)
        assert any(
            b.binding.action == "chat" and b.binding.show for b in app.active_bindings.values()
        )
        await pilot.press("ctrl+t")
        await type_line(pilot, app, "tell me a joke")
        await until(pilot, lambda: en("irrelevant") in said(app), "the answer")
        await until(pilot, ready(app), "the input")
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)
        await pilot.press("ctrl+t")
        await until(pilot, ready(app), "the chat again")
        await pilot.press("ctrl+t")  # the same key goes back
        assert isinstance(app.screen, MainScreen)
        await pilot.press("ctrl+t")
        await until(pilot, ready(app), "the chat once more")
        assert "› tell me a joke" in said(app)
        assert len([x for x in said(app, "help") if x.startswith(en("greeting"))]) == 1
        await type_line(pilot, app, "/quit")
        await until(pilot, lambda: isinstance(app.screen, MainScreen), "the main screen")
        assert en("goodbye") in said(app, "result")
        log = chat_screen(app).log_path
        assert log is not None and "AgentEnd" in log.read_text()


async def test_the_hosts_own_skills_become_tools_and_run_there(
    llm: ScriptedLLM,
    services: Any,
    home: Path,
    ssh_home: Path,
    ssh_server: InProcessSSHServer,
    ssh_keys: tuple[asyncssh.SSHKey, asyncssh.SSHKey],
) -> None:
    """seed 001 remote skills: the skills stored on the sidebar's host are offered, and run
    over SSH; choosing another host on the main screen switches the chat to its skills."""
    write_client_home(ssh_home, ssh_server, ssh_keys[1])
    write_skill(
        ssh_server.state.home / ".config/kosmos-panel/skills", PROBE.replace("probe", "svc")
    )
    llm.script(relevant(), select("svc", unit="cron"))
    llm.script("[CMD] echo on-$HOME", "[DONE] cron is fine there")
    app = chat_app(llm, services, home, hosts=["local", "inproc"], skills=True)
    async with app.run_test(size=SIZE) as pilot:
        greeted = ready(app)
        await until(pilot, lambda: greeted() and said(app, "help"), "the chat greets on local")
        assert "svc" not in said(app, "help")[0]
        await pilot.press("escape")
        hosts = app.main.query_one("#hosts", OptionList)
        hosts.focus()
        hosts.highlighted = 1
        await pilot.press("enter")
        await until(pilot, lambda: app.main.sidebar.selected_host == "inproc", "inproc chosen")
        await pilot.press("ctrl+t")
        offered = en("host_skills", host="inproc", names="svc")
        await until(pilot, lambda: offered in said(app, "help"), "the host's skills offered")
        assert en("host_changed", host="inproc") in said(app, "note")
        await type_line(pilot, app, "is cron ok there?")

        await until(pilot, chat_step_awaiting(app), "the command awaiting approval")
        await pilot.press("enter")
        done = en("skill_done", skill="svc", message="cron is fine there")
        await until(pilot, lambda: done in said(app, "result"), "the summary")
        view = chat_screen(app).conversation.query_one(RunView)
        assert view.run_title == "svc @ inproc"
    assert "- svc: Check whether a systemd unit is healthy" in llm.requests[0].system
    assert f"on-{ssh_server.state.home}" in llm.requests[3].last_user_text
    assert any("kosmos-panel/skills" in c for c in ssh_server.state.commands)


async def test_quitting_asks_while_a_chat_skill_runs_a_command_and_ctrl_c_stops_it(
    llm: ScriptedLLM, services: Any, home: Path
) -> None:
    write_skill(home / "skills")
    llm.script(relevant(), select("probe", unit="cron"), "[CMD] sleep 30", "[DONE] stopped")
    app = chat_app(llm, services, home)
    async with app.run_test(size=SIZE) as pilot:
        await type_line(pilot, app, "is cron ok?")
        screen = chat_screen(app)

        await until(pilot, chat_step_awaiting(app), "the command awaiting approval")
        await pilot.press("enter")
        await until(pilot, lambda: screen.skills.command_running, "the command running")
        assert screen.check_action("stop_command", ()) is True
        await pilot.press("ctrl+q")
        await until(pilot, lambda: isinstance(app.screen, QuitModal), "the quit question")
        await pilot.press("escape")  # stay
        assert screen.skills.command_running
        await pilot.press("ctrl+c")  # stop just the command: the run goes on
        await until(pilot, lambda: not screen.skills.command_running, "the command stopped")
        done = en("skill_done", skill="probe", message="stopped")
        await until(pilot, lambda: done in said(app, "result"), "the run's summary")
    assert "[stopped by the operator after " in llm.requests[3].last_user_text


async def test_an_unreachable_host_leaves_the_local_tools(
    llm: ScriptedLLM, services: Any, home: Path, ssh_home: Path
) -> None:
    (ssh_home / ".ssh").mkdir(mode=0o700, exist_ok=True)
    port = closed_port()
    (ssh_home / ".ssh" / "config").write_text(f"Host dead\n  HostName 127.0.0.1\n  Port {port}\n")
    app = chat_app(llm, services, home, host="dead", hosts=["local", "dead"])
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, ready(app), "the chat, greeted")
        # What the screen says is posted to the conversation, which shows it a moment later.
        await until(pilot, lambda: bool(said(app, "help")), "the greeting shown")
        reason = said(app, "reason")
        assert len(reason) == 1 and reason[0].endswith("; only the local skills are offered")
        assert "dead" in reason[0]
        assert said(app, "help")[0].startswith(en("greeting"))


def test_kosmos_tui_chat_flag() -> None:
    assert build_parser().parse_args(["tui", "--chat"]).chat is True
    assert build_parser().parse_args(["tui"]).chat is False
