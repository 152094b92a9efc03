"""POST JSON to an LLM server with timeouts, retries and errors that say what to do."""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import ssl
import time
import urllib.request
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from kosmos.errors import LLMError

RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}
BASE_DELAY = 0.5
MAX_DELAY = 8.0
RETRY_AFTER_CAP = 60.0
# A server that takes no connection within this long is down or unreachable: waiting out the
# whole request timeout, retries included, would turn it into minutes.
CONNECT_TIMEOUT = 5.0

# What to check, per provider, when its server cannot be found or is not what kosmos expects.
# `{where}` is the config file key that set the base URL (`base_url in ./kosmos.yaml`).
HINTS = {
    "openai": {
        "refused": "start a local server (e.g. `ollama serve`, then --base-url "
        "http://localhost:11434/v1) or set AI_KOSMOS_MODEL_BASE_URL",
        "connect": "check --base-url / AI_KOSMOS_MODEL_BASE_URL and the network",
        "404": "check --base-url (it usually ends in /v1) and --model",
        "api": "an OpenAI-compatible API",
        "refused_set": "start the LLM server there, or point {where} at one (e.g. `ollama "
        "serve`, then http://localhost:11434/v1)",
        "connect_set": "check {where} and the network",
        "404_set": "check {where} (it usually ends in /v1) and --model",
    },
    "gemini": {
        "refused": "check --base-url / GEMINI_BASE_URL (Google's is "
        "https://generativelanguage.googleapis.com/v1beta)",
        "connect": "check --base-url / GEMINI_BASE_URL and the network",
        "404": "check --base-url (Gemini's ends in /v1beta) and --model",
        "api": "the Gemini API",
        "refused_set": "check {where} (Google's is "
        "https://generativelanguage.googleapis.com/v1beta)",
        "connect_set": "check {where} and the network",
        "404_set": "check {where} (Gemini's ends in /v1beta) and --model",
    },
}


def _hints(hints: dict[str, str], url_from: str | None) -> dict[str, str]:
    """The hints for a base URL set at `url_from`: they name where to change it."""
    if url_from is None:
        return hints
    picked = dict(hints)
    for key in ("refused", "connect", "404"):
        picked[key] = hints[f"{key}_set"].format(where=url_from)
    return picked


OnRetry = Callable[[int, str, float], None]
Sleep = Callable[[float], Awaitable[None]]


class BadRequest(LLMError):
    """HTTP 400: the server understood the request and refused it; `detail` is its reason."""

    def __init__(self, message: str, detail: str) -> None:
        super().__init__(message)
        self.detail = detail


class _Retryable(Exception):
    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after


def _refused(error: BaseException) -> bool:
    """Whether a connect error was, somewhere down its chain, a refused connection."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ConnectionRefusedError) or "refused" in str(current).lower():
            return True
        current = current.__cause__ or current.__context__
    return False


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        if parsed is None:
            return None
        return max(0.0, parsed.timestamp() - time.time())


def server_message(response: httpx.Response) -> str:
    """The error text a server put in its body, shortened to one line."""
    try:
        data = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        text = response.text.strip()
        return " ".join(text.split())[:200]
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict):
            err = err.get("message") or err.get("status") or json.dumps(err)[:200]
        return " ".join(str(err).split())[:200]
    return " ".join(str(data).split())[:200]


def answered(status: int, response: httpx.Response) -> str:
    """`HTTP 404: what the server said`, or that it said nothing."""
    said = server_message(response)
    return f"HTTP {status}: {said}" if said else f"HTTP {status}, with an empty body"


# A fleet sends up to one request per host at once. httpx's pool looks over all of its
# connections (and, for each idle one, over all of them again) whenever a request starts or
# ends, and keeps only 20 idle ones: with 50 hosts in one pool that is quadratic work and a
# new connection for most requests. Requests go instead to clients of at most SHARD_SIZE
# connections each, which all stay open between requests. Each look also asks the kernel
# about every idle connection (poll, getpeername): 4 a client cost 9-13% less CPU than 8 for
# 50 hosts in one process (benchmarks/table.py --rows inprocess); 2 did no better than 8.
SHARD_SIZE = 4
MAX_SHARDS = 32


def _ssl_context(base_url: str) -> ssl.SSLContext:
    """The TLS settings of a run's clients, made once: loading the CA files costs tens of ms.

    A plain http:// endpoint (a model on this machine or the LAN), reached without a proxy,
    never needs them: the clients follow no redirects, so no request leaves for https. The
    context it gets still verifies, and trusts no CA at all.
    """
    if base_url.lower().startswith("http://") and not urllib.request.getproxies():
        return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    return httpx.create_ssl_context()


class LLMHttp:
    """One async HTTP client for one run, with the retry rules of the engine."""

    def __init__(
        self,
        *,
        base_url: str,
        timeout: float,
        retries: int,
        key_hint: str,
        connect_timeout: float = CONNECT_TIMEOUT,
        provider: str = "openai",
        url_from: str | None = None,
        on_retry: OnRetry | None = None,
        sleep: Sleep = asyncio.sleep,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.connect_timeout = min(connect_timeout, timeout)
        self.retries = retries
        self.key_hint = key_hint
        self.hints = _hints(HINTS.get(provider, HINTS["openai"]), url_from)
        self.on_retry = on_retry
        self._sleep = sleep
        self._clients: list[httpx.AsyncClient] = [client] if client is not None else []
        self._busy: list[int] = [0] * len(self._clients)
        self._ssl: ssl.SSLContext | None = None

    async def aclose(self) -> None:
        for client in self._clients:
            await client.aclose()

    def _take(self) -> int:
        """The index of the client for the next request: the first with a free connection."""
        free = [i for i, busy in enumerate(self._busy) if busy < SHARD_SIZE]
        if free or len(self._clients) >= MAX_SHARDS:
            i = free[0] if free else min(range(len(self._busy)), key=self._busy.__getitem__)
            self._busy[i] += 1
            return i
        if self._ssl is None:
            self._ssl = _ssl_context(self.base_url)
        self._clients.append(
            httpx.AsyncClient(
                timeout=httpx.Timeout(self.timeout, connect=self.connect_timeout),
                verify=self._ssl,
                limits=httpx.Limits(
                    max_connections=SHARD_SIZE, max_keepalive_connections=SHARD_SIZE
                ),
            )
        )
        self._busy.append(1)
        return len(self._clients) - 1

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, RETRY_AFTER_CAP)
        delay = min(MAX_DELAY, BASE_DELAY * (2**attempt))
        return delay * random.uniform(0.8, 1.2)

    async def post(
        self,
        url: str,
        body: dict[str, Any],
        headers: dict[str, str],
        *,
        on_retry: OnRetry | None = None,
    ) -> Any:
        """POST `body`; return the decoded JSON of a 2xx answer or raise LLMError."""
        last: _Retryable | None = None
        notify = on_retry or self.on_retry
        for attempt in range(self.retries + 1):
            if last is not None:
                delay = self._delay(attempt - 1, last.retry_after)
                if notify:
                    notify(attempt, last.reason, delay)
                await self._sleep(delay)
            try:
                return await self._once(url, body, headers)
            except _Retryable as e:
                last = e
        assert last is not None
        raise LLMError(self._give_up(url, last.reason))

    def _give_up(self, url: str, reason: str) -> str:
        n = self.retries + 1
        tries = f"{n} attempt" if n == 1 else f"{n} attempts"
        if reason == "connection refused":
            return (
                f"cannot reach the LLM at {self.base_url} (connection refused, {tries}); "
                + self.hints["refused"]
            )
        if reason.startswith("timed out"):
            return (
                f"the LLM at {self.base_url} did not answer within {self.timeout:g} s "
                f"({tries}); check that the server is up and not overloaded, "
                "or raise llm_timeout in kosmos.yaml"
            )
        if reason.startswith("cannot connect"):
            return (
                f"cannot reach the LLM at {self.base_url} "
                f"({reason.removeprefix('cannot connect: ')}, "
                f"{tries}); " + self.hints["connect"]
            )
        return (
            f"the LLM at {self.base_url} kept failing ({reason}, {tries}); "
            "try again later or check the server's logs"
        )

    async def _once(self, url: str, body: dict[str, Any], headers: dict[str, str]) -> Any:
        try:
            shard = self._take()
            try:
                async with asyncio.timeout(self.timeout):
                    response = await self._clients[shard].post(url, json=body, headers=headers)
            finally:
                self._busy[shard] -= 1
        except httpx.ConnectTimeout as e:
            # Not retried: a server that takes no connection is not busy, it is not there.
            raise LLMError(
                f"the LLM at {self.base_url} took no connection within "
                f"{self.connect_timeout:g} s; check that it is up and reachable from here "
                "(a firewall that drops packets looks the same), or raise llm_connect_timeout "
                "in kosmos.yaml"
            ) from e
        except (TimeoutError, httpx.TimeoutException) as e:
            raise _Retryable(f"timed out after {self.timeout:g} s") from e
        except httpx.ConnectError as e:
            if _refused(e):
                raise _Retryable("connection refused") from e
            raise _Retryable(f"cannot connect: {str(e) or type(e).__name__}") from e
        except httpx.TransportError as e:
            raise _Retryable(f"cannot connect: {str(e) or type(e).__name__}") from e
        status = response.status_code
        if status in RETRY_STATUS or status >= 500:
            raise _Retryable(answered(status, response), _retry_after(response))
        if status in (401, 403):
            raise LLMError(
                f"the LLM at {self.base_url} refused the API key ({answered(status, response)}); "
                f"{self.key_hint}"
            )
        if status == 404:
            raise LLMError(
                f"the LLM at {self.base_url} answered {answered(status, response)}; "
                + self.hints["404"]
            )
        if status == 400:
            raise BadRequest(
                f"the LLM at {self.base_url} rejected the request ({answered(status, response)}); "
                "check --model and the server's settings",
                server_message(response),
            )
        if status >= 400:
            raise LLMError(
                f"the LLM at {self.base_url} rejected the request ({answered(status, response)}); "
                "check --model and the server's settings"
            )
        try:
            return response.json()
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            start = " ".join(response.text.split())[:80]
            raise LLMError(
                f"the LLM at {self.base_url} answered HTTP {status} with a body that is not JSON "
                f"({start!r}); check that --base-url points at {self.hints['api']}"
            ) from e
