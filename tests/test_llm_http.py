"""kosmos.llm.http: many requests at once over connections that are kept and reused."""

from __future__ import annotations

import asyncio
import ssl

import pytest

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


async def _trusted_cas(base_url: str) -> int:
    """How many CA certificates the clients of a run against `base_url` trust, after one
    request (the clients and their TLS settings are made for the first)."""
    http = LLMHttp(base_url=base_url, timeout=10, retries=0, key_hint="set a key")
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    try:
        await http.post(f"{base_url}/chat/completions", body, {})
    finally:
        await http.aclose()
    assert http._ssl is not None and http._ssl.verify_mode == ssl.CERT_REQUIRED
    return http._ssl.cert_store_stats()["x509_ca"]


async def test_a_plain_http_endpoint_loads_no_ca_files_unless_a_proxy_is_set(
    llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    llm.script("[DONE] a", "[DONE] b")
    for name in ("http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    assert await _trusted_cas(llm.base_url) == 0
    # Through a proxy (here one never reached: NO_PROXY covers loopback) the proxy itself may
    # be https, so the CA files are loaded as for an https endpoint.
    monkeypatch.setenv("HTTPS_PROXY", "https://proxy.invalid:3128")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    assert await _trusted_cas(llm.base_url) > 0
    assert len(llm.requests) == 2
