"""Per-provider base URL, key, model and capabilities, resolved flags > env > file > defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from kosmos.config import load_settings
from kosmos.errors import ConfigError


def settings(tmp_path: Path, yaml: str = "", env: dict | None = None, **flags: object):
    if yaml:
        (tmp_path / "kosmos.yaml").write_text(yaml)
    return load_settings(flags, env=env or {}, cwd=tmp_path, home=tmp_path / "home")


def test_gemini_defaults_to_google_and_its_own_model(tmp_path: Path) -> None:
    s = settings(tmp_path, provider="gemini")
    assert s.base_url == "https://generativelanguage.googleapis.com/v1beta"
    assert s.model == "gemini-2.0-flash"
    assert s.protocol == "tags"


def test_openai_env_url_does_not_leak_into_gemini(tmp_path: Path) -> None:
    env = {"AI_KOSMOS_MODEL_BASE_URL": "http://local:3002/v1", "GEMINI_API_KEY": "g-key"}
    s = settings(tmp_path, env=env, provider="gemini")
    assert s.base_url.startswith("https://generativelanguage")
    assert s.api_key is not None and s.api_key.get_secret_value() == "g-key"
    s = settings(tmp_path, env={**env, "GEMINI_BASE_URL": "http://proxy/v1beta"}, provider="gemini")
    assert s.base_url == "http://proxy/v1beta"


def test_provider_sections_give_each_its_url_key_and_model(tmp_path: Path) -> None:
    yaml = (
        "provider: gemini\n"
        "providers:\n"
        "  openai: {base_url: 'http://ollama:11434/v1', model: 'qwen2.5:7b'}\n"
        "  gemini: {base_url: 'http://g/v1beta', api_key: 'g-file', model: 'gemini-pro'}\n"
    )
    s = settings(tmp_path, yaml)
    assert (s.provider, s.base_url, s.model) == ("gemini", "http://g/v1beta", "gemini-pro")
    assert s.api_key is not None and s.api_key.get_secret_value() == "g-file"
    s = settings(tmp_path, yaml, provider="openai")
    assert (s.base_url, s.model, s.api_key) == ("http://ollama:11434/v1", "qwen2.5:7b", None)
    # A flag still wins over the section.
    s = settings(tmp_path, yaml, base_url="http://flag/v1beta")
    assert s.base_url == "http://flag/v1beta"


def test_capabilities_per_provider_and_model(tmp_path: Path) -> None:
    yaml = (
        "model: small\n"
        "providers:\n"
        "  openai:\n"
        "    capabilities: {json_schema: false}\n"
        "    models: {small: {tools: false}}\n"
    )
    assert settings(tmp_path, yaml).capabilities() == {
        "json_schema": False,
        "tools": False,
        "json_mode": True,
    }
    assert settings(tmp_path, yaml, model="big").capabilities() == {
        "json_schema": False,
        "tools": True,
        "json_mode": True,
    }


def test_protocol_from_file_and_flag(tmp_path: Path) -> None:
    assert settings(tmp_path, "protocol: json\n").protocol == "json"
    assert settings(tmp_path, "protocol: json\n", protocol="tools").protocol == "tools"


@pytest.mark.parametrize(
    ("yaml", "expected"),
    [
        ("protocol: xml\n", "protocol: 'xml' is not allowed; allowed: tags, json, tools or auto"),
        ("providers: {claude: {}}\n", "providers.claude"),
        (
            "providers: {openai: {capabilities: {vision: true}}}\n",
            "unknown key 'providers.openai.capabilities.vision'; allowed keys: json_schema, tools, "
            "json_mode",
        ),
        ("providers: {openai: {modle: x}}\n", "allowed keys: base_url, api_key, model,"),
        ("hosts: {db1: {polcy: read-only}}\n", "allowed keys: policy"),
        (
            'chat: {tools: [{name: a, description: b, base_url: "http://x", path: /, bogus: 1}]}\n',
            "allowed keys: name, description,",
        ),
    ],
)
def test_bad_provider_config_is_one_clear_line(tmp_path: Path, yaml: str, expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        settings(tmp_path, yaml)
    assert expected in str(info.value)
    assert "\n" not in str(info.value)


def test_top_level_keys_belong_to_the_files_provider(tmp_path: Path) -> None:
    yaml = "base_url: http://ollama:11434/v1\nmodel: qwen2.5:7b\napi_key: sk-local\n"
    s = settings(tmp_path, yaml)
    assert (s.provider, s.base_url, s.model) == ("openai", "http://ollama:11434/v1", "qwen2.5:7b")
    # --provider gemini does not send Gemini requests (or the key) to the Ollama server.
    s = settings(tmp_path, yaml, provider="gemini")
    assert s.base_url == "https://generativelanguage.googleapis.com/v1beta"
    assert (s.model, s.api_key) == ("gemini-2.0-flash", None)
