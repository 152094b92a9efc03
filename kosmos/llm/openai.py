"""OpenAI chat completions, and every server that speaks them (Ollama, vLLM, llama.cpp)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from kosmos.errors import LLMError
from kosmos.events import Message
from kosmos.llm.http import BadRequest, LLMHttp, OnRetry
from kosmos.llm.provider import (
    Capabilities,
    CapabilityRejected,
    Reply,
    ResponseFormat,
    ToolCall,
    ToolSpec,
    rejected_capability,
)


def wire_message(m: Message) -> dict[str, Any]:
    """One message in chat-completions form; plain ones are exactly {role, content}."""
    if m.role == "tool":
        return {"role": "tool", "tool_call_id": m.tool_call_id or "", "content": m.content}
    if m.role == "assistant" and m.tool_calls:
        return {
            "role": "assistant",
            "content": m.content or None,
            "tool_calls": [
                {
                    "id": c.id or f"call_{i}",
                    "type": "function",
                    "function": {"name": c.name, "arguments": json.dumps(c.args)},
                }
                for i, c in enumerate(m.tool_calls)
            ],
        }
    return {"role": m.role, "content": m.content}


class OpenAIProvider:
    """POST {base}/chat/completions; a plain call has exactly model, messages, temperature,
    max_tokens, tools and response_format are added only when asked for."""

    name = "openai"

    def __init__(
        self,
        http: LLMHttp,
        *,
        model: str,
        temperature: float,
        max_tokens: int,
        api_key: str | None,
        capabilities: Capabilities | None = None,
    ) -> None:
        self.http = http
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self._api_key = api_key
        self.base_url = http.base_url
        self.capabilities = capabilities or Capabilities()

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    def body(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSpec] | None = None,
        tool_choice: str | None = None,
        response_format: ResponseFormat | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> dict[str, Any]:
        # docs/protocol.md, The conversation: these four fields, and others only when a call asks.
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [wire_message(m) for m in messages],
            "temperature": self.temperature if temperature is None else temperature,
            "max_tokens": self.max_tokens if max_tokens is None else max_tokens,
        }
        if tools:
            # OpenAI function calling.
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    },
                }
                for t in tools
            ]
            body["tool_choice"] = (
                {"type": "function", "function": {"name": tool_choice}} if tool_choice else "auto"
            )
        if response_format is not None:
            if response_format.kind == "json_schema":
                body["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {
                        "name": response_format.name,
                        "schema": response_format.schema,
                        "strict": response_format.strict,
                    },
                }
            else:
                body["response_format"] = {"type": "json_object"}
        return body

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        on_retry: OnRetry | None = None,
        tools: Sequence[ToolSpec] | None = None,
        tool_choice: str | None = None,
        response_format: ResponseFormat | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> Reply:
        body = self.body(
            messages,
            tools=tools,
            tool_choice=tool_choice,
            response_format=response_format,
            temperature=temperature,
            max_tokens=max_tokens,
        )
        try:
            data = await self.http.post(
                f"{self.base_url}/chat/completions", body, self._headers(), on_retry=on_retry
            )
        except BadRequest as e:
            capability = rejected_capability(
                e.detail, tools=bool(tools), response_format=response_format
            )
            if capability is None:
                raise
            raise CapabilityRejected(capability, str(e)) from e
        return parse_completion(data, self.base_url)

    async def aclose(self) -> None:
        await self.http.aclose()


def _tool_calls(message: dict[str, Any], base_url: str) -> list[ToolCall]:
    calls = []
    for raw in message.get("tool_calls") or []:
        fn = raw.get("function") or {}
        arguments = fn.get("arguments") or "{}"
        try:
            args = json.loads(arguments) if isinstance(arguments, str) else dict(arguments)
        except (json.JSONDecodeError, TypeError, ValueError):
            # Kept, so that the protocol can tell the LLM its arguments were not JSON.
            args = {"_unparsed": str(arguments)}
        if not isinstance(args, dict):
            args = {"_unparsed": str(arguments)}
        if not fn.get("name"):
            raise LLMError(f"the LLM at {base_url} sent a tool call without a function name")
        calls.append(ToolCall(id=raw.get("id"), name=fn["name"], args=args))
    return calls


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
        tool_calls=_tool_calls(message, base_url),
        finish_reason=choice.get("finish_reason"),
        usage=data.get("usage") if isinstance(data.get("usage"), dict) else None,
    )
