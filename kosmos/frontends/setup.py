"""What every front end resolves the same way before a run: session options, transcript path."""

from __future__ import annotations

from pathlib import Path

from kosmos.config import Settings
from kosmos.engine.session import SessionOptions
from kosmos.skills.model import Skill
from kosmos.transcript import default_path


def session_options(
    settings: Settings,
    skill: Skill,
    *,
    max_steps: int | None = None,
    command_timeout: float | None = None,
    prompt: str | None = None,
    non_interactive: bool = False,
    protocol: str | None = None,
) -> SessionOptions:
    """Flags (the keyword arguments) > the skill's frontmatter > settings."""
    return SessionOptions(
        max_steps=max_steps or settings.max_steps,
        command_timeout=command_timeout or skill.timeout or settings.command_timeout,
        knowledge_timeout=settings.knowledge_timeout,
        history_mode=skill.history_mode,
        history_max=skill.history_max,
        prompt=prompt,
        non_interactive=non_interactive,
        # --protocol > the skill's frontmatter > the config file > tags.
        protocol=protocol or skill.protocol or settings.protocol,
    )


def transcript_path(settings: Settings, skill: Skill, run_id: str, given: Path | None) -> Path:
    """`--transcript PATH` if given, else a fresh file in the settings' transcript folder."""
    if given is not None:
        return given
    assert settings.transcript_dir is not None
    return default_path(settings.transcript_dir, skill.name, run_id)
