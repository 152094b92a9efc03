"""Calling an HTTP tool (the `[exec]` step): health check, the request, showing the answer."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx
from pydantic import BaseModel, ValidationError

from kosmos.chat.catalog import Catalog
from kosmos.chat.log import ChatLog
from kosmos.config_chat import HttpToolSettings


class RagAnswer(BaseModel):
    """What a /search service answers."""

    answer: str
    chunk_title_list: list[str] = []
    chunk_texts: list[str] = []


class HaikuAnswer(BaseModel):
    """What a /generate_haiku service answers."""

    haiku_text: str
    syllables_per_line: list[int] = []
    total_words: int


@dataclass
class ToolResult:
    """What a call printed: `lines` for stdout; the first line also goes to the history.

    `reason`: when the call failed, one line for the operator with what failed and where.
    """

    ok: bool
    lines: list[str] = field(default_factory=list)
    reason: str | None = None


class _Failed(Exception):
    """The call failed; the log lines are already written, `reason` is for the operator."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _url(tool: HttpToolSettings, path: str) -> str:
    return tool.base_url.rstrip("/") + path


def _one_line(text: str, limit: int = 300) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _describe(e: BaseException) -> str:
    text = str(e) or type(e).__name__
    return _one_line(f"{type(e).__name__}: {text}" if str(e) else text)


def _failure(e: BaseException, timeout: float) -> str:
    """What went wrong, for the operator: a timeout is named as one."""
    if isinstance(e, TimeoutError | httpx.TimeoutException):
        return f"no answer within {timeout:g} s"
    if isinstance(e, json.JSONDecodeError):
        return f"the answer is not JSON ({e})"
    return _describe(e)


async def _health(tool: HttpToolSettings, client: httpx.AsyncClient, log: ChatLog, fn: str) -> None:
    if tool.health_path is None:
        return
    url = _url(tool, tool.health_path)
    try:
        async with asyncio.timeout(tool.timeout):
            response = await client.get(url, timeout=tool.timeout)
        response.raise_for_status()
        data = response.json()
    except Exception as e:  # any failure of the call is this branch
        log.error(f"check_health // Unexpected error: {_describe(e)}")
        log.error(f"{fn} // Health check failed")
        raise _Failed(
            f"{tool.name}: health check GET {url} failed: {_failure(e, tool.timeout)}"
        ) from e
    status = data.get("status") if isinstance(data, dict) else None
    if status != "ok":
        log.debug(f"check_health // status: {status!r}")
        log.error(f"{fn} // Health check failed")
        raise _Failed(f"{tool.name}: health check GET {url} answered status {status!r}, not 'ok'")


async def _request(
    tool: HttpToolSettings,
    body: dict[str, Any],
    client: httpx.AsyncClient,
    log: ChatLog,
    fn: str,
) -> dict[str, Any]:
    log.payload(f"{fn} // payload", body)
    url = _url(tool, tool.path)
    try:
        async with asyncio.timeout(tool.timeout):
            response = await client.post(url, json=body, timeout=tool.timeout)
        data = response.json() if response.content else None
        if response.status_code >= 400 and not (isinstance(data, dict) and "error" in data):
            response.raise_for_status()
        if not isinstance(data, dict):
            raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    except Exception as e:  # any failure of the call is this branch
        log.error(f"{fn} // Unexpected error: {_describe(e)}")
        raise _Failed(f"{tool.name}: POST {url} failed: {_failure(e, tool.timeout)}") from e
    log.payload(f"{fn} // response", data)
    if data.get("error"):
        log.error(f"{fn} // {tool.texts.error_label}: {_one_line(data['error'])}")
        raise _Failed(f"{tool.name}: POST {url} answered an error: {_one_line(data['error'])}")
    return data


async def call_http_tool(
    tool: HttpToolSettings,
    params: Mapping[str, str],
    *,
    client: httpx.AsyncClient,
    log: ChatLog,
    catalog: Catalog,
) -> ToolResult:
    """Check health, send the request, and turn the answer into stdout lines."""
    fn = tool.texts.log_name or tool.name
    body = {**tool.body, **params}
    try:
        await _health(tool, client, log, fn)
        data = await _request(tool, body, client, log, fn)
        return ToolResult(True, _show(tool, body, data, log, catalog, fn))
    except _Failed as e:
        return ToolResult(False, [catalog(tool.texts.failed, tool=tool.name)], reason=e.reason)


def _show(
    tool: HttpToolSettings,
    body: Mapping[str, Any],
    data: dict[str, Any],
    log: ChatLog,
    catalog: Catalog,
    fn: str,
) -> list[str]:
    try:
        if tool.show == "rag":
            return _show_rag(RagAnswer.model_validate(data), body, log, catalog)
        if tool.show == "haiku":
            return _show_haiku(HaikuAnswer.model_validate(data), catalog)
    except ValidationError as e:
        problem = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in e.errors()[:3]
        )
        log.error(f"{fn} // Unexpected error: the answer does not match ({problem})")
        raise _Failed(
            f"{tool.name}: the answer from POST {_url(tool, tool.path)} does not match ({problem})"
        ) from e
    return [catalog("field", name=k, value=_one_line(v)) for k, v in data.items()] or [
        catalog("no_params")
    ]


def _show_rag(
    answer: RagAnswer, body: Mapping[str, Any], log: ChatLog, catalog: Catalog
) -> list[str]:
    top_k = body.get("top_k") or len(answer.chunk_title_list)
    chunks = "\n".join(
        f"  [{i}] {title}\n      {_one_line(text, 2000)}"
        for i, (title, text) in enumerate(
            zip(answer.chunk_title_list, answer.chunk_texts, strict=False), 1
        )
    )
    log.debug(f"rag_chunks_message:\n{chunks}" if chunks else "rag_chunks_message: (none)")
    return [
        catalog("rag_answer", answer=answer.answer),
        catalog("rag_titles", top_k=top_k, titles=", ".join(answer.chunk_title_list)),
    ]


def _show_haiku(answer: HaikuAnswer, catalog: Catalog) -> list[str]:
    lines = [line.strip() for line in answer.haiku_text.strip().splitlines() if line.strip()]
    return [
        catalog("haiku", text=" | ".join(lines)),
        catalog("haiku_syllables", syllables="-".join(str(n) for n in answer.syllables_per_line)),
        catalog("haiku_words", words=answer.total_words),
    ]
