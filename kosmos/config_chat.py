"""The `chat:` section of the config: the chat's settings and its HTTP tools.

Beside `kosmos.config`, which checks the section when a file is read; the chat models it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

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


def chat_fields(kind: Any) -> dict[str, Any] | None:
    """A chat section's fields (name: annotation); None for what is not one."""
    if not (isinstance(kind, type) and issubclass(kind, BaseModel)):
        return None
    return {name: field.annotation for name, field in kind.model_fields.items()}


def chat_problem(data: Any) -> tuple[str, tuple[str | int, ...], bool] | None:
    """The first problem of a `chat:` section as written: what is wrong, where (a path into
    ChatSettings) and whether it is an unknown key; None when there is none."""
    try:
        ChatSettings.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        message = str(first["msg"]).removeprefix("Value error, ")
        return message, tuple(first["loc"]), first["type"] == "extra_forbidden"
    return None
