"""Build the provider a run's settings ask for."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from kosmos.config import ENV_API_KEYS, Settings
from kosmos.errors import ConfigError
from kosmos.llm.http import LLMHttp
from kosmos.llm.openai import OpenAIProvider
from kosmos.llm.provider import Capabilities, Provider

if TYPE_CHECKING:
    from kosmos.llm.gemini import GeminiProvider


def key_hint(settings: Settings) -> str:
    names = " or ".join(ENV_API_KEYS.get(settings.provider, ("KOSMOS_API_KEY",)))
    where = f"providers.{settings.provider}.api_key in kosmos.yaml"
    if settings.api_key is None:
        return f"no API key is set: set {names} (or {where})"
    return f"set {names} (or {where}) to a valid key"


def require_key(settings: Settings) -> None:
    """Google's Gemini API takes no request without a key: say so before sending one (offline,
    the request would fail on DNS first and hide the cause)."""
    host = urlsplit(settings.base_url).hostname or ""
    google = host == "googleapis.com" or host.endswith(".googleapis.com")
    if settings.provider == "gemini" and google and settings.api_key is None:
        raise ConfigError(
            f"the Gemini API at {settings.base_url} needs an API key and none is set: "
            f"{key_hint(settings).removeprefix('no API key is set: ')}"
        )


def make_provider(settings: Settings) -> Provider:
    require_key(settings)
    http = LLMHttp(
        base_url=settings.base_url,
        timeout=settings.llm_timeout,
        connect_timeout=settings.llm_connect_timeout,
        retries=settings.llm_retries,
        key_hint=key_hint(settings),
        provider=settings.provider,
        url_from=settings.base_url_from,
    )
    api_key = settings.api_key.get_secret_value() if settings.api_key else None
    cls: type[OpenAIProvider | GeminiProvider] = OpenAIProvider
    if settings.provider == "gemini":
        from kosmos.llm.gemini import GeminiProvider

        cls = GeminiProvider
    return cls(
        http,
        model=settings.model,
        temperature=settings.temperature,
        max_tokens=settings.max_tokens,
        api_key=api_key,
        capabilities=Capabilities.of(settings.capabilities()),
    )
