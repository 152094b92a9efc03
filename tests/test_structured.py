"""Structured requests (seed 004) over real HTTP: each strategy, fallback on 400, repair round."""

from __future__ import annotations

import json
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict

from kosmos.config import Settings
from kosmos.errors import UsageError
from kosmos.events import CapabilityFallback, Event, StructuredExchange, dump, parse_event
from kosmos.llm.content import (
    CommandOutputContent,
    ContentTypes,
    ContextMessage,
    Draft,
    FileContent,
    StateContent,
)
from kosmos.llm.factory import make_provider
from kosmos.llm.structured import InvalidSolution, StructuredClient, lean_schema
from kosmos.prompts import Prompts
from tests.llmserver import ScriptedLLM, call, calls

PROMPTS = Prompts.load()


class Verdict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    status: Literal["ok", "broken"]
    reason: str


SCHEMA = {
    "additionalProperties": False,
    "properties": {
        "status": {"enum": ["ok", "broken"], "type": "string"},
        "reason": {"type": "string"},
    },
    "required": ["status", "reason"],
    "type": "object",
}
CONTEXT = [
    ContextMessage(role="system", content="You judge servers."),
    ContextMessage(role="user", content="Is nginx fine?"),
]


def client(llm: ScriptedLLM, events: list[Event], provider: str = "openai", **caps: bool):
    url = llm.gemini_base_url if provider == "gemini" else llm.base_url
    p = make_provider(Settings(provider=provider, base_url=url, llm_retries=0))
    for name, value in caps.items():
        setattr(p.capabilities, name, value)
    return StructuredClient(p, PROMPTS, emit=events.append)


async def test_native_json_schema_first(llm: ScriptedLLM) -> None:
    llm.script('{"status": "ok", "reason": "active"}')
    events: list[Event] = []
    c = client(llm, events)
    solution = await c.request(CONTEXT, Verdict, step=3)
    await c.provider.aclose()
    assert solution.value == Verdict(status="ok", reason="active")
    assert solution.strategy == "json_schema"
    body = llm.requests[0].body
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Verdict", "schema": SCHEMA, "strict": True},
    }
    assert "tools" not in body
    # json_schema needs nothing in the prompt: the messages are the context as given.
    assert body["messages"] == [
        {"role": "system", "content": "You judge servers."},
        {"role": "user", "content": "Is nginx fine?"},
    ]
    [record] = [e for e in events if isinstance(e, StructuredExchange)]
    assert record.step == 3 and record.strategy == "json_schema" and not record.repaired
    assert record.solution == {"status": "ok", "reason": "active"}
    assert record.schema_ == SCHEMA
    assert [m.content for m in record.context] == ["You judge servers.", "Is nginx fine?"]
    dumped = dump(record)
    assert dumped["schema"] == SCHEMA  # the transcript's key is `schema`


async def test_rejected_json_schema_falls_back_to_the_tool_and_remembers(
    llm: ScriptedLLM,
) -> None:
    llm.reject("json_schema")
    llm.script(
        calls(call("generate_response", status="broken", reason="port closed")),
        calls(call("generate_response", status="ok", reason="fine")),
    )
    events: list[Event] = []
    c = client(llm, events)
    first = await c.request(CONTEXT, Verdict)
    second = await c.request(CONTEXT, Verdict)
    await c.provider.aclose()
    assert (first.value.status, second.value.status) == ("broken", "ok")
    assert first.strategy == second.strategy == "tool"
    # One refused request, then only tool requests: the fallback is remembered for the run.
    assert [sorted(r.capabilities_used()) for r in llm.requests] == [
        ["json_schema"],
        ["tools"],
        ["tools"],
    ]
    body = llm.requests[1].body
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "generate_response",
                "description": PROMPTS["STRUCTURED_TOOL_DESCRIPTION"],
                "parameters": SCHEMA,
            },
        }
    ]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "generate_response"}}
    assert body["messages"][0]["content"] == (
        "You judge servers.\n\n" + PROMPTS["STRUCTURED_TOOL_INSTRUCTION"]
    )
    fallbacks = [e for e in events if isinstance(e, CapabilityFallback)]
    assert [(f.capability, f.next) for f in fallbacks] == [("json_schema", "tool")]
    assert "not supported" in fallbacks[0].reason


async def test_json_mode_with_the_schema_in_the_system_prompt(llm: ScriptedLLM) -> None:
    llm.reject("json_schema", "tools")
    llm.script('```json\n{"status": "ok", "reason": "up"}\n```')
    events: list[Event] = []
    c = client(llm, events)
    solution = await c.request(CONTEXT, Verdict)
    await c.provider.aclose()
    assert solution.strategy == "json_mode" and solution.value.reason == "up"
    last = llm.requests[-1].body
    assert last["response_format"] == {"type": "json_object"}
    assert "tools" not in last
    schema_text = json.dumps(SCHEMA, separators=(",", ":"))
    assert last["messages"][0]["content"] == (
        "You judge servers.\n\n" + PROMPTS["STRUCTURED_JSON_INSTRUCTION"].format(schema=schema_text)
    )
    assert [(e.capability, e.next) for e in events if isinstance(e, CapabilityFallback)] == [
        ("json_schema", "tool"),
        ("tools", "json_mode"),
    ]


async def test_without_json_mode_the_prompt_alone_carries_the_schema(llm: ScriptedLLM) -> None:
    llm.reject("json_mode")
    llm.script('Sure! {"status": "ok", "reason": "up"}')
    c = client(llm, [], json_schema=False, tools=False)
    solution = await c.request(CONTEXT, Verdict)
    await c.provider.aclose()
    assert solution.value.status == "ok"
    assert [sorted(r.capabilities_used()) for r in llm.requests] == [["json_mode"], []]
    assert "JSON schema" in llm.requests[-1].body["messages"][0]["content"]


async def test_configured_capabilities_pick_the_strategy_without_a_400(llm: ScriptedLLM) -> None:
    llm.script(calls(call("generate_response", status="ok", reason="x")))
    c = client(llm, [], json_schema=False)
    assert (await c.request(CONTEXT, Verdict)).strategy == "tool"
    await c.provider.aclose()
    assert len(llm.requests) == 1


async def test_one_repair_round_sends_the_validation_error(llm: ScriptedLLM) -> None:
    llm.script('{"status": "maybe", "reason": "hm"}', '{"status": "broken", "reason": "hm"}')
    events: list[Event] = []
    c = client(llm, events)
    solution = await c.request(CONTEXT, Verdict)
    await c.provider.aclose()
    assert solution.repaired and solution.value.status == "broken"
    messages = llm.requests[1].body["messages"]
    assert messages[-2] == {"role": "assistant", "content": '{"status": "maybe", "reason": "hm"}'}
    assert messages[-1]["role"] == "user"
    assert messages[-1]["content"].startswith("Your answer did not match the required schema: ")
    assert "status: Input should be 'ok' or 'broken'" in messages[-1]["content"]
    [record] = [e for e in events if isinstance(e, StructuredExchange)]
    assert record.repaired and record.solution == {"status": "broken", "reason": "hm"}


async def test_repair_in_the_tool_strategy_answers_the_call(llm: ScriptedLLM) -> None:
    llm.script(
        calls(call("generate_response", id="call_a", status="ok")),
        calls(call("generate_response", id="call_b", status="ok", reason="fixed")),
    )
    c = client(llm, [], json_schema=False)
    solution = await c.request(CONTEXT, Verdict)
    await c.provider.aclose()
    assert solution.value.reason == "fixed"
    messages = llm.requests[1].body["messages"]
    assert messages[-2]["tool_calls"][0]["id"] == "call_a"
    assert messages[-1]["role"] == "tool" and messages[-1]["tool_call_id"] == "call_a"
    assert "reason: Field required" in messages[-1]["content"]


async def test_a_second_invalid_answer_is_an_error(llm: ScriptedLLM) -> None:
    llm.script("not json at all", "still not json")
    events: list[Event] = []
    c = client(llm, events)
    with pytest.raises(InvalidSolution, match="after one repair round"):
        await c.request(CONTEXT, Verdict)
    await c.provider.aclose()
    assert len(llm.requests) == 2
    [record] = [e for e in events if isinstance(e, StructuredExchange)]
    assert record.solution is None and record.error == "the answer was not JSON"


async def test_gemini_tool_strategy_forces_the_function(llm: ScriptedLLM) -> None:
    llm.script(calls(call("generate_response", status="ok", reason="g")))
    c = client(llm, [], provider="gemini", json_schema=False)
    solution = await c.request(CONTEXT, Verdict)
    await c.provider.aclose()
    assert solution.value.reason == "g"
    body = llm.requests[0].body
    assert body["tool_config"] == {
        "function_calling_config": {"mode": "ANY", "allowed_function_names": ["generate_response"]}
    }
    declared = body["tools"][0]["function_declarations"][0]
    assert declared["name"] == "generate_response"
    assert declared["parameters"] == {
        "properties": {
            "status": {"enum": ["ok", "broken"], "type": "string"},
            "reason": {"type": "string"},
        },
        "required": ["status", "reason"],
        "type": "object",
    }


async def test_gemini_rejected_schema_falls_back(llm: ScriptedLLM) -> None:
    llm.reject("json_schema")
    llm.script(calls(call("generate_response", status="ok", reason="g")))
    events: list[Event] = []
    c = client(llm, events, provider="gemini")
    assert (await c.request(CONTEXT, Verdict)).strategy == "tool"
    await c.provider.aclose()
    assert [e.capability for e in events if isinstance(e, CapabilityFallback)] == ["json_schema"]


async def test_content_types_render_as_text(llm: ScriptedLLM) -> None:
    llm.script('{"status": "ok", "reason": "r"}')
    c = client(llm, [])
    context = [
        ContextMessage(role="system", content="Judge."),
        ContextMessage(role="user", content=StateContent(state={"host": "web1", "tries": 2})),
        ContextMessage(
            role="user",
            content=CommandOutputContent(
                command="systemctl is-active nginx",
                output="\x1b[31mfailed\x1b[0m\n\n\n",
                exit_code=3,
            ),
        ),
        ContextMessage(role="user", content=FileContent(path="/etc/motd", text="hello\n")),
    ]
    await c.request(context, Verdict)
    await c.provider.aclose()
    assert [m["content"] for m in llm.requests[0].body["messages"]] == [
        "Judge.",
        '[SYSTEM STATE]\nhost: "web1"\ntries: 2',
        "$ systemctl is-active nginx\nfailed\n[exit code: 3]",
        "--- File: /etc/motd ---\nhello",
    ]


class Ticket(BaseModel):
    type: Literal["ticket"] = "ticket"
    text: str


async def test_a_registered_handler_changes_settings_schema_and_context(
    llm: ScriptedLLM,
) -> None:
    def ticket(item: Any, role: str, draft: Draft) -> None:
        draft.llm["temperature"] = 0.0
        draft.schema["properties"]["reason"]["maxLength"] = 40
        draft.add("system", "Tickets are urgent.")
        draft.add(role, f"Ticket: {item.text}")

    llm.script('{"status": "broken", "reason": "disk"}')
    c = client(llm, [], json_schema=True)
    c.types.register("ticket", ticket)
    await c.request([ContextMessage(role="user", content=Ticket(text="disk full"))], Verdict)
    await c.provider.aclose()
    body = llm.requests[0].body
    assert body["temperature"] == 0.0
    assert body["response_format"]["json_schema"]["schema"]["properties"]["reason"] == {
        "maxLength": 40,
        "type": "string",
    }
    assert body["messages"] == [
        {"role": "system", "content": "Tickets are urgent."},
        {"role": "user", "content": "Ticket: disk full"},
    ]
    # The registry belongs to this client; a fresh one does not know the type.
    assert "ticket" not in ContentTypes.default().handlers


def test_lean_schema_drops_titles_but_not_a_property_named_title() -> None:
    class Page(BaseModel):
        title: str

    assert lean_schema(Page.model_json_schema()) == {
        "properties": {"title": {"type": "string"}},
        "required": ["title"],
        "type": "object",
    }


def test_an_unknown_content_type_is_a_clear_error() -> None:
    with pytest.raises(UsageError, match="no handler for content type 'ticket'"):
        ContentTypes.default().build([ContextMessage(role="user", content=Ticket(text="x"))], {})


async def test_a_recorded_request_replays_byte_for_byte(llm: ScriptedLLM) -> None:
    llm.script(calls(call("generate_response", status="ok", reason="first")))
    events: list[Event] = []
    c = client(llm, events, json_schema=False)
    context = [*CONTEXT, ContextMessage(role="user", content=StateContent(state={"n": 1}))]
    await c.request(context, Verdict)
    [record] = [e for e in events if isinstance(e, StructuredExchange)]
    # Through the transcript's JSON and back, as a replay would read it.
    again = parse_event(json.loads(json.dumps(dump(record))))
    assert isinstance(again, StructuredExchange)
    llm.script(calls(call("generate_response", status="broken", reason="second")))
    solution = await c.replay(again, Verdict)
    await c.provider.aclose()
    assert solution.value.reason == "second"
    assert llm.requests[1].body == llm.requests[0].body
