"""The JSON reply envelope of seed 000: every validation case, and app actions as commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kosmos.engine.envelope import Envelope, app_command, parse_envelope
from kosmos.engine.operator import Approval
from kosmos.engine.session import SessionOptions
from kosmos.events import Directive, FormatError
from kosmos.hosts.local import LocalRunner
from tests.helpers import ScriptOperator, run_session
from tests.llmserver import ScriptedLLM

SID = "session_1764210832.530743"


def env(**data: object) -> str:
    return json.dumps(data, ensure_ascii=False)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        # 1. a plain text answer, as an object or a bare JSON string
        (env(text="Привет! Как дела?"), Envelope(text="Привет! Как дела?")),
        ('"Привет! Как дела?"', Envelope(text="Привет! Как дела?")),
        # 2. an action with all required fields
        (
            env(session_id=SID, command="open_app", args={"app_name": "Safari"}, text="Открываю."),
            Envelope(
                text="Открываю.", action="open_app", args={"app_name": "Safari"}, session_id=SID
            ),
        ),
        # open_app may use app_path instead of app_name
        (
            env(session_id=SID, command="open_app", args={"app_path": "/Apps/X.app"}, text=""),
            Envelope(text="", action="open_app", args={"app_path": "/Apps/X.app"}, session_id=SID),
        ),
        (
            env(session_id=SID, command="close_app", args={"app_name": "Safari"}, text="Закрываю."),
            Envelope(
                text="Закрываю.", action="close_app", args={"app_name": "Safari"}, session_id=SID
            ),
        ),
        # Example 3: an empty text with an action
        (
            env(session_id=SID, command="open_app", args={"app_name": "Calculator"}, text=""),
            Envelope(text="", action="open_app", args={"app_name": "Calculator"}, session_id=SID),
        ),
    ],
)
def test_valid_envelopes(reply: str, expected: Envelope) -> None:
    assert parse_envelope(reply) == expected


@pytest.mark.parametrize(
    ("data", "dropped"),
    [
        ({"command": "open_app", "args": {"app_name": "Safari"}}, "no session_id"),
        ({"session_id": "", "command": "open_app", "args": {"app_name": "S"}}, "no session_id"),
        ({"session_id": SID, "command": "open_app", "args": {}}, "app_name or args.app_path"),
        ({"session_id": SID, "command": "open_app", "args": {"app_name": " "}}, "app_name or"),
        ({"session_id": SID, "command": "open_app"}, "args is not an object"),
        # close_app needs app_name; app_path is not enough
        ({"session_id": SID, "command": "close_app", "args": {"app_path": "/A"}}, "app_name"),
        ({"session_id": SID, "command": "format_disk", "args": {}}, "unknown command"),
    ],
)
def test_a_broken_action_is_dropped_and_the_text_kept(data: dict, dropped: str) -> None:
    envelope = parse_envelope(env(**data, text="Открываю Safari."))
    assert envelope is not None
    assert envelope.action is None and envelope.text == "Открываю Safari."
    assert envelope.dropped is not None and dropped in envelope.dropped


@pytest.mark.parametrize("text", [None, 42, ["a"]])
def test_text_is_always_a_string(text: object) -> None:
    envelope = parse_envelope(json.dumps({"text": text}))
    assert envelope == Envelope(text="")


@pytest.mark.parametrize("reply", ["[CMD] ls", "{not json", '{"foo": 1}', "[1, 2]", ""])
def test_other_replies_are_not_envelopes(reply: str) -> None:
    assert parse_envelope(reply) is None


@pytest.mark.parametrize(
    ("action", "args", "os_name", "command"),
    [
        ("open_app", {"app_name": "Safari"}, "Darwin", "open -a Safari"),
        (
            "open_app",
            {"app_path": "/Applications/My App.app"},
            "Darwin",
            "open '/Applications/My App.app'",
        ),
        ("close_app", {"app_name": "Safari"}, "Darwin", "osascript -e 'quit app \"Safari\"'"),
        ("open_app", {"app_name": "Firefox"}, "Linux", "gtk-launch firefox || xdg-open Firefox"),
        (
            "open_app",
            {"app_path": "/usr/share/x.desktop"},
            "Linux",
            "xdg-open /usr/share/x.desktop",
        ),
        ("close_app", {"app_name": "firefox; rm -rf ~"}, "Linux", "pkill -x 'firefox; rm -rf ~'"),
    ],
)
def test_app_actions_become_the_targets_command(
    action: str, args: dict, os_name: str, command: str
) -> None:
    assert app_command(action, args, os_name) == command


async def test_session_shows_an_app_action_as_a_command_to_approve(
    llm: ScriptedLLM, tmp_path: Path
) -> None:
    llm.script(
        env(session_id=SID, command="close_app", args={"app_name": "gedit"}, text="Closing."),
        env(text="[DONE] closed"),
    )
    operator = ScriptOperator(approvals=[Approval.skip()])
    run = await run_session(
        llm.base_url, operator=operator, runner=LocalRunner(cwd=tmp_path), keep_output=False
    )
    assert run.result.status == "done" and run.result.message == "closed"
    [proposal] = operator.proposals
    assert proposal.command == "pkill -x gedit"  # this test machine is Linux
    first = run.of(Directive)[0]
    assert (first.kind, first.action, first.said) == ("cmd", "close_app", "Closing.")
    # The history keeps the envelope as the LLM wrote it.
    assistant = llm.requests[1].messages[2]["content"]
    assert json.loads(assistant)["command"] == "close_app"
    assert llm.requests[1].last_user_text == "User skipped the command.\n\n[Step 2 of 100]"


async def test_session_envelope_text_without_tag_is_a_message(
    llm: ScriptedLLM, tmp_path: Path
) -> None:
    llm.script(
        env(command="open_app", args={"app_name": "Safari"}, text="Opening Safari."),
        env(text=""),
        "[DONE] ok",
    )
    run = await run_session(
        llm.base_url,
        runner=LocalRunner(cwd=tmp_path),
        options=SessionOptions(non_interactive=True),
    )
    assert run.result.status == "done"
    # No session_id: the action was dropped, its text shown as a message.
    first = run.of(Directive)[0]
    assert (first.kind, first.text, first.action) == ("message", "Opening Safari.", None)
    # An empty text with nothing to do is a format error.
    assert len(run.of(FormatError)) == 1
