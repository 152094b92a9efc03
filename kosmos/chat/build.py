"""Assemble one chat from resolved settings: log, LLM API, structured layer, tools, agent."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path

import httpx

from kosmos.chat.agent import ChatAgent, Output, SkillRunner
from kosmos.chat.api import ApiProvider, LLMApi
from kosmos.chat.catalog import Catalog, Lang
from kosmos.chat.log import ChatLog
from kosmos.chat.ranking import ToolRanker
from kosmos.chat.tools import build_tools
from kosmos.config import Settings
from kosmos.errors import ConfigError
from kosmos.llm.factory import key_hint, require_key
from kosmos.llm.http import LLMHttp
from kosmos.llm.provider import Capabilities
from kosmos.llm.structured import StructuredClient
from kosmos.prompts import Prompts
from kosmos.runs.redactor import run_redactor
from kosmos.skills.model import Skill


def _http(base_url: str, settings: Settings, *, provider: str) -> LLMHttp:
    """`provider` picks the hints its errors give (what to check for that API)."""
    return LLMHttp(
        base_url=base_url,
        timeout=settings.llm_timeout,
        connect_timeout=settings.llm_connect_timeout,
        retries=settings.llm_retries,
        key_hint=key_hint(settings),
        provider=provider,
    )


def check_texts(settings: Settings, catalog: Catalog) -> None:
    """Every catalog key an HTTP tool names must exist; say which one does not."""
    for tool in settings.chat_settings.tools:
        keys = [("texts.failed", tool.texts.failed)]
        keys += [(f"params.{p.name}.too_long", p.too_long) for p in tool.params]
        keys += [(f"params.{p.name}.ready", p.ready) for p in tool.params]
        for where, key in keys:
            if key not in catalog:
                raise ConfigError(
                    f"chat.tools.{tool.name}.{where}: no message {key!r}; "
                    "add it under chat.messages (with en and ru) or use a shipped one"
                )


@contextlib.asynccontextmanager
async def open_chat(
    settings: Settings,
    *,
    lang: Lang,
    output: Output,
    log_path: Path | None,
    env: Mapping[str, str],
    skills: Sequence[Skill] = (),
    skill_runner: SkillRunner | None = None,
    verbose: bool = False,
) -> AsyncIterator[ChatAgent]:
    """A ready ChatAgent; everything it opened is closed on the way out."""
    require_key(settings)
    chat = settings.chat_settings
    catalog = Catalog(lang, chat.messages)
    check_texts(settings, catalog)
    key = settings.api_key.get_secret_value() if settings.api_key else None
    redactor = run_redactor(settings, env)
    log = ChatLog(log_path, redactor=redactor, verbose=verbose)
    api = LLMApi(
        log,
        chat_http=_http(settings.base_url, settings, provider=settings.provider),
        default_model=chat.default_model or settings.model,
        default_embedding_model=chat.default_embedding_model,
        api_key=key,
        provider=settings.provider,
        # The embeddings endpoint is OpenAI-compatible whatever the chat's provider.
        embeddings_http=_http(chat.embeddings_base_url, settings, provider="openai")
        if chat.embeddings_base_url
        else None,
    )
    prompts = Prompts.load(settings.prompts_file)
    provider = ApiProvider(
        api,
        temperature=settings.temperature,
        max_tokens=settings.max_tokens,
        capabilities=Capabilities.of(settings.capabilities()),
        verbose=verbose,
    )
    ranker = None
    if chat.embeddings_base_url:
        ranker = ToolRanker(api, log, top_k=chat.rank_top_k, verbose=verbose)
    tools = build_tools(chat.tools, skills if chat.skills else ())
    http = httpx.AsyncClient()
    try:
        yield ChatAgent(
            settings=chat,
            tools=tools,
            structured=StructuredClient(provider, prompts),
            prompts=prompts,
            catalog=catalog,
            log=log,
            output=output,
            http=http,
            skills=skill_runner,
            ranker=ranker,
        )
    finally:
        await http.aclose()
        await provider.aclose()
        log.close()
