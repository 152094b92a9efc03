"""Build the provider a run's settings ask for."""

from __future__ import annotations

from kosmos.config import ENV_API_KEYS, Settings
from kosmos.llm.http import LLMHttp
from kosmos.llm.openai import OpenAIProvider
from kosmos.llm.provider import Capabilities, Provider


def key_hint(settings: Settings) -> str:
    names = " or ".join(ENV_API_KEYS.get(settings.provider, ("KOSMOS_API_KEY",)))
    where = f"providers.{settings.provider}.api_key in kosmos.yaml"
    if settings.api_key is None:
        return f"no API key is set: set {names} (or {where})"
    return f"set {names} (or {where}) to a valid key"


def make_provider(settings: Settings) -> Provider:
    http = LLMHttp(
        base_url=settings.base_url,
        timeout=settings.llm_timeout,
        retries=settings.llm_retries,
        key_hint=key_hint(settings),
        provider=settings.provider,
        url_from=settings.base_url_from,
    )
    api_key = settings.api_key.get_secret_value() if settings.api_key else None
    cls: type[Provider] = OpenAIProvider
    if settings.provider == "gemini":
        from kosmos.llm.gemini import GeminiProvider

        cls = GeminiProvider
    return cls(
        http,
        model=settings.model,
        temperature=settings.temperature,
        max_tokens=settings.max_tokens,
        api_key=api_key,
        capabilities=Capabilities(**settings.capabilities()),
    )
