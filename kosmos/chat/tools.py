"""The chat's tools (HTTP services from config, and skills) and the `[valid]` step."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from kosmos.chat.catalog import Catalog
from kosmos.config_chat import HttpToolSettings
from kosmos.skills.model import Skill


@dataclass(frozen=True)
class ToolParam:
    """A parameter as the chat validates it; `too_long` and `ready` are catalog keys."""

    name: str
    description: str = ""
    required: bool = True
    max_length: int | None = None
    choices: tuple[str, ...] | None = None
    default: str | None = None
    too_long: str = "too_long"
    ready: str = "ready"


@dataclass(frozen=True)
class Tool:
    """Something the chat can run: an HTTP service or a skill."""

    name: str
    description: str
    kind: Literal["http", "skill"]
    params: tuple[ToolParam, ...] = ()
    http: HttpToolSettings | None = None
    skill: Skill | None = None
    # What users say when they want this skill (SKILL.md `triggers:`).
    triggers: tuple[str, ...] = ()

    def describe(self) -> str:
        """The tool as the classification and selection prompts list it."""
        lines = [f"- {self.name}: {' '.join(self.description.split())}"]
        if self.triggers:
            phrases = ", ".join(f'"{" ".join(t.split())}"' for t in self.triggers)
            lines.append(f"  asked for as: {phrases}")
        for p in self.params:
            notes = ["required" if p.required else "optional"]
            if p.max_length:
                notes.append(f"at most {p.max_length} characters")
            if p.choices:
                notes.append(f"one of {', '.join(p.choices)}")
            about = f": {' '.join(p.description.split())}" if p.description else ""
            lines.append(f"  param {p.name} ({', '.join(notes)}){about}")
        return "\n".join(lines)


def http_tool(settings: HttpToolSettings) -> Tool:
    params = tuple(
        ToolParam(
            name=p.name,
            description=p.description,
            required=p.required,
            max_length=p.max_length,
            too_long=p.too_long,
            ready=p.ready,
        )
        for p in settings.params
    )
    return Tool(settings.name, settings.description, "http", params, http=settings)


def skill_tool(skill: Skill) -> Tool:
    params = tuple(
        ToolParam(
            name=p.name,
            description=p.description,
            required=p.required,
            max_length=p.max_length,
            choices=tuple(p.choices) if p.choices else None,
            default=p.default,
        )
        for p in skill.params
    )
    return Tool(
        skill.name,
        skill.summary or skill.name,
        "skill",
        params,
        skill=skill,
        triggers=tuple(skill.triggers),
    )


def build_tools(http: Iterable[HttpToolSettings], skills: Iterable[Skill]) -> list[Tool]:
    """HTTP tools first; a skill with the name of an HTTP tool is left out."""
    tools = [http_tool(t) for t in http]
    names = {t.name for t in tools}
    for skill in skills:
        if skill.name not in names:
            names.add(skill.name)
            tools.append(skill_tool(skill))
    return tools


def format_params(params: Mapping[str, object], catalog: Catalog) -> str:
    if not params:
        return catalog("no_params")
    return ", ".join(f'{k}="{v}"' if v is not None else f"{k}=null" for k, v in params.items())


@dataclass(frozen=True)
class Validation:
    """The validation step's outcome: what to say, what to log, and the params to run with."""

    ok: bool
    say: str
    log: str
    params: dict[str, str]
    # Shown after `say` but kept out of the conversation: what `say` leaves out (a limit).
    note: str = ""


def validate(
    tool: Tool | None, name: str, given: Mapping[str, str | None], catalog: Catalog
) -> Validation:
    """The `[valid]` step: missing, empty, too long (or not one of the choices), per parameter."""
    if tool is None:
        return Validation(False, catalog("unknown_tool"), f"Unknown tool: {name}", {})
    params: dict[str, str] = {}
    for p in tool.params:
        where = f"{tool.name}::{p.name}"
        value = given.get(p.name)
        if value is None or not value.strip():
            if p.default is not None:
                params[p.name] = p.default
                continue
            if not p.required:
                continue
            kind = "Missing" if value is None else "Empty"
            return Validation(False, catalog("unclear"), f"{kind} Param: {where}", {})
        value = value.strip()
        if p.max_length is not None and len(value) > p.max_length:
            text = catalog(p.too_long, param=p.name, max=p.max_length)
            # A tool's own message may not say the limit: it is said after it.
            note = (
                ""
                if str(p.max_length) in text
                else catalog("limit", max=p.max_length, got=len(value))
            )
            return Validation(False, text, f"Too Long Param: {where}", {}, note)
        if p.choices is not None and value not in p.choices:
            text = catalog("bad_choice", param=p.name, choices=", ".join(p.choices))
            return Validation(False, text, f"Bad Choice Param: {where}", {})
        params[p.name] = value
    if tool.kind == "skill" and not tool.params:
        # A skill that declares no params takes free-form ones (kosmos-panel skills).
        params = {k: v.strip() for k, v in given.items() if v and v.strip()}
    return Validation(True, ready_text(tool, params, catalog), "Validation OK", params)


def ready_text(tool: Tool, params: Mapping[str, str], catalog: Catalog) -> str:
    """`Tool X is checked and ready`, naming the one value worth naming (Query:, Theme:)."""
    named = [p for p in tool.params if p.ready != "ready" and p.name in params]
    if len(named) == 1:
        return catalog(named[0].ready, tool=tool.name, value=params[named[0].name])
    return catalog("ready", tool=tool.name, params=format_params(params, catalog))
