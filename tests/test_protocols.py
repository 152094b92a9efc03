"""The step protocols end to end: scripted LLM over real HTTP, commands in a real shell."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kosmos.engine.operator import Approval
from kosmos.engine.protocols import STEP_TOOLS
from kosmos.engine.protocols.json_steps import StepAction
from kosmos.engine.session import SessionOptions
from kosmos.events import (
    CapabilityFallback,
    CommandFinished,
    Directive,
    FormatError,
    RunStarted,
    StructuredExchange,
)
from kosmos.hosts.local import LocalRunner
from kosmos.prompts import Prompts
from kosmos.transcript import read_transcript
from tests.helpers import ScriptOperator, make_skill, run_session
from tests.llmserver import ScriptedLLM, call, calls

PROMPTS = Prompts.load()
TOOLS_BODY = [
    {
        "type": "function",
        "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
    }
    for t in STEP_TOOLS
]


def local(tmp_path: Path) -> LocalRunner:
    return LocalRunner(cwd=tmp_path, env={"HOME": str(tmp_path)})


async def test_tools_protocol_openai_end_to_end(llm: ScriptedLLM, tmp_path: Path) -> None:
    llm.script(
        calls(call("run_command", id="c1", command="printf '\\033[1mhi\\033[0m\\n\\n\\nhi\\n'")),
        calls(call("ask_user", id="c2", question="Which tag?", optional=True)),
        calls(call("show_message", id="c3", text="Tagging...")),
        calls(call("finish", id="c4", summary="Tagged.")),
    )
    run = await run_session(
        llm.base_url,
        options=SessionOptions(protocol="tools"),
        operator=ScriptOperator(answers=["v1"]),
        runner=local(tmp_path),
        transcript=tmp_path / "t.jsonl",
    )
    assert run.result.status == "done" and run.result.message == "Tagged."
    assert run.of(RunStarted)[0].protocol == "tools"
    first = llm.requests[0].body
    assert first["tools"] == TOOLS_BODY and first["tool_choice"] == "auto"
    assert first["messages"][0]["content"].startswith(PROMPTS["SKILL_SYSTEM_PROMPT_TOOLS"])
    assert first["messages"][1]["content"] == "Execute skill: probe\n\n[Step 1 of 100]"
    final = llm.requests[-1].body["messages"]
    assert [m["role"] for m in final] == ["system", "user"] + ["assistant", "tool"] * 3
    # The tool results carry the same cleaned output and step counter as the tags protocol.
    assert final[3] == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": "Command output:\nhi [repeated 2 times]\n\n[Step 2 of 100]",
    }
    assert final[4]["tool_calls"][0]["function"]["name"] == "ask_user"
    assert final[5] == {
        "role": "tool",
        "tool_call_id": "c2",
        "content": "User response: v1\n\n[Step 3 of 100]",
    }
    assert final[7]["content"] == "[Continue after informational message]\n\n[Step 4 of 100]"
    kinds = [(d.kind, d.text, d.required) for d in run.of(Directive)]
    assert kinds == [
        ("cmd", "printf '\\033[1mhi\\033[0m\\n\\n\\nhi\\n'", True),
        ("ask", "Which tag?", False),
        ("message", "Tagging...", True),
        ("done", "Tagged.", True),
    ]
    finished = run.of(CommandFinished)[0]
    assert finished.sent_to_llm == "hi [repeated 2 times]"
    # The transcript holds the tool calls.
    replies = [e for e in read_transcript(tmp_path / "t.jsonl") if e.type == "llm_reply"]
    assert replies[0].tool_calls[0].name == "run_command"


async def test_tools_protocol_gemini_function_response(llm: ScriptedLLM, tmp_path: Path) -> None:
    llm.script(
        calls(call("run_command", command="echo ok"), content="Let me look."),
        calls(call("finish", summary="All fine.")),
    )
    run = await run_session(
        llm.gemini_base_url,
        options=SessionOptions(protocol="tools"),
        runner=local(tmp_path),
        settings={"provider": "gemini", "model": "gemini-2.0-flash"},
    )
    assert run.result.status == "done"
    second = llm.requests[1]
    assert second.path == "/v1beta/models/gemini-2.0-flash:generateContent"
    assert second.body["tool_config"] == {"function_calling_config": {"mode": "AUTO"}}
    names = [d["name"] for d in second.body["tools"][0]["function_declarations"]]
    assert names == ["run_command", "ask_user", "show_message", "finish"]
    assert second.contents[1:] == [
        {
            "role": "model",
            "parts": [
                {"text": "Let me look."},
                {"functionCall": {"name": "run_command", "args": {"command": "echo ok"}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "name": "run_command",
                        "response": {"result": "Command output:\nok\n\n[Step 2 of 100]"},
                    }
                }
            ],
        },
    ]
    # The multi-part reply keeps its text beside the command.
    assert run.of(Directive)[0].said == "Let me look."


async def test_tools_edited_command_is_what_the_llm_sees(llm: ScriptedLLM, tmp_path: Path) -> None:
    llm.script(calls(call("run_command", id="c1", command="rm -rf /tmp/x")), calls(call("finish")))
    await run_session(
        llm.base_url,
        options=SessionOptions(protocol="tools"),
        operator=ScriptOperator(approvals=[Approval.edit("echo safer")]),
        runner=local(tmp_path),
    )
    messages = llm.requests[1].messages
    assert json.loads(messages[2]["tool_calls"][0]["function"]["arguments"]) == {
        "command": "echo safer"
    }
    assert messages[3]["content"] == "Command output:\nsafer\n\n[Step 2 of 100]"


async def test_tools_reply_without_a_call_gets_a_correction(
    llm: ScriptedLLM, tmp_path: Path
) -> None:
    llm.script("I think we should check the disk.", "[DONE] fine", calls(call("bogus", id="z")))
    run = await run_session(
        llm.base_url,
        options=SessionOptions(protocol="tools", non_interactive=True),
        runner=local(tmp_path),
    )
    # The text without a call was corrected; a real tag reply is taken as it is.
    assert run.result.status == "done" and run.result.message == "fine"
    assert len(run.of(FormatError)) == 1
    correction = llm.requests[1].messages[-1]
    assert correction == {
        "role": "user",
        "content": PROMPTS["SKILL_TOOLS_CORRECTION"].format(
            problem="no tool call", step=2, max_steps=100
        ),
    }


async def test_tools_unknown_tool_is_answered_on_its_call(llm: ScriptedLLM, tmp_path: Path) -> None:
    llm.script(calls(call("reboot", id="z9")), calls(call("finish", summary="ok")))
    run = await run_session(
        llm.base_url, options=SessionOptions(protocol="tools"), runner=local(tmp_path)
    )
    assert run.result.status == "done"
    last = llm.requests[1].messages[-1]
    assert last["role"] == "tool" and last["tool_call_id"] == "z9"
    assert "unknown tool 'reboot'" in last["content"]


async def test_json_protocol_end_to_end(llm: ScriptedLLM, tmp_path: Path) -> None:
    llm.script(
        '{"action": "cmd", "text": "echo json-step"}',
        '{"action": "ask_optional", "text": "Anything else?"}',
        '{"action": "done", "text": "Finished."}',
    )
    run = await run_session(
        llm.base_url,
        options=SessionOptions(protocol="json"),
        runner=local(tmp_path),
        transcript=tmp_path / "t.jsonl",
    )
    assert run.result.status == "done" and run.result.message == "Finished."
    first = llm.requests[0].body
    assert first["response_format"]["type"] == "json_schema"
    assert first["response_format"]["json_schema"]["strict"] is True
    assert first["messages"][0]["content"].startswith(PROMPTS["SKILL_SYSTEM_PROMPT_JSON"])
    final = llm.requests[-1].messages
    assert final[2] == {
        "role": "assistant",
        "content": '{"action": "cmd", "text": "echo json-step"}',
    }
    assert final[3] == {"role": "user", "content": "Command output:\njson-step\n\n[Step 2 of 100]"}
    assert final[5] == {"role": "user", "content": "User response: \n\n[Step 3 of 100]"}
    exchanges = [e for e in read_transcript(tmp_path / "t.jsonl") if e.type == "structured_request"]
    assert [e.step for e in exchanges] == [1, 2, 3]
    assert exchanges[0].solution == {"action": "cmd", "text": "echo json-step"}
    assert exchanges[0].strategy == "json_schema"


async def test_json_protocol_falls_back_and_notes_it(llm: ScriptedLLM, tmp_path: Path) -> None:
    llm.reject("json_schema")
    llm.script(
        calls(call("generate_response", action="cmd", text="echo a")),
        calls(call("generate_response", action="done", text="ok")),
    )
    run = await run_session(
        llm.base_url,
        options=SessionOptions(protocol="json"),
        runner=local(tmp_path),
        transcript=tmp_path / "t.jsonl",
    )
    assert run.result.status == "done"
    assert [sorted(r.capabilities_used()) for r in llm.requests] == [
        ["json_schema"],
        ["tools"],
        ["tools"],
    ]
    noted = [e for e in read_transcript(tmp_path / "t.jsonl") if e.type == "capability_fallback"]
    assert [(e.capability, e.next) for e in noted] == [("json_schema", "tool")]
    assert [e.strategy for e in run.of(StructuredExchange)] == ["tool", "tool"]


async def test_json_protocol_invalid_twice_is_a_format_error(
    llm: ScriptedLLM, tmp_path: Path
) -> None:
    llm.script("nope", '{"action": "reboot"}', '{"action": "done", "text": "ok"}')
    run = await run_session(
        llm.base_url, options=SessionOptions(protocol="json"), runner=local(tmp_path)
    )
    assert run.result.status == "done"
    [error] = run.of(FormatError)
    assert error.reply == '{"action": "reboot"}'
    correction = llm.requests[2].messages[-1]["content"]
    assert correction.startswith("Your reply was not a valid step (action: Input should be")


async def test_auto_uses_tools_when_the_provider_can(llm: ScriptedLLM, tmp_path: Path) -> None:
    llm.script(calls(call("finish", summary="ok")))
    run = await run_session(
        llm.base_url, options=SessionOptions(protocol="auto"), runner=local(tmp_path)
    )
    assert run.of(RunStarted)[0].protocol == "tools"
    assert "tools" in llm.requests[0].body


async def test_auto_falls_back_to_tags_on_a_400(llm: ScriptedLLM, tmp_path: Path) -> None:
    llm.reject("tools")
    llm.script("[CMD] echo tagged", "[DONE] ok")
    run = await run_session(
        llm.base_url,
        options=SessionOptions(protocol="auto"),
        runner=local(tmp_path),
        transcript=tmp_path / "t.jsonl",
    )
    assert run.result.status == "done"
    assert [sorted(r.capabilities_used()) for r in llm.requests] == [["tools"], [], []]
    # The resent request is seed 001's, with the tags system prompt.
    resent = llm.requests[1].body
    assert set(resent) == {"model", "messages", "temperature", "max_tokens"}
    assert resent["messages"][0]["content"].startswith(PROMPTS["SKILL_SYSTEM_PROMPT_WITH_ASK"])
    events = read_transcript(tmp_path / "t.jsonl")
    [fallback] = [e for e in events if isinstance(e, CapabilityFallback)]
    assert (fallback.capability, fallback.next) == ("tools", "tags")


async def test_auto_without_tool_capability_is_tags(llm: ScriptedLLM, tmp_path: Path) -> None:
    llm.script("[DONE] ok")
    run = await run_session(
        llm.base_url,
        options=SessionOptions(protocol="auto"),
        runner=local(tmp_path),
        settings={"providers": {"openai": {"capabilities": {"tools": False}}}},
    )
    assert run.of(RunStarted)[0].protocol == "tags"
    assert "tools" not in llm.requests[0].body


async def test_explicit_tools_on_a_server_without_them_says_what_to_do(
    llm: ScriptedLLM, tmp_path: Path
) -> None:
    llm.reject("tools")
    run = await run_session(
        llm.base_url, options=SessionOptions(protocol="tools"), runner=local(tmp_path)
    )
    assert run.result.exit_code == 5
    assert "does not take tool calls" in run.result.message
    assert "--protocol auto, tags or json" in run.result.message


async def test_system_only_history_keeps_the_call_with_its_result(
    llm: ScriptedLLM, tmp_path: Path
) -> None:
    llm.script(calls(call("run_command", id="c1", command="echo x")), calls(call("finish")))
    await run_session(
        llm.base_url,
        make_skill(history_mode="system_only"),
        options=SessionOptions(protocol="tools", history_mode="system_only"),
        runner=local(tmp_path),
    )
    assert [m["role"] for m in llm.requests[1].messages] == ["system", "assistant", "tool"]


async def test_gemini_tags_protocol_end_to_end(llm: ScriptedLLM, tmp_path: Path) -> None:
    llm.script("[CMD] echo gem", "[DONE] fine")
    run = await run_session(
        llm.gemini_base_url,
        runner=local(tmp_path),
        settings={"provider": "gemini", "model": "gemini-2.0-flash", "api_key": "AIza-x"},
    )
    assert run.result.status == "done" and run.result.message == "fine"
    body = llm.requests[1].body
    assert set(body) == {"systemInstruction", "contents", "generationConfig"}
    assert body["systemInstruction"]["parts"][0]["text"].startswith(
        PROMPTS["SKILL_SYSTEM_PROMPT_WITH_ASK"]
    )
    assert body["contents"] == [
        {"role": "user", "parts": [{"text": "Execute skill: probe\n\n[Step 1 of 100]"}]},
        {"role": "model", "parts": [{"text": "[CMD] echo gem"}]},
        {"role": "user", "parts": [{"text": "Command output:\ngem\n\n[Step 2 of 100]"}]},
    ]
    assert body["generationConfig"] == {"temperature": 0.3, "maxOutputTokens": 512}
    assert llm.requests[1].headers["x-goog-api-key"] == "AIza-x"


async def test_gemini_json_protocol_uses_its_response_schema(
    llm: ScriptedLLM, tmp_path: Path
) -> None:
    llm.script('{"action": "done", "text": "ok"}')
    run = await run_session(
        llm.gemini_base_url,
        options=SessionOptions(protocol="json"),
        runner=local(tmp_path),
        settings={"provider": "gemini", "model": "gemini-2.0-flash"},
    )
    assert run.result.message == "ok"
    config = llm.requests[0].body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseJsonSchema"]["properties"]["action"]["enum"] == [
        "cmd",
        "ask",
        "ask_optional",
        "message",
        "done",
    ]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"action": "CMD", "text": "ls"}, ("cmd", "ls")),
        ({"action": "[ASK:optional]", "text": "Tag?"}, ("ask_optional", "Tag?")),
        ({"action": "cmd", "command": "df -h"}, ("cmd", "df -h")),
        ({"action": "done", "summary": "ok"}, ("done", "ok")),
    ],
)
def test_step_actions_tolerate_what_small_models_write(raw: dict, expected: tuple) -> None:
    value = StepAction.model_validate(raw)
    assert (value.action, value.text) == expected


async def test_json_protocol_with_memory_offers_and_carries_out_the_new_actions(
    llm: ScriptedLLM, tmp_path: Path
) -> None:
    (tmp_path / "app.conf").write_text("port = 80\n")
    llm.script(
        '{"action": "get_file", "text": "app.conf", "content": ""}',
        '{"action": "store", "text": "MEMORY_app.md", "content": "app on port 80"}',
        '{"action": "list_memory", "text": "", "content": ""}',
        '{"action": "retrieve", "name": "MEMORY_app.md"}',
        '{"action": "done", "text": "noted", "content": ""}',
    )
    run = await run_session(
        llm.base_url,
        options=SessionOptions(
            protocol="json", policy="auto", memory=True, memory_dir=tmp_path / "memory"
        ),
        runner=local(tmp_path),
    )
    assert run.result.status == "done" and run.result.message == "noted"
    first = llm.requests[0].body
    schema = first["response_format"]["json_schema"]
    assert schema["strict"] is True
    assert "store" in schema["schema"]["properties"]["action"]["enum"]
    assert "--- Target OS: Linux ---" in first["messages"][0]["content"]
    assert PROMPTS["SKILL_SYSTEM_PROMPT_JSON_MEMORY"] in first["messages"][0]["content"]
    users = [r.last_user_text for r in llm.requests[1:]]
    assert users == [
        "File content:\nport = 80\n\n[Step 2 of 100]",
        "Memory stored: MEMORY_app.md\n\n[Step 3 of 100]",
        "Memory index:\nMEMORY_app.md\napp on port 80\n\n[Step 4 of 100]",
        "Memory content:\napp on port 80\n\n[Step 5 of 100]",
    ]
    assert llm.requests[-1].messages[4] == {
        "role": "assistant",
        "content": '{"action": "store", "text": "MEMORY_app.md", "content": "app on port 80"}',
    }


def _call(tool: str, id: str, **args: str) -> dict:
    """`call` for tools with a `name` argument (call's own first parameter is `name`)."""
    return {"id": id, "type": "function", "function": {"name": tool, "arguments": json.dumps(args)}}


async def test_tools_protocol_with_memory_offers_the_memory_tools(
    llm: ScriptedLLM, tmp_path: Path
) -> None:
    (tmp_path / "app.conf").write_text("port = 80\n")
    llm.script(
        calls(call("get_file", id="c1", path="app.conf")),
        calls(_call("append_memory", "c2", name="MEMORY_app.md", content="saw port 80")),
        calls(_call("store_memory", "c3", name="MEMORY_App.md", content="x")),
        calls(call("list_memory", id="c4")),
        calls(call("finish", id="c5", summary="noted")),
    )
    run = await run_session(
        llm.base_url,
        options=SessionOptions(
            protocol="tools", policy="auto", memory=True, memory_dir=tmp_path / "memory"
        ),
        runner=local(tmp_path),
    )
    assert run.result.status == "done"
    names = [t["function"]["name"] for t in llm.requests[0].body["tools"]]
    assert names == [
        "run_command",
        "ask_user",
        "show_message",
        "finish",
        "get_file",
        "store_memory",
        "append_memory",
        "retrieve_memory",
        "list_memory",
        "delete_memory",
    ]
    tool_results = [m for m in llm.requests[-1].messages if m["role"] == "tool"]
    assert [m["content"].split("\n\n[Step")[0] for m in tool_results] == [
        "File content:\nport = 80",
        "Memory stored: MEMORY_app.md",
        "Memory error:\n'MEMORY_App.md' is not a memory name: a name is MEMORY_ then lower-case "
        "letters, digits and single underscores, then .md (like MEMORY_nginx_setup.md); "
        "nothing was changed",
        "Memory index:\nMEMORY_app.md\nsaw port 80",
    ]
    # Without --memory the tools stay seed 003's four.
    llm.script(calls(call("finish", summary="ok")))
    await run_session(
        llm.base_url, options=SessionOptions(protocol="tools"), runner=local(tmp_path)
    )
    assert llm.requests[-1].body["tools"] == TOOLS_BODY
