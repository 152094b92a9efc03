"""Helpers for driving the engine in-process with real parts: scripted LLM, real shell."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kosmos.config import check_settings
from kosmos.engine.operator import Approval, CommandProposal, Question
from kosmos.engine.session import Session, SessionOptions
from kosmos.errors import KosmosError
from kosmos.events import Event, RunFinished
from kosmos.hosts.local import LocalRunner
from kosmos.hosts.runner import Runner
from kosmos.llm.factory import make_provider
from kosmos.prompts import Prompts
from kosmos.skills.loader import parse_skill
from kosmos.skills.model import Skill
from kosmos.transcript import Transcript


def make_skill(
    body: str = "## What I do\nCheck things.", name: str = "probe", **front: object
) -> Skill:
    lines = [f"name: {name}"]
    if "description" not in front:
        lines.append("description: a test skill")
    lines += [f"{k}: {v}" for k, v in front.items()]
    text = "---\n" + "\n".join(lines) + "\n---\n" + body + "\n"
    return parse_skill(text, path=f"/skills/{name}/SKILL.md", fallback_name=name, source="test")


@dataclass
class ScriptOperator:
    """Stands in for a person at the Operator seam: approvals and answers from lists."""

    approvals: list[Approval] = field(default_factory=list)
    answers: list[str | None] = field(default_factory=list)
    retries: list[bool] = field(default_factory=list)
    proposals: list[CommandProposal] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)
    errors: list[KosmosError] = field(default_factory=list)
    secrets: list[str | None] = field(default_factory=list)
    secret_prompts: list[str] = field(default_factory=list)

    async def approve(self, proposal: CommandProposal) -> Approval:
        self.proposals.append(proposal)
        return self.approvals.pop(0) if self.approvals else Approval.run()

    async def answer(self, question: Question) -> str | None:
        self.questions.append(question)
        return self.answers.pop(0) if self.answers else None

    async def retry(self, error: KosmosError) -> bool:
        self.errors.append(error)
        return self.retries.pop(0) if self.retries else False

    async def ask_secret(self, prompt: str) -> str | None:
        self.secret_prompts.append(prompt)
        return self.secrets.pop(0) if self.secrets else None


@dataclass
class Run:
    session: Session
    events: list[Event]

    @property
    def result(self) -> RunFinished:
        assert self.session.result is not None
        return self.session.result

    def of(self, kind: type) -> list:
        return [e for e in self.events if isinstance(e, kind)]


async def run_session(
    base_url: str,
    skill: Skill | None = None,
    *,
    operator: ScriptOperator | None = None,
    runner: Runner | None = None,
    params: dict[str, str] | None = None,
    options: SessionOptions | None = None,
    transcript: Path | None = None,
    settings: dict[str, object] | None = None,
    keep_output: bool = True,
) -> Run:
    """Run one session against the scripted LLM at `base_url`; return it with its events."""
    cfg = check_settings({"base_url": base_url, "llm_retries": 2, **(settings or {})})
    provider = make_provider(cfg)
    events: list[Event] = []
    writer = Transcript(transcript) if transcript else None

    def emit(event: Event) -> None:
        if keep_output or event.persist:
            events.append(event)
        if writer:
            writer.write(event)

    session = Session(
        skill or make_skill(),
        params=params or {},
        runner=runner or LocalRunner(),
        provider=provider,
        operator=operator or ScriptOperator(),
        prompts=Prompts.load(),
        emit=emit,
        options=options or SessionOptions(),
    )
    try:
        await session.run()
    finally:
        await provider.aclose()
        if writer:
            writer.close()
    return Run(session, events)


def user_texts(bodies: Sequence[dict]) -> list[str]:
    return [m["content"] for m in bodies if m["role"] == "user"]
