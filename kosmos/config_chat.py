"""The `chat:` section of the config: the chat's settings and its HTTP tools.

Beside `kosmos.config`, which checks the section when a file is read; the chat models it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from kosmos.errors import ConfigError

# The chat's defaults (docs/protocol.md, The chat).
EXIT_COMMANDS = ("/exit", "/quit", "/q", "exit", "quit", "q")
HELP_COMMANDS = ("/help", "help", "?")
DEFAULT_EMBEDDING_MODEL = "Embeddings"
CONTEXT_HIST_LIMIT = 10

Show = Literal["rag", "haiku", "fields"]


class ToolParamSettings(BaseModel):
    """One parameter of an HTTP tool: its limits and the catalog texts it is validated with."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_-]+$")
    description: str = ""
    required: bool = True
    max_length: int | None = Field(None, ge=1)
    # Catalog keys: the reply to a value that is too long, and the "ready to call" line.
    too_long: str = "too_long"
    ready: str = "ready"


class HttpToolTexts(BaseModel):
    """Catalog keys for what this tool says, and the names its log lines carry."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    failed: str = "tool_failed"
    # The function name the log lines of the call carry (e.g. answer_question).
    log_name: str | None = None
    # The label of an `error` field in the answer (e.g. Search error, Generation error).
    error_label: str = "Request error"


class HttpToolSettings(BaseModel):
    """An HTTP service the chat can call: health check, then one JSON request."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_-]+$")
    description: str = Field(min_length=1)
    base_url: str = Field(pattern=r"^https?://")
    health_path: str | None = "/health"
    path: str
    params: list[ToolParamSettings] = Field(default_factory=list)
    # Constant fields sent with every request (e.g. rag_search's top_k).
    body: dict[str, Any] = Field(default_factory=dict)
    show: Show = "fields"
    texts: HttpToolTexts = HttpToolTexts()
    timeout: float = Field(30, gt=0)

    @field_validator("path", "health_path")
    @classmethod
    def _slash(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith("/"):
            return "/" + value
        return value


class CatalogEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    en: str
    ru: str | None = None


class ChatSettings(BaseModel):
    """How `kosmos chat` behaves; the README lists every default."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    exit_commands: tuple[str, ...] = EXIT_COMMANDS
    help_commands: tuple[str, ...] = HELP_COMMANDS
    # None: the run's model (`model`, $AI_MODEL).
    default_model: str | None = None
    default_embedding_model: str = DEFAULT_EMBEDDING_MODEL
    context_hist_limit: int = Field(CONTEXT_HIST_LIMIT, ge=1)
    # Where /embeddings lives; unset: no pre-ranking, every tool goes to the selection prompt.
    embeddings_base_url: str | None = Field(None, pattern=r"^https?://")
    # How many tools pre-ranking keeps for the selection prompt.
    rank_top_k: int = Field(5, ge=1)
    tools: list[HttpToolSettings] = Field(default_factory=list)
    # Extra or replaced stdout texts: key -> {en, ru}.
    messages: dict[str, CatalogEntry] = Field(default_factory=dict)
    # Whether discovered skills are tools too.
    skills: bool = True

    @field_validator("tools")
    @classmethod
    def _unique(cls, tools: list[HttpToolSettings]) -> list[HttpToolSettings]:
        names = [t.name for t in tools]
        dup = next((n for n in names if names.count(n) > 1), None)
        if dup:
            raise ValueError(f"tool {dup!r} is defined twice; give each tool its own name")
        return tools


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The model an annotation holds: itself, or inside a dict, list, tuple or union."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    args = get_args(annotation)
    if get_origin(annotation) is dict:
        args = args[1:]
    return next((m for m in map(_model_in, args) if m is not None), None)


def _keys_at(loc: tuple[Any, ...], model: type[BaseModel]) -> tuple[str, ...]:
    """The keys allowed beside the last part of `loc` (a path into `model`)."""
    for part in loc[:-1]:
        if not isinstance(part, str) or part not in model.model_fields:
            continue  # a dict key or a list index: the model stays the same
        inner = _model_in(model.model_fields[part].annotation)
        if inner is None:
            break
        model = inner
    return tuple(model.model_fields)


def check_chat(data: Any, source: str, allowed: Mapping[str, str]) -> None:
    """The `chat:` section of the file `source`, checked; ConfigError (one line) if it is not
    one. `allowed` says what a key may be (the settings' table)."""
    try:
        ChatSettings.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        loc = "chat." + ".".join(str(p) for p in first["loc"])
        if first["type"] == "extra_forbidden":
            keys = ", ".join(_keys_at(tuple(first["loc"]), ChatSettings))
            raise ConfigError(f"{source}: unknown key '{loc}'; allowed keys: {keys}") from e
        last = str(first["loc"][-1]) if first["loc"] else ""
        field = last if last in allowed else "chat"
        message = str(first["msg"]).removeprefix("Value error, ")
        raise ConfigError(f"{source}: {loc}: {message}; allowed: {allowed[field]}") from e
