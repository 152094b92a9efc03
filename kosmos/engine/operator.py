"""The Operator seam: how the engine asks a person (or a script standing in for one)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from kosmos.errors import KosmosError


@dataclass(frozen=True)
class CommandProposal:
    """A command the LLM wants to run. `inferred`: the reply had no tag; a person must approve.

    `risk` is the safety policy's verdict: a `dangerous` command is approved only when the
    person types the host's name (`host`), whatever else the front end offers.
    """

    step: int
    command: str
    host: str
    inferred: bool = False
    risk: Literal["read_only", "write", "dangerous"] = "write"
    reason: str = ""
    # `command`: a shell command, which may be edited. `file` ([GET-FILE]) and `memory` (a
    # note written or deleted on this machine) are allowed or not, never edited; `command`
    # then shows the directive (`[GET-FILE] /etc/hosts`).
    kind: Literal["command", "file", "memory"] = "command"

    @property
    def what(self) -> str:
        """What is proposed, for a sentence: run `df -h`, carry out `[STORE] MEMORY_x.md`."""
        verb = "run" if self.kind == "command" else "carry out"
        return f"{verb} `{self.command}`"


@dataclass(frozen=True)
class Approval:
    """The decision. `auto_read_only`: also run read-only commands unasked from now on."""

    action: Literal["run", "skip", "edit"]
    command: str | None = None
    auto_read_only: bool = False

    @classmethod
    def run(cls) -> Approval:
        return cls("run")

    @classmethod
    def skip(cls) -> Approval:
        return cls("skip")

    @classmethod
    def edit(cls, command: str) -> Approval:
        return cls("edit", command)


@dataclass(frozen=True)
class Question:
    step: int
    text: str
    required: bool


class Operator(Protocol):
    """What a front end implements so the engine can ask for decisions."""

    async def approve(self, proposal: CommandProposal) -> Approval:
        """Run, skip or edit a proposed command."""
        ...

    async def answer(self, question: Question) -> str | None:
        """The answer to an [ASK]; None skips an optional question."""
        ...

    async def retry(self, error: KosmosError) -> bool:
        """An LLM or host error happened mid-run: True re-sends the same request."""
        ...

    async def ask_secret(self, prompt: str) -> str | None:
        """A secret typed masked (a sudo password); None when there is no one to ask."""
        ...
