"""`kosmos skills list` and `kosmos skills show NAME`."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from kosmos.config import Settings
from kosmos.engine.guard import visible
from kosmos.errors import SkillNotFound
from kosmos.frontends.run import skill_library
from kosmos.skills.model import Skill


def _library(settings: Settings, extra: Sequence[Path]):  # noqa: ANN202 - SkillLibrary
    return skill_library(settings, extra, dict(os.environ), Path.home())


def list_skills(settings: Settings, extra: Sequence[Path], host: str | None) -> int:
    library = _library(settings, extra)
    skills = library.list()
    rows = [(s.name, s.summary, s.source) for s in skills]
    if host:
        from kosmos.frontends.remote import remote_skill_rows

        rows += remote_skill_rows(host, settings)
    # Names and descriptions come from files: drawn with their control characters visible.
    rows = [tuple(visible(cell, one_line=True) for cell in row) for row in rows]
    if not rows:
        print("no skills found")
    width = max((len(name) for name, _, _ in rows), default=0)
    for name, description, source in rows:
        text = description if len(description) <= 70 else description[:69] + "…"
        print(f"{name.ljust(width)}  {text}  [{source}]")
    for problem in [*library.errors, *(w for s in skills for w in s.warnings)]:
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
        if not host or host == "local":
            raise
        from kosmos.frontends.remote import remote_skill

        skill = remote_skill(host, name, settings)
    for problem in skill.warnings:
        print(f"warning: {visible(problem)}", file=sys.stderr)
    print(visible(describe(skill)))
    return 0
