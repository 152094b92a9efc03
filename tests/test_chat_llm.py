"""`kosmos chat` and its LLM: errors and parse errors, the history limit, the log, verbose
payloads with secrets masked, post_chat_completions / post_embeddings, pre-ranking."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from msgspec.structs import replace

from kosmos.chat.api import LLMApi
from kosmos.chat.catalog import TEXTS, Catalog, pick_lang
from kosmos.chat.log import ChatLog
from kosmos.config import Settings
from kosmos.llm.http import LLMHttp
from tests.chatkit import (
    LOG_LINE,
    converse,
    example_chat,
    load_services_module,
    relevant,
    select,
    settings_for,
)
from tests.helpers import make_skill
from tests.llmserver import Raw, ScriptedLLM, Status

SERVICES = load_services_module()


def cfg(llm: ScriptedLLM, services: Any, **chat: Any) -> Settings:
    return settings_for(llm.base_url, example_chat(services.base_url, skills=False, **chat))


# -- LLM errors and parse errors end the chat --------------------------------------------


@pytest.mark.parametrize(("lang", "index"), [("en", 0), ("ru", 1)])
async def test_llm_error_in_classification_ends_the_chat(
    llm: ScriptedLLM, services: Any, log_path: Path, lang: str, index: int
) -> None:
    llm.script(Status(500, {"error": {"message": "model crashed"}}))
    chat = await converse(cfg(llm, services), ["what is kosmos", "never read"], log_path, lang=lang)
    assert chat.exit_code == 5
    assert chat.out.said[-2] == ("error", TEXTS["llm_error"][index])
    # Then the reason, for stderr: what failed.
    assert chat.out.said[-1][0] == "reason" and "model crashed" in chat.out.said[-1][1]
    assert not any("Goodbye" in t or "До свидания" in t for _, t in chat.out.said)
    assert any(
        "CRITICAL [cls] classify_intent // LLM Error: " in line and "model crashed" in line
        for line in chat.log_lines
    )
    # post_chat_completions logged the stack trace at critical level, every line prefixed.
    assert any("CRITICAL [cls] Traceback (most recent call last):" in x for x in chat.log_lines)
    assert len(llm.requests) == 1


async def test_llm_error_in_selection_ends_the_chat(
    llm: ScriptedLLM, services: Any, log_path: Path
) -> None:
    llm.script(relevant(), Status(401, {"error": {"message": "bad key"}}))
    chat = await converse(cfg(llm, services), ["what is kosmos"], log_path, lang="ru")
    assert chat.exit_code == 5
    assert chat.out.said[-2][1] == "Ошибка при запросе LLM, завершаюсь.."
    assert chat.out.said[-1][0] == "reason" and "API key" in chat.out.said[-1][1]
    assert any(
        re.search(r"CRITICAL \[select\] select_tool_call // LLM Error: .*bad key", line)
        for line in chat.log_lines
    )


async def test_parse_error_in_classification_ends_the_chat(
    llm: ScriptedLLM, services: Any, log_path: Path
) -> None:
    # The structured layer asks once more with the problem; a second bad answer is the error.
    llm.script("I think so!", '{"relevant": "maybe"}')
    chat = await converse(cfg(llm, services), ["what is kosmos"], log_path, lang="ru")
    assert chat.exit_code == 1
    assert chat.out.said[-1] == ("error", "Ошибка при разборе ответа LLM, завершаюсь..")
    assert any(
        "CRITICAL [cls] classify_intent // LLM Response Parse Error: relevant:" in line
        for line in chat.log_lines
    )
    assert len(llm.requests) == 2


async def test_parse_error_in_selection_ends_the_chat(
    llm: ScriptedLLM, services: Any, log_path: Path
) -> None:
    llm.script(relevant(), Raw(b'{"choices": []}'), "garbage")
    chat = await converse(cfg(llm, services), ["what is kosmos"], log_path)
    # An answer that is not a completion is an LLM error, not a parse error.
    assert chat.exit_code == 5
    llm.script(relevant(), "not json", "still not json")
    chat = await converse(cfg(llm, services), ["what is kosmos"], log_path)
    assert chat.exit_code == 1
    assert chat.out.said[-1][1] == "Could not parse the LLM's answer, exiting.."
    assert any(
        "CRITICAL [select] select_tool_call // LLM Response Parse Error: the answer was not JSON"
        in line
        for line in chat.log_lines
    )


async def test_a_repaired_answer_goes_on(llm: ScriptedLLM, services: Any, log_path: Path) -> None:
    llm.script("yes", relevant(False))
    chat = await converse(cfg(llm, services), ["hi"], log_path)
    assert chat.exit_code == 0
    assert "That request is outside what this agent does." in chat.out.text


# -- history ---------------------------------------------------------------------------------


async def test_at_most_context_hist_limit_messages_go_to_the_llm(
    llm: ScriptedLLM, services: Any, log_path: Path
) -> None:
    llm.default = relevant(False)
    turns = [f"request {i}" for i in range(7)]
    chat = await converse(cfg(llm, services), turns, log_path)
    assert len(chat.agent.history) == 14
    counts = [len(r.messages) for r in llm.requests]
    # system prompt + the history so far, capped at 10 messages.
    assert counts == [2, 4, 6, 8, 10, 11, 11]
    last = llm.requests[-1].messages
    assert last[0]["role"] == "system"
    assert last[-1] == {"role": "user", "content": "request 6"}
    assert last[1]["role"] == "assistant"
    assert last[2] == {"role": "user", "content": "request 2"}
    assert "request 1" not in str(last)


async def test_limit_comes_from_config(llm: ScriptedLLM, services: Any, log_path: Path) -> None:
    llm.default = relevant(False)
    await converse(cfg(llm, services, context_hist_limit=3), ["a", "b", "c"], log_path)
    assert [len(r.messages) for r in llm.requests] == [2, 4, 4]


async def test_selection_sees_the_conversation(
    llm: ScriptedLLM, services: Any, log_path: Path
) -> None:
    llm.script(relevant(), select("rag_search", question="What are skills?"))
    await converse(cfg(llm, services), ["What are skills?"], log_path)
    sent = llm.requests[1].messages
    assert sent[1:] == [
        {"role": "user", "content": "What are skills?"},
        {"role": "assistant", "content": "The request is relevant, thinking.."},
    ]


# -- the log ---------------------------------------------------------------------------------


async def test_every_log_line_has_a_level_and_a_step_prefix(
    llm: ScriptedLLM, services: Any, log_path: Path
) -> None:
    services.errors["rag"] = "offline"
    llm.script(relevant(), select("rag_search", question="skills"))
    llm.script(relevant(), select("generate_haiku", theme="sea"))
    llm.script(relevant(), select("rag_search", question="x" * 40))
    llm.script(Status(500))
    lines = ["skills", "haiku", "long", "boom"]
    chat = await converse(cfg(llm, services), lines, log_path, verbose=True)
    assert chat.exit_code == 5
    assert chat.log_lines
    bad = [line for line in chat.log_lines if not LOG_LINE.match(line)]
    assert bad == []
    steps = {LOG_LINE.match(line).group(2) for line in chat.log_lines}  # type: ignore[union-attr]
    assert steps == {"main", "cls", "select", "valid", "exec"}
    statuses = [
        "AgentStart",
        "AgentClassify",
        "AgentSelect",
        "AgentValidate",
        "AgentExecute",
        "AgentRestart",
    ]
    for status in statuses:
        assert any(line.endswith("] " + status) for line in chat.log_lines), status


async def test_verbose_logs_payloads_with_secrets_masked(
    llm: ScriptedLLM, services: Any, log_path: Path
) -> None:
    key = "sk-live-abcdefghijklmnop1234"
    settings = settings_for(
        llm.base_url, example_chat(services.base_url, skills=False), api_key=key
    )
    llm.script(relevant(), select("rag_search", question="skills"))
    chat = await converse(
        settings, ["skills, my password=hunter2222"], log_path, verbose=True, env={}
    )
    assert llm.requests[0].headers["authorization"] == f"Bearer {key}"
    assert key not in chat.log
    assert "hunter2222" not in chat.log
    assert "password=[REDACTED]" in chat.log
    assert any("DEBUG    [cls] chat // payload: {" in line for line in chat.log_lines)
    assert any("DEBUG    [cls] chat // response: {" in line for line in chat.log_lines)
    assert any("[exec] answer_question // payload: {" in line for line in chat.log_lines)
    assert any("[exec] answer_question // response: {" in line for line in chat.log_lines)


async def test_without_verbose_no_payloads(llm: ScriptedLLM, services: Any, log_path: Path) -> None:
    llm.script(relevant(False))
    chat = await converse(cfg(llm, services), ["hi"], log_path)
    assert "payload" not in chat.log and "response:" not in chat.log
    assert chat.logged("WARNING", "cls", "classify_intent // Irrelevant query")


# -- post_chat_completions and post_embeddings -----------------------------------------------


def api_for(llm: ScriptedLLM, log: ChatLog, *, embeddings: bool = True) -> LLMApi:
    def http() -> LLMHttp:
        return LLMHttp(base_url=llm.base_url, timeout=5, retries=0, key_hint="set a key")

    return LLMApi(
        log,
        chat_http=http(),
        default_model="GigaChat-2-Max",
        default_embedding_model="Embeddings",
        embeddings_http=http() if embeddings else None,
    )


async def test_post_chat_completions(llm: ScriptedLLM, log_path: Path) -> None:
    log = ChatLog(log_path, verbose=True)
    api = api_for(llm, log)
    llm.script("hello", "again", Status(503, {"error": {"message": "overloaded"}}))
    first = await api.post_chat_completions({"messages": [{"role": "user", "content": "hi"}]})
    assert first["choices"][0]["message"]["content"] == "hello"
    assert llm.requests[0].body["model"] == "GigaChat-2-Max"
    await api.post_chat_completions(
        {"messages": [], "model": "Other", "temperature": 0}, verbose=True
    )
    assert llm.requests[1].body == {"messages": [], "model": "Other", "temperature": 0}
    failed = await api.post_chat_completions({"messages": []})
    assert set(failed) == {"error"} and "overloaded" in failed["error"]
    await api.aclose()
    log.close()
    text = log_path.read_text()
    assert text.count("chat // payload:") == 1  # only the verbose call
    assert "CRITICAL [main] chat // LLMError: " in text
    assert "CRITICAL [main] Traceback (most recent call last):" in text


async def test_post_embeddings(llm: ScriptedLLM, log_path: Path) -> None:
    llm.embedder = lambda text: [float(len(text)), 1.0]
    log = ChatLog(log_path)
    api = api_for(llm, log)
    answer = await api.post_embeddings({"input": ["ab", "abcd"]})
    assert [d["embedding"] for d in answer["data"]] == [[2.0, 1.0], [4.0, 1.0]]
    assert llm.embedding_requests[0].body == {"model": "Embeddings", "input": ["ab", "abcd"]}
    none = api_for(llm, log, embeddings=False)
    assert "error" in await none.post_embeddings({"input": "x"})
    await api.aclose()
    await none.aclose()
    log.close()


# -- pre-ranking -----------------------------------------------------------------------------


def topic_vector(text: str) -> list[float]:
    lower = text.lower()
    return [
        float("haiku" in lower or "poem" in lower),
        float("kosmos" in lower or "question" in lower),
        float("disk" in lower),
    ]


async def test_embeddings_pre_rank_the_tools(
    llm: ScriptedLLM, services: Any, log_path: Path
) -> None:
    llm.embedder = topic_vector
    skills = [make_skill(name="disk-usage"), make_skill(name="probe")]
    settings = settings_for(
        llm.base_url,
        example_chat(services.base_url, embeddings_base_url=llm.base_url, rank_top_k=1),
    )
    llm.script(relevant(), select(None), relevant(), select(None))
    await converse(settings, ["write a poem", "a haiku again"], log_path, skills=skills)
    classify, selection = llm.requests[0].system, llm.requests[1].system
    assert "- probe:" in classify and "- rag_search:" in classify
    assert "- generate_haiku:" in selection
    assert "- rag_search:" not in selection and "- probe:" not in selection
    # Tool descriptions are embedded once per chat; each request once.
    inputs = [r.body["input"] for r in llm.embedding_requests]
    assert len(inputs) == 3 and len(inputs[0]) == 4
    assert inputs[1:] == [["write a poem"], ["a haiku again"]]


async def test_without_embeddings_every_tool_is_offered(
    llm: ScriptedLLM, services: Any, log_path: Path
) -> None:
    skills = [make_skill(name="probe")]
    settings = settings_for(llm.base_url, example_chat(services.base_url))
    llm.script(relevant(), select(None))
    await converse(settings, ["write a poem"], log_path, skills=skills)
    selection = llm.requests[1].system
    assert all(f"- {n}:" in selection for n in ("rag_search", "generate_haiku", "probe"))
    assert llm.embedding_requests == []


# -- the catalog -----------------------------------------------------------------------------


def test_every_text_exists_in_both_languages() -> None:
    for key, (english, russian) in TEXTS.items():
        assert english and russian, key
        fields = re.findall(r"{(\w+)}", english)
        assert sorted(fields) == sorted(re.findall(r"{(\w+)}", russian)), key


def test_language_from_flag_then_locale() -> None:
    assert pick_lang("ru", {"LANG": "en_US.UTF-8"}) == "ru"
    assert pick_lang(None, {"LANG": "ru_RU.UTF-8"}) == "ru"
    assert pick_lang(None, {"LC_ALL": "C.UTF-8", "LANG": "ru_RU.UTF-8"}) == "en"
    assert pick_lang(None, {}) == "en"


def test_config_messages_add_and_replace_texts() -> None:
    from kosmos.config_chat import CatalogEntry

    catalog = Catalog(
        "ru", {"goodbye": CatalogEntry(en="Bye", ru="Пока"), "x": CatalogEntry(en="X")}
    )
    assert catalog("goodbye") == "Пока"
    assert catalog("x") == "X"


# -- structured strategies, lenient params, the line-by-line API -----------------------------


async def test_a_server_without_json_schema_gets_json_mode(
    llm: ScriptedLLM, services: Any, log_path: Path
) -> None:
    llm.reject("json_schema", "tools")
    llm.script(relevant(), select("rag_search", question="skills"))
    chat = await converse(cfg(llm, services), ["skills"], log_path)
    assert "RAG answer: " in chat.out.text
    used = [r.capabilities_used() for r in llm.requests]
    assert used == [{"json_schema"}, {"tools"}, {"json_mode"}, {"json_mode"}]
    assert '"relevant"' in llm.requests[2].system  # the schema went into the prompt


async def test_numbers_in_params_are_text(llm: ScriptedLLM, services: Any, log_path: Path) -> None:
    llm.script(relevant(), '{"tool": "generate_haiku", "params": {"theme": 42}}')
    chat = await converse(cfg(llm, services), ["a haiku about 42"], log_path)
    assert "Haiku: 42 in the first light" in chat.out.text


async def test_handle_takes_one_line_at_a_time(
    llm: ScriptedLLM, services: Any, log_path: Path
) -> None:
    from kosmos.chat.build import open_chat
    from tests.chatkit import Recorder

    out = Recorder()
    llm.script(relevant(False))
    async with open_chat(
        cfg(llm, services), lang="en", output=out, log_path=log_path, env={}
    ) as agent:
        agent.begin()
        assert await agent.handle("help") is None
        assert await agent.handle("hi") is None
        assert await agent.handle("exit") == 0
    assert out.said[-1] == ("result", "Goodbye!")
    assert len(llm.requests) == 1


async def test_gemini_turn_and_its_errors(llm: ScriptedLLM, services: Any, log_path: Path) -> None:
    settings = replace(
        cfg(llm, services), provider="gemini", base_url=llm.gemini_base_url, model="gemini-x"
    )
    llm.script(relevant(), select("generate_haiku", theme="rain"))
    chat = await converse(settings, ["a haiku about rain"], log_path)
    assert "Haiku: rain in the first light" in chat.out.text
    assert all(r.path == "/v1beta/models/gemini-x:generateContent" for r in llm.requests)
    # The conversation goes back as Gemini turns: the chat's own notes are the model's.
    second = llm.requests[1].contents
    # Gemini takes no conversation that ends on the model's turn: the user's says to go on.
    assert second == [
        {"role": "user", "parts": [{"text": "a haiku about rain"}]},
        {"role": "model", "parts": [{"text": "The request is relevant, thinking.."}]},
        {"role": "user", "parts": [{"text": "Continue."}]},
    ]

    # Google refuses a bad key with HTTP 400; the chat says which variable to set.
    key_error = {
        "error": {"code": 400, "message": "API key not valid. Please pass a valid API key."}
    }
    llm.script(Status(400, key_error))
    chat = await converse(settings, ["hi"], log_path)
    assert chat.exit_code == 5
    assert chat.out.said[-1][0] == "reason"
    assert "refused the API key" in chat.out.said[-1][1]
    assert "GEMINI_API_KEY" in chat.out.said[-1][1]


async def test_llm_retries_are_logged(llm: ScriptedLLM, services: Any, log_path: Path) -> None:
    settings = replace(cfg(llm, services), llm_retries=1)
    llm.script(Status(503, {"error": {"message": "busy"}}), relevant(False))
    chat = await converse(settings, ["hi"], log_path)
    assert any(
        re.search(r"WARNING  \[cls\] chat // retry 1 in [\d.]+s after: HTTP 503: busy$", line)
        for line in chat.log_lines
    )
    assert "That request is outside what this agent does." in chat.out.text
