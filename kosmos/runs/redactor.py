"""The redactor every run, chat and host session starts with."""

from __future__ import annotations

from collections.abc import Mapping

from kosmos.config import Settings
from kosmos.safety import Redactor


def run_redactor(settings: Settings, env: Mapping[str, str]) -> Redactor:
    """Masks every secret kosmos knows of in what it shows, stores or sends: the API keys (the
    run's and each provider's), what the chat's HTTP tools send, and the environment's
    key-like values; a run feeds it more as they appear (a sudo password)."""
    return Redactor(settings.secrets(), env=env)
