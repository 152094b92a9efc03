"""Pre-rank tools by embedding similarity: only the closest go to the selection prompt."""

from __future__ import annotations

import math
from collections.abc import Sequence

from kosmos.chat.api import LLMApi
from kosmos.chat.log import ChatLog
from kosmos.chat.tools import Tool


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


def _vectors(data: dict, count: int) -> list[list[float]] | None:
    items = data.get("data")
    if not isinstance(items, list) or len(items) != count:
        return None
    try:
        ordered = sorted(items, key=lambda d: d.get("index", 0))
        return [[float(x) for x in d["embedding"]] for d in ordered]
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def _text(tool: Tool) -> str:
    """What is embedded for a tool, and its cache key: another host may have another skill of
    the same name."""
    text = f"{tool.name}: {tool.description}"
    return f"{text} ({'; '.join(tool.triggers)})" if tool.triggers else text


class ToolRanker:
    """Embeds each tool's description once per chat, then each request, and keeps the top k."""

    def __init__(self, api: LLMApi, log: ChatLog, *, top_k: int, verbose: bool = False) -> None:
        self.api = api
        self.log = log
        self.top_k = top_k
        self.verbose = verbose
        self._cache: dict[str, list[float]] = {}

    async def _embed(self, texts: list[str]) -> list[list[float]] | None:
        data = await self.api.post_embeddings({"input": texts}, self.verbose)
        if "error" in data:
            return None
        vectors = _vectors(data, len(texts))
        if vectors is None:
            self.log.warning("rank_tools // the embeddings answer has no vector per input")
        return vectors

    async def rank(self, tools: Sequence[Tool], query: str) -> list[Tool]:
        """The `top_k` tools closest to `query`; all of them when embedding fails."""
        if len(tools) <= self.top_k:
            return list(tools)
        missing = [t for t in tools if _text(t) not in self._cache]
        if missing:
            vectors = await self._embed([_text(t) for t in missing])
            if vectors is None:
                self.log.warning("rank_tools // embeddings failed, every tool goes to selection")
                return list(tools)
            self._cache.update({_text(t): v for t, v in zip(missing, vectors, strict=True)})
        query_vectors = await self._embed([query])
        if query_vectors is None:
            self.log.warning("rank_tools // embeddings failed, every tool goes to selection")
            return list(tools)
        query_vector = query_vectors[0]
        scored = sorted(
            tools, key=lambda t: cosine(self._cache[_text(t)], query_vector), reverse=True
        )
        kept = scored[: self.top_k]
        self.log.debug(f"rank_tools // kept {', '.join(t.name for t in kept)}")
        return kept
