"""The Operator seam: how the engine asks a person (or a script standing in for one)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from kosmos.errors import KosmosError
from kosmos.events import DecidedBy


@dataclass(frozen=True)
class CommandProposal:
    """A command the LLM wants to run. `inferred`: the reply had no tag; a person must approve.

    `risk` is the safety policy's verdict: a `dangerous` command runs only when the approval
    carries the host's name (`host`) as the person typed it; the gate compares the two.
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
    # A fleet's host replaying its canary: the canary whose person ran this there only (a `y`
    # covers the host it was shown for), and how this host's earlier output differs from the
    # canary's (a short diff), for the prompt to say.
    canary: str | None = None
    differs: str = ""

    @property
    def what(self) -> str:
        """What is proposed, for a sentence: run `df -h`, carry out `[STORE] MEMORY_x.md`."""
        verb = "run" if self.kind == "command" else "carry out"
        return f"{verb} `{self.command}`"


@dataclass(frozen=True)
class Approval:
    """The answer to a proposal.

    `auto_read_only`: also run read-only commands unasked from now on. `typed`: what the
    person typed to confirm a dangerous command, as typed (the gate, not the front end, checks
    that it is the host's name). `by`: who answered; anything but a person at this run says
    so (`replay`, `standing`, `canary`), and what it approves runs unasked. `all_hosts`: the
    person said it for every host of the fleet ("all hosts"), not only the one shown.
    """

    action: Literal["run", "skip", "edit"]
    command: str | None = None
    auto_read_only: bool = False
    typed: str | None = None
    by: DecidedBy = "operator"
    all_hosts: bool = False

    @classmethod
    def run(cls, *, typed: str | None = None) -> Approval:
        return cls("run", typed=typed)

    @classmethod
    def skip(cls) -> Approval:
        return cls("skip")

    @classmethod
    def edit(cls, command: str, *, typed: str | None = None) -> Approval:
        return cls("edit", command, typed=typed)


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
