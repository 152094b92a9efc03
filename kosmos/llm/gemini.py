"""Google Gemini: POST {base}/models/{model}:generateContent."""

from __future__ import annotations

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

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"
DEFAULT_MODEL = "gemini-2.0-flash"

# The user's turn after a conversation that ends on the model's (see `contents`).
CONTINUE = "Continue."

# Keys of JSON Schema that Gemini's function declarations (an OpenAPI subset) refuse.
_DROP = {"title", "additionalProperties", "default", "$schema", "examples"}


def declaration_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A pydantic JSON schema as Gemini's function parameters take it: refs inlined, no extras."""
    defs = schema.get("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                return walk(defs[node["$ref"].rsplit("/", 1)[-1]])
            return {k: walk(v) for k, v in node.items() if k not in _DROP and k != "$defs"}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return walk(schema)


def declaration(tool: ToolSpec) -> dict[str, Any]:
    """One function declaration; a function without arguments has no `parameters`
    (Gemini refuses an OBJECT with no properties)."""
    out: dict[str, Any] = {"name": tool.name, "description": tool.description}
    if tool.parameters.get("properties"):
        out["parameters"] = declaration_schema(tool.parameters)
    return out


def contents(messages: Sequence[Message]) -> tuple[str, list[dict[str, Any]]]:
    """System text and the `contents` list: user/model roles, function calls and responses."""
    system: list[str] = []
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "system":
            system.append(m.content)
            continue
        role = "model" if m.role == "assistant" else "user"
        parts: list[dict[str, Any]] = []
        if m.role == "tool":
            response = {"name": m.name or "tool", "response": {"result": m.content}}
            parts.append({"functionResponse": response})
        elif m.content:
            parts.append({"text": m.content})
        for call in m.tool_calls:
            parts.append({"functionCall": {"name": call.name, "args": call.args}})
        if out and out[-1]["role"] == role:
            # Turns alternate: the answers to one turn's calls, and text after them, go
            # back together in one user turn.
            out[-1]["parts"].extend(parts)
        else:
            out.append({"role": role, "parts": parts or [{"text": ""}]})
    if out and out[-1]["role"] == "model":
        # Gemini refuses a conversation that ends on the model's turn ("multiturn requests must
        # end with a user role or a function response"); the chat's history can (its own notes
        # follow the request), so the user's turn says to go on.
        out.append({"role": "user", "parts": [{"text": CONTINUE}]})
    return "\n\n".join(system), out


class GeminiProvider:
    """generateContent with `x-goog-api-key`, `systemInstruction`, `contents`, `generationConfig`,
    and `tools` / `tool_config` or a JSON response only when a call asks for them."""

    name = "gemini"

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
            headers["x-goog-api-key"] = self._api_key
        return headers

    def url(self) -> str:
        return f"{self.base_url}/models/{self.model}:generateContent"

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
        system, turns = contents(messages)
        body: dict[str, Any] = {}
        if system:
            body["systemInstruction"] = {"parts": [{"text": system}]}
        body["contents"] = turns
        generation: dict[str, Any] = {
            "temperature": self.temperature if temperature is None else temperature,
            "maxOutputTokens": self.max_tokens if max_tokens is None else max_tokens,
        }
        if response_format is not None:
            generation["responseMimeType"] = "application/json"
            if response_format.kind == "json_schema" and response_format.schema is not None:
                generation["responseJsonSchema"] = response_format.schema
        if tools:
            body["tools"] = [{"function_declarations": [declaration(t) for t in tools]}]
            config: dict[str, Any] = {"mode": "AUTO"}
            if tool_choice:
                config = {"mode": "ANY", "allowed_function_names": [tool_choice]}
            body["tool_config"] = {"function_calling_config": config}
        body["generationConfig"] = generation
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
            data = await self.http.post(self.url(), body, self._headers(), on_retry=on_retry)
        except BadRequest as e:
            if "api key" in e.detail.lower():
                # Google answers a missing or wrong key with HTTP 400, not 401.
                raise LLMError(
                    f"the LLM at {self.base_url} refused the API key (HTTP 400: {e.detail}); "
                    f"{self.http.key_hint}"
                ) from e
            capability = rejected_capability(
                e.detail, tools=bool(tools), response_format=response_format
            )
            if capability is None:
                raise
            raise CapabilityRejected(capability, str(e)) from e
        return parse_generation(data, self.base_url)

    async def aclose(self) -> None:
        await self.http.aclose()


def _usage(meta: Any) -> dict[str, Any] | None:
    if not isinstance(meta, dict):
        return None
    return {
        "prompt_tokens": meta.get("promptTokenCount"),
        "completion_tokens": meta.get("candidatesTokenCount"),
        "total_tokens": meta.get("totalTokenCount"),
    }


def parse_generation(data: Any, base_url: str) -> Reply:
    """A generateContent answer into a Reply: every text part and every function call."""
    if not isinstance(data, dict):
        raise LLMError(f"the LLM at {base_url} answered, but not with JSON generateContent data")
    candidates = data.get("candidates")
    if not candidates:
        feedback = data.get("promptFeedback") or {}
        if feedback.get("blockReason"):
            raise LLMError(
                f"the LLM at {base_url} refused the prompt ({feedback['blockReason']}); "
                "rephrase the skill or the request"
            )
        start = " ".join(str(data).split())[:80]
        raise LLMError(
            f"the LLM at {base_url} answered without candidates ({start!r}); "
            "check --base-url (…/v1beta) and --model"
        )
    candidate = candidates[0]
    parts = (candidate.get("content") or {}).get("parts") or []
    text = ""
    calls: list[ToolCall] = []
    # A reply may hold text and function calls together; keep both.
    for part in parts:
        if isinstance(part.get("text"), str) and not part.get("thought"):
            text += part["text"]
        call = part.get("functionCall")
        if isinstance(call, dict) and call.get("name"):
            args = call.get("args") or {}
            calls.append(
                ToolCall(
                    id=call.get("id") or f"call_{len(calls)}",
                    name=call["name"],
                    args=args if isinstance(args, dict) else {"_unparsed": str(args)},
                )
            )
    return Reply(
        text=text,
        tool_calls=calls,
        finish_reason=candidate.get("finishReason"),
        usage=_usage(data.get("usageMetadata")),
    )
