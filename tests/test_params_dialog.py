"""Parameter collection by dialogue (seed 003): the scenarios, over real HTTP, both providers."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest

from kosmos.config import Settings
from kosmos.engine.params_dialog import DialogReply, DialogStalled, DialogState, ParamCollector
from kosmos.errors import InputNeeded
from kosmos.events import Event, ParamsUpdate
from kosmos.llm.factory import make_provider
from kosmos.prompts import Prompts
from tests.helpers import make_skill
from tests.llmserver import ScriptedLLM, call, calls

PROMPTS = Prompts.load()
SKILL = make_skill(
    name="port-check",
    params=(
        "\n  - {name: service, description: the systemd unit, required: true}"
        "\n  - {name: port, description: TCP port, required: true, max_length: 5}"
        "\n  - {name: mode, choices: [fast, slow], default: fast}"
    ),
)


@dataclass
class ScriptDialog:
    """The operator's side of the dialogue, from a list; records what was shown."""

    replies: list[DialogReply]
    shown: list[tuple[str, DialogState]] = field(default_factory=list)

    async def turn(self, text: str, state: DialogState) -> DialogReply:
        self.shown.append((text, state))
        return self.replies.pop(0) if self.replies else DialogReply(text=None)


def typed(text: str) -> DialogReply:
    return DialogReply(text=text)


async def collect(llm: ScriptedLLM, dialog: ScriptDialog, provider: str = "openai", **kw):
    url = llm.gemini_base_url if provider == "gemini" else llm.base_url
    p = make_provider(Settings(provider=provider, base_url=url, llm_retries=0))
    events: list[Event] = []
    collector = ParamCollector(SKILL, p, PROMPTS, dialog, emit=events.append, **kw)
    try:
        return await collector.collect(), events, collector
    finally:
        await p.aclose()


def updates(events: list[Event]) -> list[tuple[str, dict, dict]]:
    return [
        (e.kind, e.values, e.problems)
        for e in events
        if isinstance(e, ParamsUpdate) and e.kind != "turn"
    ]


async def test_one_param_at_a_time_then_the_button(llm: ScriptedLLM) -> None:
    llm.script(
        "Which service should I check?",
        calls(call("update_params", id="u1", service="nginx"), content="nginx. Which port?"),
        calls(
            call("update_params", id="u2", port="443"),
            content="– **service:** nginx\n– **port:** 443\n– **mode:** fast",
        ),
    )
    dialog = ScriptDialog([typed("nginx"), typed("443"), DialogReply(confirmed=True)])
    values, events, _ = await collect(llm, dialog)
    assert values == {"service": "nginx", "port": "443", "mode": "fast"}
    assert [s.missing for _, s in dialog.shown] == [["service", "port"], ["port"], []]
    assert dialog.shown[-1][1].complete
    turns = [(e.said, e.typed) for e in events if isinstance(e, ParamsUpdate) and e.kind == "turn"]
    assert turns == [
        ("Which service should I check?", "nginx"),
        ("nginx. Which port?", "443"),
        ("– **service:** nginx\n– **port:** 443\n– **mode:** fast", None),
    ]
    assert updates(events) == [
        ("update", {"service": "nginx"}, {}),
        ("update", {"port": "443"}, {}),
        ("confirm", {"service": "nginx", "port": "443", "mode": "fast"}, {}),
    ]
    # Every call carries the [SYSTEM STATE] block of that moment, and the two tools.
    systems = [r.messages[0]["content"] for r in llm.requests]
    assert systems[0].endswith(
        "[SYSTEM STATE]\n"
        'Collected: {"service": null, "port": null, "mode": "fast"}\n'
        "Still need: service, port\n"
        "DO NOT ask for already collected parameters."
    )
    assert systems[2].endswith(
        'Collected: {"service": "nginx", "port": null, "mode": "fast"}\n'
        "Still need: port\nDO NOT ask for already collected parameters."
    )
    tools = llm.requests[0].body["tools"]
    assert [t["function"]["name"] for t in tools] == ["update_params", "confirm_and_run"]
    assert tools[0]["function"]["parameters"] == {
        "type": "object",
        "properties": {
            "service": {"type": "string", "description": "the systemd unit"},
            "port": {"type": "string", "description": "TCP port"},
            "mode": {"type": "string", "description": "mode", "enum": ["fast", "slow"]},
        },
    }
    # The tool result answers the call by its id and shows the merged state.
    third = llm.requests[2].messages
    assert third[-2]["role"] == "tool" and third[-2]["tool_call_id"] == "u1"
    assert third[-2]["content"].startswith('Saved. Collected: {"mode": "fast", "service": "nginx"}')
    assert third[-1] == {"role": "user", "content": "443"}


async def test_several_at_once_and_a_typed_confirm_goes_through_the_llm(
    llm: ScriptedLLM,
) -> None:
    llm.script(
        "What should I check?",
        calls(
            call("update_params", service="sshd", port="22", mode="slow"),
            content="– **service:** sshd\n– **port:** 22\n– **mode:** slow",
        ),
        calls(call("confirm_and_run", id="c9"), content="Starting."),
    )
    dialog = ScriptDialog([typed("sshd on 22, slow please"), typed("yes, go")])
    values, events, _ = await collect(llm, dialog)
    assert values == {"service": "sshd", "port": "22", "mode": "slow"}
    assert llm.requests[2].messages[-1] == {"role": "user", "content": "yes, go"}
    assert updates(events)[-1][0] == "confirm"
    assert len(llm.requests) == 3


async def test_premature_confirm_is_ignored_and_the_llm_told_why(llm: ScriptedLLM) -> None:
    llm.script(
        calls(call("update_params", service="nginx"), call("confirm_and_run", id="early")),
        "I still need the port.",
        calls(call("update_params", port="80"), content="All set: nginx, 80, fast."),
    )
    dialog = ScriptDialog([typed("80"), DialogReply(confirmed=True)])
    values, events, _ = await collect(llm, dialog)
    assert values["port"] == "80"
    told = llm.requests[1].messages[-1]
    assert told["role"] == "tool" and told["tool_call_id"] == "early"
    assert told["content"] == PROMPTS["PARAMS_PREMATURE"].format(missing="port")
    assert [u[0] for u in updates(events)] == ["update", "premature_confirm", "update", "confirm"]
    # The premature confirm did not end the dialogue: the operator was asked.
    assert dialog.shown[0] == (
        "I still need the port.",
        DialogState({"mode": "fast", "service": "nginx"}, ["port"]),
    )


async def test_change_after_the_summary_keeps_the_other_values(llm: ScriptedLLM) -> None:
    llm.script(
        calls(call("update_params", service="nginx", port="80"), content="nginx, 80, fast. OK?"),
        calls(call("update_params", port="8080", service=""), content="nginx, 8080, fast. OK?"),
    )
    dialog = ScriptDialog([typed("change the port to 8080"), DialogReply(confirmed=True)])
    values, _, _ = await collect(llm, dialog)
    # New values overwrite, old ones stay; an empty value never erases one.
    assert values == {"service": "nginx", "port": "8080", "mode": "fast"}
    assert [s.complete for _, s in dialog.shown] == [True, True]


async def test_values_are_checked_against_the_param_rules(llm: ScriptedLLM) -> None:
    llm.script(
        calls(call("update_params", service="nginx", port="123456", mode="turbo", color="red")),
        "The port must be at most 5 characters. Which port?",
        calls(call("update_params", port="443"), content="Done: nginx, 443, fast."),
    )
    dialog = ScriptDialog([typed("443"), DialogReply(confirmed=True)])
    values, events, _ = await collect(llm, dialog)
    assert values == {"service": "nginx", "port": "443", "mode": "fast"}
    rejected = [u for u in updates(events) if u[0] == "rejected"][0][2]
    assert rejected == {
        "port": "must be at most 5 characters (got 6)",
        "mode": "must be one of: fast, slow (got 'turbo')",
        "color": "no such parameter",
    }
    result = llm.requests[1].messages[-1]["content"]
    assert "Not saved: port: must be at most 5 characters (got 6)" in result
    # The operator sees what was not taken, with the value, once: at the next turn.
    assert dialog.shown[0][1].rejected == {
        "port": "123456: must be at most 5 characters (got 6)",
        "mode": "turbo: must be one of: fast, slow (got 'turbo')",
        "color": "red: no such parameter",
    }
    assert dialog.shown[1][1].rejected == {}
    assert [u[1] for u in updates(events) if u[0] == "rejected"][0] == {
        "port": "123456",
        "mode": "turbo",
    }


async def test_the_button_does_nothing_while_something_is_missing(llm: ScriptedLLM) -> None:
    llm.script("Which service?", calls(call("update_params", service="a", port="1"), content="ok?"))
    dialog = ScriptDialog(
        [DialogReply(confirmed=True), typed("a on 1"), DialogReply(confirmed=True)]
    )
    values, _, _ = await collect(llm, dialog)
    assert values["service"] == "a"
    assert len(llm.requests) == 2


async def test_operator_leaving_is_input_needed(llm: ScriptedLLM) -> None:
    llm.script("Which service?")
    with pytest.raises(InputNeeded, match="pass them with --param"):
        await collect(llm, ScriptDialog([]))


async def test_given_values_count_as_collected(llm: ScriptedLLM) -> None:
    llm.script(calls(call("update_params", port="22"), content="sshd, 22. OK?"))
    dialog = ScriptDialog([DialogReply(confirmed=True)])
    values, _, _ = await collect(llm, dialog, given={"service": "sshd"})
    assert values == {"service": "sshd", "port": "22", "mode": "fast"}
    assert '"service": "sshd"' in llm.requests[0].messages[0]["content"]


async def test_gemini_dialogue_multi_part_and_function_responses(llm: ScriptedLLM) -> None:
    llm.script(
        calls(call("update_params", service="nginx"), content="nginx it is. Which port?"),
        calls(call("confirm_and_run"), content="Starting."),
        calls(call("update_params", port="80"), content="nginx on 80. Run?"),
        calls(call("confirm_and_run"), content="Starting."),
    )
    dialog = ScriptDialog([typed("yes"), typed("80"), typed("yes")])
    values, events, _ = await collect(llm, dialog, provider="gemini")
    assert values == {"service": "nginx", "port": "80", "mode": "fast"}
    # The text of the multi-part reply reached the operator.
    assert dialog.shown[0][0] == "nginx it is. Which port?"
    body = llm.requests[1].body
    assert body["tool_config"] == {"function_calling_config": {"mode": "AUTO"}}
    model_turn, user_turn = body["contents"][1], body["contents"][2]
    assert model_turn["parts"][1] == {
        "functionCall": {"name": "update_params", "args": {"service": "nginx"}}
    }
    assert user_turn["parts"][0]["functionResponse"]["name"] == "update_params"
    assert user_turn["parts"][1] == {"text": "yes"}  # one user turn: result, then the typed text
    declared = body["tools"][0]["function_declarations"]
    assert declared[1] == {"name": "confirm_and_run", "description": PROMPTS["PARAMS_CONFIRM_TOOL"]}
    assert [u[0] for u in updates(events)].count("premature_confirm") == 1
    assert json.loads(json.dumps(values)) == values


async def test_a_model_that_never_calls_the_tools_stalls_the_dialogue(llm: ScriptedLLM) -> None:
    llm.script("Which service?", "Which service, please?", "I need a service.")
    dialog = ScriptDialog([typed("nginx"), typed("nginx!")])
    with pytest.raises(DialogStalled, match="3 replies in a row without a tool call"):
        await collect(llm, dialog)
    assert len(dialog.shown) == 2


async def test_the_llm_cannot_confirm_values_the_operator_has_not_seen(llm: ScriptedLLM) -> None:
    # The LLM makes the values up and confirms them before the operator said a word.
    llm.script(
        calls(
            call("update_params", id="u1", service="nginx", port="443"),
            call("confirm_and_run", id="c1"),
        ),
        "– **service:** nginx\n– **port:** 443",
        # The operator answers the summary by changing a value; the LLM confirms at once.
        calls(call("update_params", id="u2", port="8443"), call("confirm_and_run", id="c2")),
        "– **service:** nginx\n– **port:** 8443",
        calls(call("confirm_and_run", id="c3")),
    )
    dialog = ScriptDialog([typed("port 8443, go"), typed("yes")])
    values, events, _ = await collect(llm, dialog)
    assert values == {"service": "nginx", "port": "8443", "mode": "fast"}
    # Each summary was on screen before the run could start.
    assert [(text, s.complete) for text, s in dialog.shown] == [
        ("– **service:** nginx\n– **port:** 443", True),
        ("– **service:** nginx\n– **port:** 8443", True),
    ]
    kinds = [e.kind for e in events if isinstance(e, ParamsUpdate) and e.kind != "turn"]
    assert kinds == ["update", "premature_confirm", "update", "premature_confirm", "confirm"]
    refused = llm.requests[1].messages[-1]
    assert refused["tool_call_id"] == "c1" and "has not seen" in refused["content"]
