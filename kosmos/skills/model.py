"""A skill as kosmos uses it: the SKILL.md frontmatter as typed fields, plus its body."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

HistoryMode = Literal["full", "last_n", "system_only"]
StepProtocol = Literal["tags", "json", "tools", "auto"]

PARAM_NAME = re.compile(r"^[A-Za-z0-9_-]+$")

# Frontmatter keys kosmos understands; any other key is kept in `Skill.extra`.
FRONTMATTER_KEYS = (
    "name",
    "description",
    "params",
    "history_mode",
    "history_max",
    "timeout",
    "protocol",
    "triggers",
)


def rule(message: str, field: str | None = None) -> PydanticCustomError:
    """A rule broken in a validator; `field` lets the loader point at that key's line."""
    return PydanticCustomError("skill_rule", message, {"field": field} if field else {})


def _scalar_text(value: Any) -> Any:
    """YAML turns `default: 8080` into an int and `yes` into True; parameters are text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return value


class Param(BaseModel):
    """One declared skill parameter. Unknown keys (e.g. `type`, `example`) are kept as extras."""

    model_config = ConfigDict(extra="allow", frozen=True)

    name: str
    description: str = ""
    required: bool = False
    default: str | None = None
    max_length: int | None = Field(None, ge=1)
    choices: list[str] | None = Field(None, min_length=1)

    @field_validator("name", "description", "default", mode="before")
    @classmethod
    def _text(cls, value: Any) -> Any:
        return _scalar_text(value)

    @field_validator("description", mode="before")
    @classmethod
    def _no_description(cls, value: Any) -> Any:
        return "" if value is None else value

    @field_validator("choices", mode="before")
    @classmethod
    def _choices_text(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [_scalar_text(v) for v in value]
        return value

    @field_validator("name")
    @classmethod
    def _name_shape(cls, value: str) -> str:
        if not PARAM_NAME.match(value):
            raise rule(f"param name {value!r} may use only letters, digits, '_' and '-'")
        return value

    @model_validator(mode="after")
    def _default_fits(self) -> Param:
        if self.default is None:
            return self
        if self.choices is not None and self.default not in self.choices:
            raise rule(
                f"param '{self.name}': default {self.default!r} is not one of its choices "
                f"({', '.join(self.choices)}); make the default one of them",
                "default",
            )
        if self.max_length is not None and len(self.default) > self.max_length:
            raise rule(
                f"param '{self.name}': default is {len(self.default)} characters long but "
                f"max_length is {self.max_length}; shorten the default or raise max_length",
                "default",
            )
        return self


class Skill(BaseModel):
    """A loaded skill: frontmatter fields, the Markdown body for the LLM, and where it came from.

    `ref` is the folder path relative to the root it was found in (`win/git-quick-commit`), empty
    for a skill loaded from an explicit path; `extra` keeps frontmatter keys kosmos does not use
    (Agent Skills' `license`, `allowed-tools`, `metadata`, `compatibility`, ...).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    description: str = ""
    params: list[Param] = Field(default_factory=list)
    history_mode: HistoryMode = "full"
    history_max: int | None = Field(None, ge=1)
    timeout: float | None = Field(None, gt=0)
    protocol: StepProtocol | None = None
    # Phrases a user might say for this skill (kosmos-panel); `kosmos chat` matches on them.
    triggers: list[str] = Field(default_factory=list)
    body: str
    path: str
    source: str
    ref: str = ""
    extra: dict[str, Any] = Field(default_factory=dict)
    # What the loader noticed and tolerated (file:line, what it did, how to fix it).
    warnings: tuple[str, ...] = ()
    # sha256 of the SKILL.md's text (line ends and BOM normalised): a run records it, so that a
    # fleet replaying a canary knows it runs the very skill the canary ran.
    sha256: str = ""

    @field_validator("name", "description", mode="before")
    @classmethod
    def _text(cls, value: Any) -> Any:
        return _scalar_text(value)

    @field_validator("description", mode="before")
    @classmethod
    def _no_description(cls, value: Any) -> Any:
        return "" if value is None else value

    @field_validator("history_mode", mode="before")
    @classmethod
    def _default_mode(cls, value: Any) -> Any:
        return "full" if value is None else value

    @field_validator("triggers", mode="before")
    @classmethod
    def _phrases(cls, value: Any) -> Any:
        # One phrase, or kosmos-panel's flat `triggers: a, b` line, or a YAML list.
        if value is None:
            return []
        if isinstance(value, str):
            value = value.strip().removeprefix("[").removesuffix("]").split(",")
        if isinstance(value, list):
            phrases = [_scalar_text(v) for v in value]
            return [p.strip().strip("'\"").strip() if isinstance(p, str) else p for p in phrases]
        return value

    @field_validator("triggers")
    @classmethod
    def _no_blank_phrases(cls, value: list[str]) -> list[str]:
        return [p for p in value if p]

    @field_validator("params", mode="before")
    @classmethod
    def _no_params(cls, value: Any) -> Any:
        return [] if value is None else value

    @field_validator("name")
    @classmethod
    def _one_line(cls, value: str) -> str:
        value = value.strip()
        if not value or "\n" in value:
            raise rule("name must be one non-empty line of text")
        return value

    @field_validator("params")
    @classmethod
    def _unique(cls, params: list[Param]) -> list[Param]:
        seen: set[str] = set()
        for param in params:
            if param.name in seen:
                raise rule(
                    f"duplicate param '{param.name}'; each param needs its own name",
                    f"{len(seen)}.name",
                )
            seen.add(param.name)
        return params

    @property
    def summary(self) -> str:
        """The description on one line (a `description: |` block runs over several)."""
        return " ".join(self.description.split())

    def param(self, name: str) -> Param | None:
        """The declared param of that name, if any."""
        return next((p for p in self.params if p.name == name), None)
