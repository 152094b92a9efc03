"""Settings, resolved once at the edge: flags > environment > config files > defaults."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, get_args
from urllib.parse import urlsplit

import msgspec
import yaml
from msgspec import Meta, Struct
from msgspec.structs import replace

from kosmos.config_keys import KEY_SOURCES, key_from, read_key_file
from kosmos.config_layers import (
    Key,
    Origin,
    file_of,
    file_url_source,
    forget,
    given_files,
    provider_section,
    read_layers,
)
from kosmos.config_words import invalid, struct_fields, unknown_key
from kosmos.errors import ConfigError, validation_problem
from kosmos.memory import DEFAULT_FOLDER

if TYPE_CHECKING:
    from kosmos.config_chat import ChatSettings

DEFAULT_BASE_URL = "http://localhost:3002/v1"
DEFAULT_MODEL = "CHEAP"

# Environment variables a user may set (the first two are kosmos-panel's names).
ENV_BASE_URL = "AI_KOSMOS_MODEL_BASE_URL"
ENV_MODEL = "AI_MODEL"
# The seal key (kosmos.seal), given as CI secrets are: a variable, or a file it names.
ENV_SEAL_KEY = "KOSMOS_SEAL_KEY"
ENV_SEAL_KEY_FILE = "KOSMOS_SEAL_KEY_FILE"
ENV_API_KEYS = {
    "openai": ("KOSMOS_API_KEY", "OPENAI_API_KEY"),
    "gemini": ("KOSMOS_API_KEY", "GEMINI_API_KEY"),
}
# The base URL each provider reads from the environment, first found wins: kosmos-panel's
# name, then the one OpenAI's own clients read.
ENV_BASE_URLS = {"openai": (ENV_BASE_URL, "OPENAI_BASE_URL"), "gemini": ("GEMINI_BASE_URL",)}
PROVIDER_DEFAULTS = {
    "openai": {"base_url": DEFAULT_BASE_URL, "model": DEFAULT_MODEL},
    "gemini": {
        "base_url": "https://generativelanguage.googleapis.com/v1beta",
        "model": "gemini-2.0-flash",
    },
}

ProviderName = Literal["openai", "gemini"]
ProtocolName = Literal["tags", "json", "tools", "auto"]


def url_problem(value: str) -> str | None:
    """What keeps `value` from being an LLM server's base URL, or None when it is one."""
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError as e:
        return f"{value!r} is not a URL ({e})"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"{value!r} is not an http(s) URL"
    return None


class Secret:
    """A secret setting (an API key): never shown by repr or str, read by get_secret_value()."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def get_secret_value(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('**********')"

    def __str__(self) -> str:
        return "**********"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


Positive = Annotated[float, Meta(gt=0)]
Name = Annotated[str, Meta(min_length=1)]


class _Section(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A settings section: typed, frozen, and no key it does not know."""


class CapabilitySettings(_Section, frozen=True, kw_only=True):
    """What a provider (or one of its models) can do; unset keys keep the provider's default."""

    json_schema: bool | None = None
    tools: bool | None = None
    json_mode: bool | None = None


class ProviderSettings(_Section, frozen=True, kw_only=True):
    """The `providers.<name>` section: that provider's endpoint, key, model and capabilities."""

    base_url: str | None = None
    api_key: Secret | None = None
    model: Name | None = None
    api_key_file: Path | None = None
    api_key_command: str | None = None
    capabilities: CapabilitySettings = CapabilitySettings()
    # Per model name: capabilities that differ from the provider's.
    models: dict[str, CapabilitySettings] = {}


class HostSettings(_Section, frozen=True, kw_only=True):
    """Per-host settings from the `hosts:` section of the config file."""

    policy: Literal["ask", "read-only", "auto", "locked"] | None = None
    # The kernel lock around commands that run unasked: `required` runs nothing unasked where
    # it cannot be had; `lock_ports` are the TCP ports a locked command may connect to.
    lock: Literal["required", "optional"] = "optional"
    lock_ports: tuple[Annotated[int, Meta(ge=1, le=65535)], ...] | None = None


class Settings(_Section, frozen=True, kw_only=True, dict=True):
    """Everything a run needs to know, frozen once resolved (`check_settings` validates a
    mapping into one; the constructor trusts its caller, as kosmos's own code is typed)."""

    provider: ProviderName = "openai"
    protocol: ProtocolName = "tags"
    providers: dict[ProviderName, ProviderSettings] = {}
    # Checked where it is read: a typo fails at once with the file and key, not at the first
    # request.
    base_url: str = DEFAULT_BASE_URL
    # The config file key that set base_url (`base_url in ./kosmos.yaml`), for the hints of
    # LLM errors; None when a flag, the environment or the default did. Never read from a file.
    base_url_from: str | None = None
    model: Name = DEFAULT_MODEL
    api_key: Secret | None = None
    # The key from a file, or from what a command prints (kosmos.config_keys); resolved into
    # api_key at start, for the provider in use.
    api_key_file: Path | None = None
    api_key_command: str | None = None
    # The environment variable the key came from; None when a file, a command or the config
    # did. Never read from a file.
    api_key_from: str | None = None
    temperature: Annotated[float, Meta(ge=0, le=2)] = 0.3
    max_tokens: Annotated[int, Meta(ge=1)] = 512
    llm_timeout: Positive = 30.0
    llm_connect_timeout: Positive = 5.0
    llm_retries: Annotated[int, Meta(ge=0, le=10)] = 2
    knowledge_timeout: Positive = 5.0
    remote_skill_timeout: Positive = 5.0
    connect_timeout: Positive = 10.0
    max_steps: Annotated[int, Meta(ge=1, le=10000)] = 100
    command_timeout: Positive = 60.0
    skills_dirs: tuple[Path, ...] = ()
    transcript_dir: Path | None = None
    prompts_file: Path | None = None
    hosts: dict[str, HostSettings] = {}
    # The `chat:` section as written; checked when a file is read, modelled when the chat asks
    # (a run that is not a chat never loads the chat's settings).
    chat: dict[str, Any] = {}
    # --memory: the memory prompt. Notes live in memory_dir (relative: to the working
    # directory; kosmos-panel's ./.kosmos-panel/memory when unset).
    memory: bool = False
    memory_dir: Path | None = None
    # The key that signs the seals of transcripts and fleet.json (kosmos.seal): from
    # KOSMOS_SEAL_KEY, or read from the file seal_key_file (or KOSMOS_SEAL_KEY_FILE) names.
    seal_key: Secret | None = None
    seal_key_file: Path | None = None

    @cached_property
    def chat_settings(self) -> ChatSettings:
        from kosmos.config_chat import ChatSettings

        return ChatSettings.model_validate(self.chat)

    def host(self, target: str) -> tuple[str, HostSettings] | None:
        """The `hosts:` entry for `target`: as typed, then without the user, then without the
        port too; with the name it was found under."""
        bare = target.split("@", 1)[-1]
        for name in dict.fromkeys((target, bare, bare.rsplit(":", 1)[0])):
            found = self.hosts.get(name)
            if found is not None:
                return name, found
        return None

    def secrets(self) -> list[str]:
        """Every secret these settings hold: the API keys (the run's and each provider's) and
        what the chat's HTTP tools send (secret-named body values, a password in a URL)."""
        from urllib.parse import urlsplit

        from kosmos.safety.secret_patterns import SECRET_KEY

        found = [self.api_key, self.seal_key] + [p.api_key for p in self.providers.values()]
        values = [s.get_secret_value() for s in found if s is not None]
        tools = self.chat.get("tools") if isinstance(self.chat, dict) else None
        for tool in tools if isinstance(tools, list) else []:
            if not isinstance(tool, dict):
                continue
            body = tool.get("body")
            for key, value in body.items() if isinstance(body, dict) else ():
                if isinstance(value, str) and SECRET_KEY.fullmatch(str(key)):
                    values.append(value)
            url = tool.get("base_url")
            password = urlsplit(url).password if isinstance(url, str) else None
            if password:
                values.append(password)
        return [v for v in values if v.strip()]

    def capabilities(self) -> dict[str, bool]:
        """The active provider's capabilities for the active model, config over defaults."""
        caps = {"json_schema": True, "tools": True, "json_mode": True}
        section = self.providers.get(self.provider)
        if section is not None:
            for layer in (section.capabilities, section.models.get(self.model)):
                if layer is not None:
                    caps.update(
                        {k: v for k, v in msgspec.structs.asdict(layer).items() if v is not None}
                    )
        return caps


# Keys a config file may hold: every field of Settings but what kosmos derives itself.
FILE_KEYS = tuple(
    k for k in Settings.__struct_fields__ if k not in ("base_url_from", "api_key_from")
)


def config_paths(cwd: Path, env: Mapping[str, str], home: Path) -> list[Path]:
    """Config files in increasing priority: the user's, then the project's `./kosmos.yaml`."""
    xdg = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"
    return [xdg / "kosmos" / "config.yaml", cwd / "kosmos.yaml"]


def state_dir(env: Mapping[str, str], home: Path) -> Path:
    xdg = Path(env["XDG_STATE_HOME"]) if env.get("XDG_STATE_HOME") else home / ".local" / "state"
    return xdg / "kosmos"


def user_config_dir(env: Mapping[str, str], home: Path) -> Path:
    xdg = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"
    return xdg / "kosmos"


def _typed(kind: type, value: Any) -> Any:
    """msgspec's hook for the types it does not know: paths and secrets, from text."""
    if kind is Path and isinstance(value, str | Path):
        return Path(value)
    if kind is Secret and isinstance(value, str | Secret):
        return value if isinstance(value, Secret) else Secret(value)
    what = "a path" if kind is Path else "a string"
    raise ValueError(f"Expected {what}, got {type(value).__name__}")


# Mappings of names to sections, checked entry by entry so that an error names its entry,
# with the names such a mapping allows (None: any).
_ENTRIES: dict[type[Struct], dict[str, tuple[type[Struct], tuple[str, ...] | None]]] = {
    Settings: {
        "providers": (ProviderSettings, get_args(ProviderName)),
        "hosts": (HostSettings, None),
    },
    ProviderSettings: {"models": (CapabilitySettings, None)},
}


def _checked(data: Any, model: type[Struct], source: str, loc: tuple[Any, ...] = ()) -> Any:
    """`data` (a mapping from a file, the environment and flags) as a `model`, or a
    ConfigError naming `source`, the key and what it allows."""
    if isinstance(data, dict):
        for key, (inner, names) in _ENTRIES.get(model, {}).items():
            entries = data.get(key)
            for name, entry in entries.items() if isinstance(entries, dict) else ():
                if names is not None and name not in names:
                    message = f"{name!r} is not one of {', '.join(names)}"
                    raise invalid(source, (*loc, key, name), message)
                _checked(entry, inner, source, (*loc, key, name))
    try:
        value = msgspec.convert(data, model, strict=False, dec_hook=_typed)
    except msgspec.ValidationError as e:
        message, path = validation_problem(e)
        unknown = re.fullmatch(r"Object contains unknown field `(.*)`", message)
        if unknown:
            where = (*loc, *path, unknown[1])
            raise unknown_key(source, where, len(loc), model, struct_fields) from None
        message = re.sub(r"Invalid enum value (.*)", r"\1 is not allowed", message)
        raise invalid(source, (*loc, *path), message.replace("`", "")) from None
    url = getattr(value, "base_url", None)
    problem = url_problem(url) if isinstance(url, str) else None
    if problem is not None:
        raise invalid(source, (*loc, "base_url"), problem)
    return value


def check_settings(data: Mapping[str, Any], source: str = "settings") -> Settings:
    """A mapping of settings validated into Settings; ConfigError (one line) if it is not one."""
    settings: Settings = _checked(dict(data), Settings, source)
    return settings


def read_config_file(path: Path) -> dict[str, Any]:
    """Read one YAML config file into a mapping, with a one-line error naming the file."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ConfigError(f"{path}: cannot read config file: {e.strerror}") from e
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise ConfigError(f"{where}: not valid YAML: {problem}") from e
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(
            f"{path}: expected a mapping of settings (key: value), got {type(data).__name__}"
        )
    for key in data:
        if key not in FILE_KEYS:
            raise ConfigError(f"{path}: unknown key '{key}'; allowed keys: {', '.join(FILE_KEYS)}")
    check_settings(data, str(path))
    if data.get("chat"):
        from kosmos.config_chat import ChatSettings, chat_fields, chat_problem

        problem = chat_problem(data["chat"])
        if problem is not None:
            message, loc, unknown = problem
            if unknown:
                raise unknown_key(str(path), ("chat", *loc), 1, ChatSettings, chat_fields)
            raise invalid(str(path), ("chat", *loc), message)
    return data


def load_settings(
    flags: Mapping[str, Any] | None = None,
    *,
    env: Mapping[str, str],
    cwd: Path,
    home: Path,
    configs: Sequence[Path] = (),
    resolve_key: bool = True,
    origins: dict[Key, Origin] | None = None,
) -> Settings:
    """Layer defaults < the user's and the project's config files < each of `configs` (the
    `--config` files, in order) < environment < flags into one frozen Settings.

    `flags` holds only the options the user actually gave (None values are ignored).
    `resolve_key`: read api_key_file or run api_key_command (a command that talks to no LLM
    need not). `origins`, when given, receives where each value came from (absent: default).
    """
    origins = {} if origins is None else origins
    paths = [path for path in config_paths(cwd, env, home) if path.is_file()]
    merged = read_layers([*paths, *given_files(configs)], read_config_file, origins)

    provider = (flags or {}).get("provider") or merged.get("provider") or "openai"
    url_from = file_url_source(merged, origins, provider)
    provider_section(merged, provider, origins, PROVIDER_DEFAULTS)
    from_env: dict[str, Any] = {}
    for url_env in ENV_BASE_URLS.get(provider, ()):
        if env.get(url_env):
            from_env["base_url"] = env[url_env]
            url_from = url_env
            origins[("base_url",)] = f"env {url_env}"
            break
    if env.get(ENV_MODEL):
        from_env["model"] = env[ENV_MODEL]
        origins[("model",)] = f"env {ENV_MODEL}"
    key_from = None
    for name in ENV_API_KEYS.get(provider, ()):
        if env.get(name):
            from_env["api_key"] = env[name]
            key_from = name
            origins[("api_key",)] = f"env {name}"
            for key in KEY_SOURCES[1:]:  # the environment wins: nothing else is run or read
                merged.pop(key, None)
                forget(origins, (key,))
            break
    given = [key for key in KEY_SOURCES if merged.get(key) is not None and key not in from_env]
    if len(given) > 1:
        where = file_of(origins, (given[0],)) or "the config file"
        raise ConfigError(
            f"{' and '.join(given)} in {where}: the API key comes from one of them; keep one"
        )
    if "seal_key" in merged:
        raise ConfigError(
            f"seal_key in {file_of(origins, ('seal_key',)) or 'a config file'}: a key is not "
            "kept in a config file; set KOSMOS_SEAL_KEY, or name a file with seal_key_file"
        )
    for name, key in ((ENV_SEAL_KEY_FILE, "seal_key_file"), (ENV_SEAL_KEY, "seal_key")):
        if env.get(name):
            from_env[key] = env[name]
            origins[(key,)] = f"env {name}"
    merged.update(from_env)
    for key, value in (flags or {}).items():
        if value is not None:
            merged[key] = value
            origins[(key,)] = f"--{key.replace('_', '-')}"
    if (flags or {}).get("base_url") is not None:
        url_from = "--base-url"
    if url_from is not None and url_from in ("--base-url", url_env):
        problem = url_problem(str(merged["base_url"]))
        if problem is not None:
            raise ConfigError(f"{url_from}: {problem}; give one such as http://localhost:11434/v1")
    # The default hints already name the flag and the variable; only a file needs naming.
    merged["base_url_from"] = url_from if url_from not in ("--base-url", url_env) else None
    merged["api_key_from"] = key_from

    for key in ("skills_dirs",):
        if key in merged and isinstance(merged[key], str | Path):
            merged[key] = [merged[key]]
    settings = check_settings(merged)
    if settings.transcript_dir is None:
        settings = replace(settings, transcript_dir=state_dir(env, home) / "runs")
    memory_dir = (settings.memory_dir or DEFAULT_FOLDER).expanduser()
    settings = replace(settings, memory_dir=cwd / memory_dir)
    if settings.seal_key is None and settings.seal_key_file is not None:
        settings = replace(settings, seal_key=_read_seal_key(settings.seal_key_file.expanduser()))
    if resolve_key:
        settings = _resolved_key(settings, env, cwd, origins)
    return settings


def _resolved_key(
    settings: Settings, env: Mapping[str, str], cwd: Path, origins: dict[Key, Origin]
) -> Settings:
    """Settings whose api_key is read from api_key_file or printed by api_key_command."""
    if settings.api_key is not None:
        return settings
    section = settings.providers.get(settings.provider)
    in_section = section is not None and any(
        getattr(section, key) is not None for key in KEY_SOURCES
    )
    if in_section:
        prefix = f"providers.{settings.provider}."
        source = file_of(origins, *((("providers", settings.provider, k)) for k in KEY_SOURCES))
    else:
        prefix, source = "", file_of(origins, ("api_key_file",), ("api_key_command",))
    key = key_from(
        settings.api_key_file, settings.api_key_command, prefix, source, env=env, cwd=cwd
    )
    return settings if key is None else replace(settings, api_key=Secret(key))


def _read_seal_key(path: Path) -> Secret:
    """The seal key from its file; ConfigError naming the file otherwise."""
    return Secret(read_key_file(path, "seal_key_file", what="the seal key"))
