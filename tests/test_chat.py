"""`kosmos chat` (seed 002) in-process: the scripted LLM, the example services, a real log file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kosmos.chat.catalog import TEXTS
from kosmos.config import Settings
from tests.chatkit import (
    closed_port,
    converse,
    example_chat,
    load_services_module,
    relevant,
    select,
    settings_for,
)
from tests.llmserver import ScriptedLLM

SERVICES = load_services_module()


def ru(key: str, **values: Any) -> str:
    return TEXTS[key][1].format(**values)


def en(key: str, **values: Any) -> str:
    return TEXTS[key][0].format(**values)


def cfg(llm: ScriptedLLM, services: Any, **chat: Any) -> Settings:
    return settings_for(llm.base_url, example_chat(services.base_url, skills=False, **chat))


# -- [main] ----------------------------------------------------------------------------------


async def test_greeting_help_and_exit(llm: ScriptedLLM, services: Any, log_path: Path) -> None:
    chat = await converse(cfg(llm, services), ["?", "  /HELP ", "/exit", "never read"], log_path)
    said = chat.out.text
    assert chat.exit_code == 0
    assert said.count(en("greeting")) == 1
    assert said.count(en("help_tools")) == 3
    assert "rag_search: Answer a question about kosmos" in said
    assert chat.out.said[-1] == ("result", "Goodbye!")
    assert llm.requests == []
    assert chat.logged("DEBUG", "main", "AgentStart")
    assert sum(" AgentHelp" in line for line in chat.log_lines) == 2
    assert chat.logged("DEBUG", "main", "AgentEnd")


@pytest.mark.parametrize("word", ["/exit", "/quit", "/q", "exit", "quit", "q"])
async def test_every_exit_command_says_goodbye(
    llm: ScriptedLLM, services: Any, log_path: Path, word: str
) -> None:
    chat = await converse(cfg(llm, services), [word], log_path, lang="ru")
    assert chat.out.said[-1][1] == "До свидания!"
    assert chat.exit_code == 0


async def test_end_of_input_ends_like_exit(llm: ScriptedLLM, services: Any, log_path: Path) -> None:
    chat = await converse(cfg(llm, services), ["", "   "], log_path)
    assert chat.out.said[-1][1] == "Goodbye!"
    assert llm.requests == []


async def test_exit_and_help_commands_come_from_config(
    llm: ScriptedLLM, services: Any, log_path: Path
) -> None:
    settings = cfg(llm, services, exit_commands=["bye"], help_commands=["помощь"])
    chat = await converse(settings, ["помощь", "bye"], log_path)
    assert "Help: помощь. Exit: bye." in chat.out.text
    assert chat.logged("DEBUG", "main", "AgentHelp")
    assert chat.out.said[-1][1] == "Goodbye!"


# -- [cls] -----------------------------------------------------------------------------------


async def test_irrelevant_request(llm: ScriptedLLM, services: Any, log_path: Path) -> None:
    llm.script(relevant(False))
    chat = await converse(cfg(llm, services), ["какая погода?", "q"], log_path, lang="ru")
    said = [t for _, t in chat.out.said]
    i = said.index(ru("irrelevant"))
    assert said[i - 1] == ru("classifying")
    assert said[i + 1].startswith(ru("help_tools"))
    assert chat.logged("DEBUG", "cls", "AgentClassify")
    assert chat.logged("WARNING", "cls", "classify_intent // Irrelevant query")
    assert chat.logged("DEBUG", "main", "AgentRestart")
    assert [m.content for m in chat.agent.history] == ["какая погода?", ru("irrelevant")]
    # Classification saw the request, and the tools it may serve.
    request = llm.requests[0]
    assert request.messages[-1] == {"role": "user", "content": "какая погода?"}
    assert "rag_search" in request.system and "generate_haiku" in request.system


async def test_classification_goes_through_the_structured_layer(
    llm: ScriptedLLM, services: Any, log_path: Path
) -> None:
    llm.script(relevant(False))
    await converse(cfg(llm, services), ["hi"], log_path)
    fmt = llm.requests[0].body["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["name"] == "Classification"
    assert "relevant" in fmt["json_schema"]["schema"]["properties"]


# -- [select] --------------------------------------------------------------------------------


async def test_selection_failure(llm: ScriptedLLM, services: Any, log_path: Path) -> None:
    llm.script(relevant(), select(None))
    chat = await converse(cfg(llm, services), ["сделай что-нибудь"], log_path, lang="ru")
    said = chat.out.text
    assert ru("relevant") in said
    assert ru("selecting") in said
    assert ru("selection_fail") in said
    assert chat.logged("DEBUG", "cls", "classify_intent // Relevant query")
    assert chat.logged("DEBUG", "select", "AgentSelect")
    assert chat.logged("WARNING", "select", "select_tool_call // Selection Fail")
    assert services.requests == []
    assert llm.requests[1].body["response_format"]["json_schema"]["name"] == "Selection"
    history = [m.content for m in chat.agent.history]
    assert history == ["сделай что-нибудь", ru("relevant"), ru("selection_fail")]


# -- [valid] ---------------------------------------------------------------------------------

VALIDATION = [
    ("rag_search", {}, "unclear", "Missing Param: rag_search::question"),
    ("rag_search", {"question": None}, "unclear", "Missing Param: rag_search::question"),
    ("rag_search", {"question": "  "}, "unclear", "Empty Param: rag_search::question"),
    (
        "rag_search",
        {"question": "x" * 201},
        "too_long_question",
        "Too Long Param: rag_search::question",
    ),
    ("generate_haiku", {}, "unclear", "Missing Param: generate_haiku::theme"),
    ("generate_haiku", {"theme": ""}, "unclear", "Empty Param: generate_haiku::theme"),
    (
        "generate_haiku",
        {"theme": "y" * 21},
        "too_long_theme",
        "Too Long Param: generate_haiku::theme",
    ),
    ("weather", {"city": "Oslo"}, "unknown_tool", "Unknown tool: weather"),
]


@pytest.mark.parametrize(("tool", "params", "key", "log"), VALIDATION)
async def test_validation_branches(
    llm: ScriptedLLM,
    services: Any,
    log_path: Path,
    tool: str,
    params: dict[str, Any],
    key: str,
    log: str,
) -> None:
    llm.script(relevant(), select(tool, **params))
    chat = await converse(cfg(llm, services), ["please"], log_path, lang="ru")
    said = [t for _, t in chat.out.said]
    assert said[said.index(ru("validating")) + 1] == ru(key)
    assert chat.logged("DEBUG", "valid", "AgentValidate")
    assert chat.logged("WARNING", "valid", f"validate_tool_call // {log}")
    assert chat.agent.history[-1].content == ru(key)
    assert ru("executing") not in said
    assert services.requests == []


@pytest.mark.parametrize(
    ("tool", "params", "ready"),
    [
        (
            "rag_search",
            {"question": "q" * 30},
            "Инструмент rag_search проверен и готов к вызову. Запрос: " + "q" * 30,
        ),
        (
            "generate_haiku",
            {"theme": "t" * 20},
            "Инструмент generate_haiku проверен и готов к вызову. Тема: " + "t" * 20,
        ),
    ],
)
async def test_values_at_the_limit_pass(
    llm: ScriptedLLM, services: Any, log_path: Path, tool: str, params: dict, ready: str
) -> None:
    llm.script(relevant(), select(tool, **params))
    chat = await converse(cfg(llm, services), ["go"], log_path, lang="ru")
    assert ready in chat.out.text
    assert chat.logged("DEBUG", "valid", "validate_tool_call // Validation OK")
    assert chat.logged("DEBUG", "exec", "AgentExecute")
    assert ready in [m.content for m in chat.agent.history]


async def test_max_lengths_come_from_config(
    llm: ScriptedLLM, services: Any, log_path: Path
) -> None:
    chat_cfg = example_chat(services.base_url, skills=False)
    chat_cfg["tools"][0]["params"][0]["max_length"] = 5
    llm.script(relevant(), select("rag_search", question="skills"))
    chat = await converse(settings_for(llm.base_url, chat_cfg), ["go"], log_path)
    # The example's own message, then the limit it does not say itself.
    assert f"{en('too_long_question')}\nAt most 5 characters; this is 6." in chat.out.text
    assert "At most" not in "".join(m.content for m in chat.agent.history)


# -- [exec] ----------------------------------------------------------------------------------


async def test_rag_search_success(llm: ScriptedLLM, services: Any, log_path: Path) -> None:
    llm.script(relevant(), select("rag_search", question="What is kosmos?"))
    chat = await converse(cfg(llm, services), ["What is kosmos?"], log_path, lang="ru")
    said = [t for _, t in chat.out.said]
    assert 'Выбран инструмент rag_search с параметрами question="What is kosmos?"' in said
    assert "Ответ RAG: kosmos runs AI skills against servers." in said
    assert "Заголовки топ-2 документов: What kosmos is, Skills" in said
    assert services.requests == [("rag/search", {"question": "What is kosmos?", "top_k": 2})]
    # The answer goes to the history, the titles only to stdout; chunk texts only to the log.
    history = [m.content for m in chat.agent.history]
    assert history[-1] == "Ответ RAG: kosmos runs AI skills against servers."
    assert not any("Заголовки" in h for h in history)
    assert chat.logged("DEBUG", "exec", "rag_chunks_message:")
    assert any("[exec]   [1] What kosmos is" in line for line in chat.log_lines)
    assert "works through a SKILL.md step by step" in chat.log
    assert "works through" not in chat.out.text


async def test_haiku_success_prints_each_figure_under_its_label(
    llm: ScriptedLLM, services: Any, log_path: Path
) -> None:
    llm.script(relevant(), select("generate_haiku", theme="осень"))
    chat = await converse(cfg(llm, services), ["хайку про осень"], log_path, lang="ru")
    said = [t for _, t in chat.out.said]
    assert "Хайку: осень на заре | тихий ветер над рекой | снова осень спит" in said
    assert "#слогов построчно: 5-7-5" in said
    assert "#слов итого: 10" in said
    assert chat.agent.history[-1].content.startswith("Хайку: ")


async def test_haiku_in_english(llm: ScriptedLLM, services: Any, log_path: Path) -> None:
    llm.script(relevant(), select("generate_haiku", theme="autumn"))
    chat = await converse(cfg(llm, services), ["a haiku about autumn"], log_path)
    expected = SERVICES.haiku("autumn")
    said = chat.out.text
    assert "Haiku: " + expected["haiku_text"].replace("\n", " | ") in said
    syllables = "-".join(map(str, expected["syllables_per_line"]))
    assert f"#syllables per line: {syllables}" in said
    assert f"#words in total: {expected['total_words']}" in said
    assert "Checking whether I can help with that.." in said


EXEC_ERRORS = [
    # (tool, how to break it, log lines in order, what the operator is told after the apology)
    (
        "rag_search",
        "down",
        ["check_health // Unexpected error: ", "answer_question // Health check failed"],
        "rag_search: health check GET {url}/health failed: ConnectError: ",
    ),
    (
        "rag_search",
        "unhealthy",
        ["answer_question // Health check failed"],
        "rag_search: health check GET {url}/health answered status 'degraded', not 'ok'",
    ),
    (
        "rag_search",
        "broken",
        ["answer_question // Unexpected error: "],
        "rag_search: POST {url}/search failed: the answer is not JSON",
    ),
    (
        "rag_search",
        "error",
        ["answer_question // Search error: index offline"],
        "rag_search: POST {url}/search answered an error: index offline",
    ),
    (
        "generate_haiku",
        "down",
        ["check_health // Unexpected error: ", "generate_haiku // Health check failed"],
        "generate_haiku: health check GET {url}/health failed: ConnectError: ",
    ),
    (
        "generate_haiku",
        "unhealthy",
        ["generate_haiku // Health check failed"],
        "generate_haiku: health check GET {url}/health answered status 'degraded', not 'ok'",
    ),
    (
        "generate_haiku",
        "broken",
        ["generate_haiku // Unexpected error: "],
        "generate_haiku: POST {url}/generate_haiku failed: the answer is not JSON",
    ),
    (
        "generate_haiku",
        "error",
        ["generate_haiku // Generation error: index offline"],
        "generate_haiku: POST {url}/generate_haiku answered an error: index offline",
    ),
]


@pytest.mark.parametrize(("tool", "fault", "logs", "reason"), EXEC_ERRORS)
async def test_exec_error_branches(
    llm: ScriptedLLM,
    services: Any,
    log_path: Path,
    tool: str,
    fault: str,
    logs: list[str],
    reason: str,
) -> None:
    service = "rag" if tool == "rag_search" else "haiku"
    endpoint = "search" if service == "rag" else "generate_haiku"
    chat_cfg = example_chat(services.base_url, skills=False)
    if fault == "down":
        for t in chat_cfg["tools"]:
            t["base_url"] = f"http://127.0.0.1:{closed_port()}/{service}"
    elif fault == "unhealthy":
        services.health[service] = "degraded"
    elif fault == "broken":
        services.broken.add(f"{service}/{endpoint}")
    else:
        services.errors[service] = "index offline"
    param = {"question": "What is kosmos?"} if service == "rag" else {"theme": "sea"}
    llm.script(relevant(), select(tool, **param))
    chat = await converse(settings_for(llm.base_url, chat_cfg), ["go"], log_path, lang="ru")
    failed = ru("rag_failed" if service == "rag" else "haiku_failed")
    assert chat.out.said[-3] == ("error", failed)  # the seed's text, then why, then the goodbye
    kind, said = chat.out.said[-2]
    url = next(t["base_url"] for t in chat_cfg["tools"] if t["name"] == tool).rstrip("/")
    assert kind == "reason" and said.startswith(reason.format(url=url)), said
    assert chat.agent.history[-1].content == failed
    errors = [line for line in chat.log_lines if " ERROR " in line]
    assert len(errors) == len(logs)
    for line, start in zip(errors, logs, strict=True):
        assert "[exec] " + start in line
    assert chat.exit_code == 0  # back to input, then end of input


async def test_chat_goes_on_after_a_tool_error(
    llm: ScriptedLLM, services: Any, log_path: Path
) -> None:
    services.errors["rag"] = "index offline"
    llm.script(relevant(), select("rag_search", question="skills?"))
    llm.script(relevant(), select("generate_haiku", theme="sea"))
    chat = await converse(cfg(llm, services), ["skills?", "a haiku about the sea"], log_path)
    assert en("rag_failed") in chat.out.text
    assert "Haiku: sea in the first light" in chat.out.text
