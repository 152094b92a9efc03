"""Both providers over real HTTP: exact request bodies, normalized replies, capability 400s."""

from __future__ import annotations

import pytest

from kosmos.config import Settings, check_settings
from kosmos.errors import LLMError
from kosmos.events import Message, ToolCall
from kosmos.llm.factory import make_provider
from kosmos.llm.provider import CapabilityRejected, ResponseFormat, ToolSpec
from tests.llmserver import Completion, ScriptedLLM, Status, call, calls

TOOL = ToolSpec(
    name="run_command",
    description="Run a shell command",
    parameters={
        "type": "object",
        "properties": {"command": {"type": "string", "description": "the command"}},
        "required": ["command"],
        "additionalProperties": False,
        "title": "RunCommand",
    },
)


def provider(llm: ScriptedLLM, name: str = "openai", **extra: object):
    url = llm.gemini_base_url if name == "gemini" else llm.base_url
    model = "gemini-2.0-flash" if name == "gemini" else "CHEAP"
    cfg = {"provider": name, "base_url": url, "model": model, "llm_retries": 0, **extra}
    return make_provider(check_settings(cfg))


HISTORY = [
    Message(role="system", content="be brief"),
    Message(role="user", content="check disk"),
    Message(
        role="assistant",
        content="Looking.",
        tool_calls=(ToolCall(id="call_7", name="run_command", args={"command": "df -h"}),),
    ),
    Message(
        role="tool", content="Command output:\n/ 10%", tool_call_id="call_7", name="run_command"
    ),
]


async def test_openai_tools_body_and_tool_call_reply(llm: ScriptedLLM) -> None:
    llm.script(calls(call("run_command", id="call_9", command="uptime"), content="Checking."))
    p = provider(llm)
    reply = await p.complete(HISTORY, tools=[TOOL])
    await p.aclose()
    assert reply.text == "Checking."
    assert reply.tool_calls == [
        ToolCall(id="call_9", name="run_command", args={"command": "uptime"})
    ]
    assert reply.finish_reason == "tool_calls"
    assert reply.usage == {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    body = llm.requests[0].body
    assert body == {
        "model": "CHEAP",
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "check disk"},
            {
                "role": "assistant",
                "content": "Looking.",
                "tool_calls": [
                    {
                        "id": "call_7",
                        "type": "function",
                        "function": {"name": "run_command", "arguments": '{"command": "df -h"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_7", "content": "Command output:\n/ 10%"},
        ],
        "temperature": 0.3,
        "max_tokens": 512,
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "run_command",
                    "description": "Run a shell command",
                    "parameters": TOOL.parameters,
                },
            }
        ],
        "tool_choice": "auto",
    }


async def test_openai_response_format_bodies(llm: ScriptedLLM) -> None:
    llm.script('{"a": 1}', '{"a": 2}')
    p = provider(llm)
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    await p.complete(HISTORY[:2], response_format=ResponseFormat("json_schema", schema, "answer"))
    await p.complete(HISTORY[:2], response_format=ResponseFormat("json_object"))
    await p.aclose()
    assert llm.requests[0].body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "answer", "schema": schema, "strict": False},
    }
    assert llm.requests[1].body["response_format"] == {"type": "json_object"}


async def test_gemini_body_headers_and_url(llm: ScriptedLLM) -> None:
    llm.script("[DONE] ok")
    p = provider(llm, "gemini", api_key="AIza-canary")
    reply = await p.complete(HISTORY, tools=[TOOL])
    await p.aclose()
    req = llm.requests[0]
    assert req.path == "/v1beta/models/gemini-2.0-flash:generateContent"
    assert req.headers["x-goog-api-key"] == "AIza-canary"
    assert "authorization" not in req.headers
    assert req.body == {
        "systemInstruction": {"parts": [{"text": "be brief"}]},
        "contents": [
            {"role": "user", "parts": [{"text": "check disk"}]},
            {
                "role": "model",
                "parts": [
                    {"text": "Looking."},
                    {"functionCall": {"name": "run_command", "args": {"command": "df -h"}}},
                ],
            },
            {
                "role": "user",
                "parts": [
                    {
                        "functionResponse": {
                            "name": "run_command",
                            "response": {"result": "Command output:\n/ 10%"},
                        }
                    }
                ],
            },
        ],
        "tools": [
            {
                "function_declarations": [
                    {
                        "name": "run_command",
                        "description": "Run a shell command",
                        # Gemini's OpenAPI subset: no title, no additionalProperties.
                        "parameters": {
                            "type": "object",
                            "properties": {
                                "command": {"type": "string", "description": "the command"}
                            },
                            "required": ["command"],
                        },
                    }
                ]
            }
        ],
        "tool_config": {"function_calling_config": {"mode": "AUTO"}},
        "generationConfig": {"temperature": 0.3, "maxOutputTokens": 512},
    }
    assert reply.text == "[DONE] ok"
    assert reply.finish_reason == "STOP"
    assert reply.usage == {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


async def test_gemini_without_key_sends_no_key_header(llm: ScriptedLLM) -> None:
    llm.script("hi")
    p = provider(llm, "gemini")
    await p.complete(HISTORY[:2])
    await p.aclose()
    assert "x-goog-api-key" not in llm.requests[0].headers
    assert set(llm.requests[0].body) == {"systemInstruction", "contents", "generationConfig"}


async def test_gemini_multi_part_reply_keeps_text_and_call(llm: ScriptedLLM) -> None:
    llm.script(
        {
            "candidates": [
                {
                    "content": {
                        "role": "model",
                        "parts": [
                            {"text": "Anime — good choice! "},
                            {"functionCall": {"name": "update_params", "args": {"style": "anime"}}},
                            {"text": "Which emotion?"},
                        ],
                    },
                    "finishReason": "STOP",
                }
            ]
        }
    )
    p = provider(llm, "gemini")
    reply = await p.complete(HISTORY[:2], tools=[TOOL])
    await p.aclose()
    assert reply.text == "Anime — good choice! Which emotion?"
    assert [(c.name, c.args) for c in reply.tool_calls] == [("update_params", {"style": "anime"})]
    assert reply.usage is None


async def test_gemini_json_schema_and_json_mode(llm: ScriptedLLM) -> None:
    llm.script('{"a": 1}', '{"a": 1}')
    p = provider(llm, "gemini")
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    await p.complete(HISTORY[:2], response_format=ResponseFormat("json_schema", schema))
    await p.complete(HISTORY[:2], response_format=ResponseFormat("json_object"))
    await p.aclose()
    assert llm.requests[0].body["generationConfig"] == {
        "temperature": 0.3,
        "maxOutputTokens": 512,
        "responseMimeType": "application/json",
        "responseJsonSchema": schema,
    }
    assert llm.requests[1].body["generationConfig"] == {
        "temperature": 0.3,
        "maxOutputTokens": 512,
        "responseMimeType": "application/json",
    }


async def test_gemini_blocked_prompt_is_a_clear_error(llm: ScriptedLLM) -> None:
    llm.script({"promptFeedback": {"blockReason": "SAFETY"}})
    p = provider(llm, "gemini")
    with pytest.raises(LLMError, match=r"refused the prompt \(SAFETY\)"):
        await p.complete(HISTORY[:2])
    await p.aclose()


@pytest.mark.parametrize("name", ["openai", "gemini"])
@pytest.mark.parametrize(
    ("capability", "kwargs"),
    [
        ("tools", {"tools": [TOOL]}),
        ("json_schema", {"response_format": ResponseFormat("json_schema", {"type": "object"})}),
        ("json_mode", {"response_format": ResponseFormat("json_object")}),
    ],
)
async def test_a_400_about_a_capability_names_it(
    llm: ScriptedLLM, name: str, capability: str, kwargs: dict
) -> None:
    llm.reject(capability)
    p = provider(llm, name)
    with pytest.raises(CapabilityRejected) as info:
        await p.complete(HISTORY[:2], **kwargs)
    await p.aclose()
    assert info.value.capability == capability
    assert info.value.exit_code == 5


async def test_an_unrelated_400_is_a_plain_llm_error(llm: ScriptedLLM) -> None:
    llm.script(Status(400, {"error": {"message": "context length exceeded"}}))
    p = provider(llm)
    with pytest.raises(LLMError) as info:
        await p.complete(HISTORY[:2], tools=[TOOL])
    await p.aclose()
    assert not isinstance(info.value, CapabilityRejected)
    assert "context length exceeded" in str(info.value)


async def test_openai_unparsable_arguments_are_kept(llm: ScriptedLLM) -> None:
    bad = {"id": "c1", "type": "function", "function": {"name": "finish", "arguments": "{oops"}}
    llm.script(Completion(tool_calls=[bad]))
    p = provider(llm)
    reply = await p.complete(HISTORY[:2], tools=[TOOL])
    await p.aclose()
    assert reply.tool_calls[0].args == {"_unparsed": "{oops"}


async def test_gemini_retries_like_openai_and_names_its_key(llm: ScriptedLLM) -> None:
    llm.script(Status(503, {"error": {"message": "overloaded", "status": "UNAVAILABLE"}}), "ok")
    retries: list[tuple[int, str]] = []
    p = make_provider(Settings(provider="gemini", base_url=llm.gemini_base_url, llm_retries=1))
    p.http._sleep = _no_sleep  # the delay itself is the engine's, tested there
    reply = await p.complete(HISTORY[:2], on_retry=lambda a, r, d: retries.append((a, r)))
    assert reply.text == "ok"
    assert retries == [(1, "HTTP 503: overloaded")]
    llm.script(
        Status(403, {"error": {"message": "API key not valid", "status": "PERMISSION_DENIED"}})
    )
    with pytest.raises(LLMError, match="set KOSMOS_API_KEY or GEMINI_API_KEY"):
        await p.complete(HISTORY[:2])
    await p.aclose()


async def _no_sleep(delay: float) -> None:
    return None


async def test_gemini_bad_key_400_names_the_key_fix(llm: ScriptedLLM) -> None:
    body = {
        "error": {
            "code": 400,
            "message": "API key not valid. Please pass a valid API key.",
            "status": "INVALID_ARGUMENT",
        }
    }
    llm.script(Status(400, body))
    p = provider(llm, "gemini")
    with pytest.raises(LLMError) as info:
        await p.complete(HISTORY[:2], tools=[TOOL])
    await p.aclose()
    assert not isinstance(info.value, CapabilityRejected)
    assert "no API key is set: set KOSMOS_API_KEY or GEMINI_API_KEY" in str(info.value)
