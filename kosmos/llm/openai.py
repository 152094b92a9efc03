"""OpenAI chat completions, and every server that speaks them (Ollama, vLLM, llama.cpp)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kosmos.errors import LLMError
from kosmos.events import Message
from kosmos.llm.http import LLMHttp, OnRetry
from kosmos.llm.provider import Reply


class OpenAIProvider:
    """POST {base}/chat/completions with exactly model, messages, temperature, max_tokens."""

    name = "openai"

    def __init__(
        self,
        http: LLMHttp,
        *,
        model: str,
        temperature: float,
        max_tokens: int,
        api_key: str | None,
    ) -> None:
        self.http = http
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self._api_key = api_key
        self.base_url = http.base_url

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    def body(self, messages: Sequence[Message]) -> dict[str, Any]:
        # seed 001 section 1: these four fields and no others.
        return {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }

    async def complete(
        self, messages: Sequence[Message], *, on_retry: OnRetry | None = None
    ) -> Reply:
        data = await self.http.post(
            f"{self.base_url}/chat/completions",
            self.body(messages),
            self._headers(),
            on_retry=on_retry,
        )
        return parse_completion(data, self.base_url)

    async def aclose(self) -> None:
        await self.http.aclose()


def parse_completion(data: Any, base_url: str) -> Reply:
    """A chat completion body into a Reply; anything else is a clear LLMError."""
    try:
        choice = data["choices"][0]
        message = choice["message"]
        content = message.get("content")
        if content is not None and not isinstance(content, str):
            raise TypeError("content is not a string")
    except (KeyError, IndexError, TypeError, AttributeError) as e:
        if isinstance(data, dict) and "error" in data:
            err = data["error"]
            text = err.get("message") if isinstance(err, dict) else err
            raise LLMError(
                f"the LLM at {base_url} answered with an error: {' '.join(str(text).split())[:200]}"
            ) from e
        start = " ".join(str(data).split())[:80]
        raise LLMError(
            f"the LLM at {base_url} answered, but not with a chat completion ({start!r}); "
            "check that --base-url points at an OpenAI-compatible /v1 endpoint"
        ) from e
    return Reply(
        text=content or "",
        finish_reason=choice.get("finish_reason"),
        usage=data.get("usage") if isinstance(data.get("usage"), dict) else None,
    )
