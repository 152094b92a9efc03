"""What the app hands its screens: the configuration it started with and the parts they share.

Screens take a `TuiParts` in their constructor instead of reaching for the app, so that the
app imports its screens and nothing imports the app back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from kosmos.config import Settings
from kosmos.fleet.orchestrator import DEFAULT_FORKS
from kosmos.fleet.targets import HostSpec
from kosmos.hosts.runner import HostPrompter, Runner
from kosmos.prompts import Prompts
from kosmos.safety import Redactor
from kosmos.skills.discovery import SkillLibrary
from kosmos.tui.pool import HostPool

# The chat's screen, by name: installed when the chat is first opened (the app imports
# kosmos.chat then, not at start).
CHAT_SCREEN = "chat"


@dataclass
class TuiConfig:
    """What the app starts with: settings, skills, the host list and the command-line choices."""

    settings: Settings
    library: SkillLibrary
    prompts: Prompts
    hosts: list[str]
    host: str = "local"
    skill: str | None = None
    params: dict[str, str] = field(default_factory=dict)
    transcript: Path | None = None
    env: dict[str, str] = field(default_factory=dict)
    # Hosts marked for a fleet run at start (--host a --host b, --hosts, -i); how fleet hosts
    # are opened (None: as TARGETs, the seam tests use for hosts in folders).
    fleet: list[HostSpec] = field(default_factory=list)
    forks: int = DEFAULT_FORKS
    # LLM requests at once across a fleet's hosts (None: forks); the host a fleet runs first.
    llm_concurrency: int | None = None
    canary: str | None = None
    open_runner: Callable[[HostSpec], Runner] | None = None
    # The home the chat screen puts its log under (None: the user's).
    home: Path | None = None
    chat: bool = False  # open the chat screen at start
    # The chat's language (None: from the locale) and its log file (None: a new one under
    # the state directory for each conversation), as `kosmos chat --lang/--log` take them.
    chat_lang: str | None = None
    chat_log: Path | None = None


class TuiParts(Protocol):
    """The app as its screens see it: the configuration and the parts every run shares."""

    config: TuiConfig
    pool: HostPool
    redactor: Redactor

    @property
    def prompter(self) -> HostPrompter:
        """Asks the person about host keys and passwords, for every host of the pool."""
        ...

    def new_redactor(self) -> Redactor:
        """A run's own redactor, fed as secrets appear in that run."""
        ...
