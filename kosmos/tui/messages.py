"""Messages of the TUI: small dataclasses; the engine's side posts them, widgets handle them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from textual.message import Message

from kosmos.engine.operator import CommandProposal, Question
from kosmos.events import Event
from kosmos.skills.model import Skill


@dataclass
class EngineEvent(Message):
    """One event the session emitted, for the run view to render."""

    event: Event


@dataclass
class OutputReady(Message):
    """Streamed output of `step` waits in the run's OutputTail; a newer one replaces this."""

    step: int

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, OutputReady) and message.step == self.step


@dataclass
class ApprovalNeeded(Message):
    proposal: CommandProposal


@dataclass
class QuestionNeeded(Message):
    question: Question


@dataclass
class RetryNeeded(Message):
    """An LLM or host error stopped the run: offer Retry with this one-line reason."""

    reason: str
    kind: str = "LLM"


@dataclass
class Decided(Message):
    """A step widget's answer to what the engine asked (an Approval, a text, a bool)."""

    value: Any


@dataclass
class HostChosen(Message):
    target: str


@dataclass
class SkillChosen(Message):
    skill: Skill
    # Chosen by the operator in the sidebar (not preselected): the form takes the focus.
    by_operator: bool = False


@dataclass
class HostState(Message):
    """A host's connection changed: `state` is idle, connecting, connected or failed."""

    target: str
    state: str
    detail: str = ""


@dataclass
class RemoteSkills(Message):
    """The skills found on `target` (under ~/.config/kosmos-panel/skills)."""

    target: str
    skills: list[Skill] = field(default_factory=list)
    problem: str = ""


@dataclass
class RunStateChanged(Message):
    """A run started or stopped waiting for the operator, or ended (for tab labels, footer)."""

    run_id: str
