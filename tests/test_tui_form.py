"""kosmos tui: the skill form, the sidebar, modals and the operator seam's dangerous path."""

from __future__ import annotations

import asyncio
from pathlib import Path

from textual.widgets import Input, OptionList, Select

from kosmos.engine.operator import Approval, CommandProposal
from kosmos.tui.hostlist import host_choices
from kosmos.tui.operator import TuiOperator
from kosmos.tui.screens.modals import HostKeyModal, SecretModal
from kosmos.tui.widgets.run_view import RunView
from kosmos.tui.widgets.skill_form import ParamsForm, SkillPanel
from tests.conftest import run_cli
from tests.llmserver import ScriptedLLM
from tests.tuihelpers import awaiting_step, finished, make_app, until, write_skill


def _error(app, name: str) -> str:
    return str(app.main.query_one(f"#error-{name}").render())


async def test_form_marks_required_and_blocks_a_bad_start(llm: ScriptedLLM, home: Path) -> None:
    llm.script("[DONE] fine")
    app = make_app(llm.base_url, home)
    async with app.run_test(size=(140, 45)) as pilot:
        await until(pilot, lambda: app.main.query(ParamsForm), "the form")
        labels = [str(w.render()) for w in app.main.query(".param-label")]
        assert labels == ["unit *", "mode"]
        mode = app.main.query_one("#param-mode", Select)
        assert mode.value == "quick"
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert "required" in _error(app, "unit")
        assert not app.main.runs and len(llm.requests) == 0
        unit = app.main.query_one("#param-unit", Input)
        assert app.focused is unit
        await pilot.press(*"nginx.service")  # max_length 8 keeps what fits
        assert unit.value == "nginx.se"
        assert _error(app, "unit") == ""  # typing clears the error
        mode.value = "full"
        await pilot.press("ctrl+r")
        await until(pilot, finished(app), "the run's end")
    first = llm.requests[0].last_user_text
    assert "- unit: nginx.se" in first and "- mode: full" in first


async def test_sidebar_filter_and_selecting_a_skill(llm: ScriptedLLM, home: Path) -> None:
    write_skill(
        home / "skills", "---\nname: other\ndescription: zebra things\n---\nBody\n", "other"
    )
    app = make_app(llm.base_url, home, skill=None)
    async with app.run_test(size=(140, 45)) as pilot:
        skills = app.main.query_one("#skills", OptionList)
        await until(pilot, lambda: skills.option_count >= 2, "the skills listed")
        assert app.main.query_one(SkillPanel).skill is None
        await pilot.press("ctrl+f", *"zebra")
        await pilot.pause()
        names = [str(skills.get_option_at_index(i).prompt) for i in range(skills.option_count)]
        assert names == ["other"]
        await pilot.press("enter")  # from the filter to the list
        await pilot.press("enter")  # choose the highlighted skill
        await until(pilot, lambda: app.main.query_one(SkillPanel).skill is not None, "chosen")
        assert app.main.query_one(SkillPanel).skill.name == "other"
        assert "takes no parameters" in str(app.main.query_one("#params-form .hint").render())


async def test_host_key_modal_trust_and_cancel(llm: ScriptedLLM, home: Path) -> None:
    app = make_app(llm.base_url, home)
    async with app.run_test(size=(120, 40)) as pilot:
        asked = asyncio.ensure_future(
            app.prompter.confirm_host_key("db1", "ssh-ed25519", "SHA256:abcdef")
        )
        await until(pilot, lambda: isinstance(app.screen, HostKeyModal), "the host key modal")
        assert "SHA256:abcdef" in str(app.screen.query_one("#fingerprint").render())
        await pilot.press("t")
        assert await asked is True
        asked = asyncio.ensure_future(app.prompter.confirm_host_key("db1", "rsa", "SHA256:x"))
        await until(pilot, lambda: isinstance(app.screen, HostKeyModal), "the modal again")
        await pilot.press("enter")  # Cancel has the focus: trusting takes a deliberate key
        assert await asked is False


async def test_secret_modal_is_masked_and_returns_the_secret(llm: ScriptedLLM, home: Path) -> None:
    app = make_app(llm.base_url, home)
    async with app.run_test(size=(120, 40)) as pilot:
        operator = TuiOperator(app.main, app.prompter)
        asked = asyncio.ensure_future(operator.ask_secret("[sudo] password on local:"))
        await until(pilot, lambda: isinstance(app.screen, SecretModal), "the secret modal")
        title = str(app.screen.query_one(".dialog-title").render())
        assert title == "[sudo] password on local:"  # brackets are text, not markup
        field = app.screen.query_one("#secret", Input)
        assert field.password and app.focused is field
        await pilot.press(*"s3cret", "enter")
        assert await asked == "s3cret"
        asked = asyncio.ensure_future(app.prompter.ask_secret("Passphrase for id_ed25519"))
        await until(pilot, lambda: isinstance(app.screen, SecretModal), "the modal again")
        await pilot.press("escape")
        assert await asked is None


async def test_dangerous_command_needs_the_host_name(llm: ScriptedLLM, home: Path) -> None:
    app = make_app(llm.base_url, home, skill=None)
    async with app.run_test(size=(140, 45)) as pilot:
        view = RunView("manual", id="run-99")
        await app.main.query_one("#skill-tab").mount(view)
        operator = TuiOperator(view, app.prompter)
        view.operator = operator
        proposal = CommandProposal(
            step=1, command="rm -rf /srv/data", host="db1", risk="dangerous", reason="deletes"
        )
        decided = asyncio.ensure_future(operator.approve(proposal))
        await until(pilot, awaiting_step(app, 1, lambda: view), "asked, the step focused")
        step = view.cmd_steps[1]
        assert "dangerous" in str(step.query_one("#risk").render())
        await pilot.press("enter")  # Run: asks for the host name instead of running
        confirm = step.query_one("#confirm-input", Input)
        assert app.focused is confirm and not decided.done()
        await pilot.press("enter")  # nothing typed: the step says what to type
        assert not decided.done() and "db1" in str(step.query_one("#error").render())
        await pilot.press(*"db2", "enter")
        # What was typed goes to the engine's gate, which compares it with the host's name.
        assert await decided == Approval.run(typed="db2")


async def test_editing_a_dangerous_command_still_needs_the_host_name(
    llm: ScriptedLLM, home: Path
) -> None:
    app = make_app(llm.base_url, home, skill=None)
    async with app.run_test(size=(140, 45)) as pilot:
        view = RunView("manual", id="run-97")
        await app.main.query_one("#skill-tab").mount(view)
        operator = TuiOperator(view, app.prompter)
        view.operator = operator
        proposal = CommandProposal(step=2, command="rm -rf /srv/a", host="db1", risk="dangerous")
        decided = asyncio.ensure_future(operator.approve(proposal))
        await until(pilot, awaiting_step(app, 2, lambda: view), "asked, the step focused")
        await pilot.press("e", "backspace", "b", "enter")
        step = view.cmd_steps[2]
        assert app.focused is step.query_one("#confirm-input") and not decided.done()
        await pilot.press(*"db1", "enter")
        assert await decided == Approval.edit("rm -rf /srv/b", typed="db1")


async def test_read_only_proposal_offers_auto_approve(llm: ScriptedLLM, home: Path) -> None:
    app = make_app(llm.base_url, home, skill=None)
    async with app.run_test(size=(140, 45)) as pilot:
        view = RunView("manual", id="run-98")
        await app.main.query_one("#skill-tab").mount(view)
        operator = TuiOperator(view, app.prompter)
        view.operator = operator
        proposal = CommandProposal(step=4, command="df -h", host="local", risk="read_only")
        decided = asyncio.ensure_future(operator.approve(proposal))
        await until(pilot, awaiting_step(app, 4, lambda: view), "asked, the step focused")
        await pilot.press("a")
        approval = await decided
        assert approval.action == "run" and approval.auto_read_only


def test_host_choices_list_local_the_given_host_and_aliases(tmp_path: Path) -> None:
    ssh = tmp_path / ".ssh"
    ssh.mkdir()
    (ssh / "config").write_text("Host web1 web2\n  HostName 10.0.0.1\nHost *.internal\nHost db1\n")
    assert host_choices(tmp_path, "me@10.1.1.1:2222") == [
        "local",
        "me@10.1.1.1:2222",
        "web1",
        "web2",
        "db1",
    ]
    assert host_choices(tmp_path / "nowhere") == ["local"]


def test_cli_rejects_a_bad_param_before_the_screen_opens(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    done = run_cli(["tui", "--param", "oops"], env=cli_env, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "kosmos: --param 'oops': expected KEY=VALUE, for example --param unit=nginx.service"
    )
    shown = run_cli(["tui", "--help"], env=cli_env, cwd=tmp_path)
    assert shown.returncode == 0
    for flag in ("--host", "--skill", "--param", "--transcript"):
        assert flag in shown.stdout


async def test_an_unknown_skill_at_start_is_named_where_the_skill_would_be(
    llm: ScriptedLLM, home: Path
) -> None:
    app = make_app(llm.base_url, home, skill="no-such-skill")
    async with app.run_test(size=(140, 45)) as pilot:
        hint = app.main.query_one("#no-skill")

        def named() -> bool:
            return "--skill no-such-skill:" in str(hint.render())

        await until(pilot, named, "the unknown skill named in the panel")
        text = str(hint.render())
        assert "Choose a skill in the sidebar" in text
        await pilot.pause(0.2)
        assert named() and not app.main.runs
