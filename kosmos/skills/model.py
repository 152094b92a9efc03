"""A skill as kosmos uses it: the SKILL.md frontmatter as typed fields, plus its body."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta, Struct
from msgspec.structs import replace

from kosmos.errors import validation_problem

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


class SkillRuleError(ValueError):
    """A rule of the skill format broken, at `loc` (a path into the frontmatter)."""

    def __init__(self, message: str, loc: tuple[str | int, ...] = ()) -> None:
        super().__init__(message)
        self.loc = loc


class SkillTypeError(ValueError):
    """A frontmatter value of the wrong type or shape, or a required key absent (MISSING)."""

    def __init__(self, message: str, loc: tuple[str | int, ...]) -> None:
        super().__init__(message)
        self.loc = loc


def _scalar_text(value: Any) -> Any:
    """YAML turns `default: 8080` into an int and `yes` into True; parameters are text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return value


class Param(Struct, frozen=True, kw_only=True):
    """One declared skill parameter. Unknown keys (e.g. `type`, `example`) are allowed."""

    name: str
    description: str = ""
    required: bool = False
    default: str | None = None
    max_length: Annotated[int, Meta(ge=1)] | None = None
    choices: Annotated[list[str], Meta(min_length=1)] | None = None


class Skill(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A loaded skill: frontmatter fields, the Markdown body for the LLM, and where it came from.

    `ref` is the folder path relative to the root it was found in (`win/git-quick-commit`), empty
    for a skill loaded from an explicit path; `extra` keeps frontmatter keys kosmos does not use
    (Agent Skills' `license`, `allowed-tools`, `metadata`, `compatibility`, ...).
    """

    name: Annotated[str, Meta(min_length=1)]
    description: str = ""
    params: list[Param] = []
    history_mode: HistoryMode = "full"
    history_max: Annotated[int, Meta(ge=1)] | None = None
    timeout: Annotated[float, Meta(gt=0)] | None = None
    protocol: StepProtocol | None = None
    # Phrases a user might say for this skill (kosmos-panel); `kosmos chat` matches on them.
    triggers: list[str] = []
    body: str
    path: str
    source: str
    ref: str = ""
    extra: dict[str, Any] = {}
    # What the loader noticed and tolerated (file:line, what it did, how to fix it).
    warnings: tuple[str, ...] = ()
    # sha256 of the SKILL.md's text (line ends and BOM normalised): a run records it, so that a
    # fleet replaying a canary knows it runs the very skill the canary ran.
    sha256: str = ""

    @property
    def summary(self) -> str:
        """The description on one line (a `description: |` block runs over several)."""
        return " ".join(self.description.split())

    def param(self, name: str) -> Param | None:
        """The declared param of that name, if any."""
        return next((p for p in self.params if p.name == name), None)


def _texts(data: dict[str, Any]) -> dict[str, Any]:
    """What YAML made of the text fields, as text: scalars as written, no description as ''."""
    out = dict(data)
    for key in ("name", "description", "default"):
        if key in out:
            out[key] = _scalar_text(out[key])
    if "description" in out and out["description"] is None:
        out["description"] = ""
    return out


def _param_data(value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    data = _texts(value)
    if isinstance(data.get("choices"), list):
        data["choices"] = [_scalar_text(v) for v in data["choices"]]
    return data


def _phrases(value: Any) -> Any:
    # One phrase, or kosmos-panel's flat `triggers: a, b` line, or a YAML list.
    if value is None:
        return []
    if isinstance(value, str):
        value = value.strip().removeprefix("[").removesuffix("]").split(",")
    if isinstance(value, list):
        phrases = [_scalar_text(v) for v in value]
        return [p.strip().strip("'\"").strip() if isinstance(p, str) else p for p in phrases]
    return value


def _converted(data: Any, kind: type[Any], at: tuple[str | int, ...]) -> Any:
    try:
        return msgspec.convert(data, kind, strict=False)
    except msgspec.ValidationError as e:
        message, path = validation_problem(e)
        raise SkillTypeError(message, (*at, *path)) from None


def check_param(data: Any, at: tuple[str | int, ...] = ()) -> Param:
    """One param of the frontmatter, checked (SkillTypeError, SkillRuleError)."""
    param: Param = _converted(_param_data(data), Param, at)
    if not PARAM_NAME.match(param.name):
        raise SkillRuleError(
            f"param name {param.name!r} may use only letters, digits, '_' and '-'", (*at, "name")
        )
    if param.default is None:
        return param
    if param.choices is not None and param.default not in param.choices:
        raise SkillRuleError(
            f"param '{param.name}': default {param.default!r} is not one of its choices "
            f"({', '.join(param.choices)}); make the default one of them",
            (*at, "default"),
        )
    if param.max_length is not None and len(param.default) > param.max_length:
        raise SkillRuleError(
            f"param '{param.name}': default is {len(param.default)} characters long but "
            f"max_length is {param.max_length}; shorten the default or raise max_length",
            (*at, "default"),
        )
    return param


def check_skill(fields: dict[str, Any]) -> Skill:
    """A skill from its frontmatter's fields and the loader's (body, path, source, ...),
    checked: SkillTypeError or SkillRuleError, each with the path of the key at fault."""
    data = _texts(fields)
    if data.get("history_mode", "") is None:
        data["history_mode"] = "full"
    if "triggers" in data:
        data["triggers"] = _phrases(data["triggers"])
    raw_params = data.pop("params", None)
    raw_params = [] if raw_params is None else raw_params
    if not isinstance(raw_params, list):
        raise SkillTypeError("Expected array", ("params",))
    params = [check_param(p, ("params", i)) for i, p in enumerate(raw_params)]
    skill: Skill = _converted(data, Skill, ())
    name = skill.name.strip()
    if not name or "\n" in name:
        raise SkillRuleError("name must be one non-empty line of text", ("name",))
    seen: set[str] = set()
    for param in params:
        if param.name in seen:
            raise SkillRuleError(
                f"duplicate param '{param.name}'; each param needs its own name",
                ("params", len(seen), "name"),
            )
        seen.add(param.name)
    return replace(skill, name=name, params=params, triggers=[p for p in skill.triggers if p])
