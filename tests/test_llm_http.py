"""kosmos.llm.http: many requests at once over connections that are kept and reused."""

from __future__ import annotations

import asyncio

from kosmos.llm.http import LLMHttp
from tests.llmserver import Hang, ScriptedLLM


async def test_a_fleet_of_requests_reuses_its_connections(llm: ScriptedLLM) -> None:
    llm.script(*[Hang(0.3, f"[DONE] {i}") for i in range(60)])
    http = LLMHttp(base_url=llm.base_url, timeout=10, retries=0, key_hint="set a key")
    url = f"{llm.base_url}/chat/completions"

    async def one() -> str:
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        reply = await http.post(url, body, {})
        return reply["choices"][0]["message"]["content"]

    try:
        first = await asyncio.gather(*(one() for _ in range(30)))
        second = await asyncio.gather(*(one() for _ in range(30)))
    finally:
        await http.aclose()
    assert sorted(first + second) == sorted(f"[DONE] {i}" for i in range(60))
    # 30 at once need 30 connections; the second round finds them all still open.
    assert len({r.port for r in llm.requests}) == 30
