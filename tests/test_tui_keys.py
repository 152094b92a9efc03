"""The TUI's keyboard path, as a newcomer walks it: filter, open, fill in, run; the footer
says the keys; ctrl+c and ctrl+r do what kosmos says they do, also while a host connects."""

from __future__ import annotations

from pathlib import Path

import asyncssh
from textual.widgets import Input, OptionList

from kosmos.tui.screens.modals import HostKeyModal
from kosmos.tui.widgets.keys import Keys as KeyLine
from kosmos.tui.widgets.skill_form import SkillPanel
from tests.llmserver import ScriptedLLM
from tests.sshserver import InProcessSSHServer, write_client_home
from tests.tuihelpers import awaiting_step, finished, front_view, make_app, until

SIZE = (140, 45)
Keys = tuple[asyncssh.SSHKey, asyncssh.SSHKey]


def shown_skill(app) -> str | None:
    panel = app.main.query_one(SkillPanel)
    return panel.skill.name if panel.skill else None


def footer_keys(app) -> dict[str, str]:
    """What the footer shows: key -> description, for the bindings that apply now."""
    return {
        key: active.binding.description
        for key, active in app.screen.active_bindings.items()
        if active.binding.show and active.enabled
    }


async def test_enter_in_the_filter_opens_the_only_match_and_the_form_takes_the_keys(
    llm: ScriptedLLM, home: Path
) -> None:
    llm.script("[CMD] echo hi", "[DONE] ok")
    app = make_app(llm.base_url, home, skill=None)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.focused, Input), "the filter focused")
        assert app.focused.id == "filter"
        assert footer_keys(app).get("enter") == "Open match"
        await pilot.press(*"probe", "enter")
        await until(pilot, lambda: shown_skill(app) == "probe", "the only match opened")
        # The first field to fill in has the focus: type, then run.
        await until(pilot, lambda: getattr(app.focused, "id", None) == "param-unit", "focus")
        await pilot.press(*"web", "ctrl+r")
        await until(pilot, awaiting_step(app, 1), "the run's first step")


async def test_enter_on_a_skill_in_the_list_moves_to_its_form(llm: ScriptedLLM, home: Path) -> None:
    app = make_app(llm.base_url, home, skill=None)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.focused, Input), "the filter focused")
        await pilot.press(*"s", "enter")  # many skills match: the focus goes to them
        skills = app.main.query_one("#skills", OptionList)
        await until(pilot, lambda: app.focused is skills, "the skill list focused")
        assert shown_skill(app) is None
        assert footer_keys(app).get("enter") == "Open"
        names = [skill.name for skill in app.main.sidebar._shown_skills]
        skills.highlighted = names.index("probe")
        await pilot.press("enter")
        await until(pilot, lambda: shown_skill(app) == "probe", "probe opened")
        await until(pilot, lambda: getattr(app.focused, "id", None) == "param-unit", "focus")


async def test_the_footer_says_how_to_quit_and_ctrl_c_says_what_it_does(
    llm: ScriptedLLM, home: Path
) -> None:
    app = make_app(llm.base_url, home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert footer_keys(app).get("ctrl+q") == "Quit"
        await pilot.press("ctrl+c")
        await until(pilot, lambda: list(app._notifications), "a notification")
        said = [n.message for n in app._notifications]
        assert said == ["ctrl+c stops a running command, and none is running here; ctrl+q quits"]


async def test_the_key_line_shows_the_keys_of_the_focus_and_a_click_presses_one(
    llm: ScriptedLLM, home: Path
) -> None:
    app = make_app(llm.base_url, home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        line = app.screen.query_one(KeyLine)
        drawn = str(line.render())
        # What the line draws is what the screen's bindings offer now, in their order, and
        # the command palette's key last.
        offered = list(dict.fromkeys(footer_keys(app).values()))
        assert [k.description for k in line.keys] == [*offered, "palette"]
        assert "^q Quit" in drawn and "^f Filter" in drawn and drawn.endswith("^p palette ")
        app.screen.query_one(OptionList).focus()
        await pilot.pause()
        assert not app.screen.query_one("#filter").has_focus
        at = str(line.render()).index("^f Filter")
        await pilot.click(KeyLine, offset=(at + 1, 0))
        await until(pilot, lambda: app.screen.query_one("#filter").has_focus, "the filter focused")


async def test_ctrl_r_while_the_host_key_is_asked_runs_once_the_host_is_trusted(
    llm: ScriptedLLM, ssh_home: Path, ssh_server: InProcessSSHServer, ssh_keys: Keys
) -> None:
    write_client_home(ssh_home, ssh_server, ssh_keys[1], trust=False)
    llm.script("[CMD] echo over-ssh", "[DONE] checked")
    app = make_app(
        llm.base_url, ssh_home, params={"unit": "x"}, hosts=["local", "inproc"], host="inproc"
    )
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, HostKeyModal), "the host key modal")
        await pilot.press("ctrl+r")  # the host is still connecting: kept, not dropped
        await pilot.press("t")
        await until(pilot, awaiting_step(app, 1), "the run started once the host was trusted")
        await pilot.press("enter")
        await until(pilot, finished(app), "the run's end")
        assert front_view(app).result.status == "done"


async def test_ctrl_r_while_the_host_key_is_asked_then_cancelled_says_so(
    llm: ScriptedLLM, ssh_home: Path, ssh_server: InProcessSSHServer, ssh_keys: Keys
) -> None:
    write_client_home(ssh_home, ssh_server, ssh_keys[1], trust=False)
    app = make_app(
        llm.base_url, ssh_home, params={"unit": "x"}, hosts=["local", "inproc"], host="inproc"
    )
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, HostKeyModal), "the host key modal")
        await pilot.press("ctrl+r", "escape")
        said = lambda: [n.message for n in app._notifications]  # noqa: E731
        await until(pilot, lambda: any("did not start" in m for m in said()), "why not")
        assert "the run did not start: inproc is not connected" in said()
        assert len(app.main.runs) == 0 and llm.requests == []
