"""`kosmos skills list` and `kosmos skills show NAME`."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TypeVar

from msgspec.structs import replace

from kosmos.config import Settings
from kosmos.engine.guard import visible
from kosmos.errors import SkillNotFound
from kosmos.hosts.runner import Runner
from kosmos.runs.skills import find_host_skill, host_label, host_skills, skill_library
from kosmos.skills.discovery import SkillLibrary
from kosmos.skills.model import Skill

T = TypeVar("T")


def _library(settings: Settings, extra: Sequence[Path]) -> SkillLibrary:
    return skill_library(settings, extra, dict(os.environ), Path.home())


def _on_host(host: str, settings: Settings, work: Callable[[Runner], Awaitable[T]]) -> T:
    """`work` on the connected host, which is closed after."""
    from kosmos.hosts.factory import make_runner

    async def connected() -> T:
        runner = make_runner(host, settings)
        try:
            await runner.connect()
            return await work(runner)
        finally:
            await runner.close()

    return asyncio.run(connected())


def list_skills(settings: Settings, extra: Sequence[Path], host: str | None) -> int:
    library = _library(settings, extra)
    skills = library.list()
    rows: list[tuple[str, ...]] = [(s.name, s.summary, s.source) for s in skills]
    problems = [*library.errors, *(w for s in skills for w in s.warnings)]
    if host:
        timeout = settings.remote_skill_timeout
        found = _on_host(host, settings, lambda runner: host_skills(runner, timeout=timeout))
        rows += [(s.name, s.summary, host_label(found.host)) for s in found.skills]
        problems += found.problems
    # Names and descriptions come from files: drawn with their control characters visible.
    rows = [tuple(visible(cell, one_line=True) for cell in row) for row in rows]
    if not rows:
        print("no skills found")
    width = max((len(name) for name, _, _ in rows), default=0)
    for name, description, source in rows:
        text = description if len(description) <= 70 else description[:69] + "…"
        print(f"{name.ljust(width)}  {text}  [{source}]")
    for problem in problems:
        print(f"warning: {visible(problem)}", file=sys.stderr)
    return 0


def describe(skill: Skill) -> str:
    lines = [
        f"{skill.name}: {skill.summary}".rstrip(": "),
        f"  from {skill.path} [{skill.source}]",
    ]
    if skill.params:
        lines.append("  params:")
        for p in skill.params:
            rules = []
            if p.required:
                rules.append("required")
            if p.default is not None:
                rules.append(f"default {p.default!r}")
            if p.choices:
                rules.append("one of " + ", ".join(p.choices))
            if p.max_length:
                rules.append(f"at most {p.max_length} characters")
            about = f" — {p.description}" if p.description else ""
            lines.append(f"    {p.name}{about} ({'; '.join(rules) or 'optional'})")
    if skill.history_mode != "full" or skill.history_max:
        lines.append(f"  history: {skill.history_mode}, max {skill.history_max or 'default'}")
    if skill.triggers:
        lines.append("  triggers: " + ", ".join(repr(t) for t in skill.triggers))
    if skill.timeout:
        lines.append(f"  command timeout: {skill.timeout:g} s")
    lines.append("")
    lines.append(skill.body)
    return "\n".join(lines)


def show_skill(name: str, settings: Settings, extra: Sequence[Path], host: str | None) -> int:
    library = _library(settings, extra)
    try:
        skill = library.find(name)
    except SkillNotFound:
        if not host:
            raise
        timeout = settings.remote_skill_timeout
        found = _on_host(
            host, settings, lambda runner: find_host_skill(runner, name, timeout=timeout)
        )
        skill = replace(found, source=host_label(host))
    for problem in skill.warnings:
        print(f"warning: {visible(problem)}", file=sys.stderr)
    print(visible(describe(skill)))
    return 0
