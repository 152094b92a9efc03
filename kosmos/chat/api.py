"""The chat's two LLM API calls, and a Provider over them for the structured-request layer.

`post_chat_completions(payload, verbose)` and `post_embeddings(payload, verbose)` fill in the
default model, log the payload and the response at debug level when verbose, and on failure
log the stack trace at critical level and return `{"error": "<exception text>"}`. On Gemini the
chat's completions go to `post_generate_content` instead, with the same logging and errors.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kosmos.chat.log import ChatLog
from kosmos.errors import LLMError
from kosmos.events import Message
from kosmos.llm.gemini import GeminiProvider, parse_generation
from kosmos.llm.http import BadRequest, LLMHttp
from kosmos.llm.openai import OpenAIProvider, parse_completion
from kosmos.llm.provider import (
    Capabilities,
    CapabilityRejected,
    Reply,
    ResponseFormat,
    ToolSpec,
    rejected_capability,
)


class LLMApi:
    """The chat's own client of the LLM API: completions (OpenAI-compatible or Gemini's
    generateContent, by `provider`) and OpenAI-compatible embeddings."""

    def __init__(
        self,
        log: ChatLog,
        *,
        chat_http: LLMHttp,
        default_model: str,
        default_embedding_model: str,
        api_key: str | None = None,
        embeddings_http: LLMHttp | None = None,
        provider: str = "openai",
    ) -> None:
        self.log = log
        self.provider = provider
        self.chat_http = chat_http
        self.embeddings_http = embeddings_http
        self.default_model = default_model
        self.default_embedding_model = default_embedding_model
        self._api_key = api_key
        # The exception behind the last `{"error": ...}`, for callers that need its kind.
        self.last_error: BaseException | None = None

    def _headers(self, http: LLMHttp) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if not self._api_key:
            return headers
        if self.provider == "gemini" and http is self.chat_http:
            headers["x-goog-api-key"] = self._api_key
        else:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    async def _post(
        self, http: LLMHttp, path: str, payload: dict[str, Any], verbose: bool, name: str
    ) -> dict[str, Any]:
        if verbose:
            self.log.payload(f"{name} // payload", payload)
        try:
            data = await http.post(
                f"{http.base_url}{path}",
                payload,
                self._headers(http),
                on_retry=lambda attempt, reason, delay: self.log.warning(
                    f"{name} // retry {attempt} in {delay:.1f}s after: {reason}"
                ),
            )
            if not isinstance(data, dict):
                raise LLMError(f"the LLM at {http.base_url} answered {type(data).__name__}")
        except Exception as e:  # every failure becomes {"error": ...}
            self.last_error = e
            self.log.critical(f"{name} // {type(e).__name__}: {e}", e)
            return {"error": str(e)}
        self.last_error = None
        if verbose:
            self.log.payload(f"{name} // response", data)
        return data

    async def post_chat_completions(
        self, payload: dict[str, Any], verbose: bool = False
    ) -> dict[str, Any]:
        """POST /chat/completions; `payload` holds `messages`, the model defaults from config."""
        if "messages" not in payload:
            raise ValueError("post_chat_completions: payload needs 'messages'")
        body = {"model": self.default_model, **payload}
        return await self._post(self.chat_http, "/chat/completions", body, verbose, "chat")

    async def post_generate_content(
        self, payload: dict[str, Any], verbose: bool = False
    ) -> dict[str, Any]:
        """POST /models/{model}:generateContent (Gemini); `payload` holds `contents`."""
        if "contents" not in payload:
            raise ValueError("post_generate_content: payload needs 'contents'")
        path = f"/models/{self.default_model}:generateContent"
        return await self._post(self.chat_http, path, payload, verbose, "chat")

    async def post_embeddings(
        self, payload: dict[str, Any], verbose: bool = False
    ) -> dict[str, Any]:
        """POST /embeddings; `payload` holds `input`, the model defaults from config."""
        if "input" not in payload:
            raise ValueError("post_embeddings: payload needs 'input'")
        if self.embeddings_http is None:
            return {"error": "no embeddings endpoint is configured (chat.embeddings_base_url)"}
        body = {"model": self.default_embedding_model, **payload}
        return await self._post(self.embeddings_http, "/embeddings", body, verbose, "embeddings")

    async def aclose(self) -> None:
        await self.chat_http.aclose()
        if self.embeddings_http is not None:
            await self.embeddings_http.aclose()


class ApiProvider:
    """A Provider whose every completion goes through the api: `post_chat_completions`, or
    `post_generate_content` when the api speaks Gemini."""

    def __init__(
        self,
        api: LLMApi,
        *,
        temperature: float,
        max_tokens: int,
        capabilities: Capabilities | None = None,
        verbose: bool = False,
    ) -> None:
        self.api = api
        self.name = api.provider
        self.model = api.default_model
        self.base_url = api.chat_http.base_url
        self.capabilities = capabilities or Capabilities()
        self.verbose = verbose
        # Only builds bodies: requests go through the api, not its http client.
        wire = GeminiProvider if api.provider == "gemini" else OpenAIProvider
        self._wire = wire(
            api.chat_http,
            model=api.default_model,
            temperature=temperature,
            max_tokens=max_tokens,
            api_key=None,
            capabilities=self.capabilities,
        )

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        on_retry: Callable[[int, str, float], None] | None = None,
        tools: Sequence[ToolSpec] | None = None,
        tool_choice: str | None = None,
        response_format: ResponseFormat | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> Reply:
        body = self._wire.body(
            messages,
            tools=tools,
            tool_choice=tool_choice,
            response_format=response_format,
            temperature=temperature,
            max_tokens=max_tokens,
        )
        gemini = self.name == "gemini"
        if gemini:
            data = await self.api.post_generate_content(body, self.verbose)
        else:
            body.pop("model", None)
            data = await self.api.post_chat_completions(body, self.verbose)
        if "error" in data and not ({"candidates", "choices"} & data.keys()):
            error = self.api.last_error
            if gemini and isinstance(error, BadRequest) and "api key" in error.detail.lower():
                # Google answers a missing or wrong key with HTTP 400, not 401.
                raise LLMError(
                    f"the LLM at {self.base_url} refused the API key (HTTP 400: "
                    f"{error.detail}); {self.api.chat_http.key_hint}"
                ) from error
            if isinstance(error, BadRequest):
                capability = rejected_capability(
                    error.detail, tools=bool(tools), response_format=response_format
                )
                if capability is not None:
                    raise CapabilityRejected(capability, str(error)) from error
            if isinstance(error, LLMError):
                raise error
            raise LLMError(str(data["error"]))
        if gemini:
            return parse_generation(data, self.base_url)
        return parse_completion(data, self.base_url)

    async def aclose(self) -> None:
        await self.api.aclose()
