"""Helpers for driving the engine in-process with real parts: scripted LLM, real shell; and
for every test: a program it needs of the machine (`need`), a condition to wait for
(`wait_until`, `until`)."""

from __future__ import annotations

import asyncio
import os
import select
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import pytest

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

T = TypeVar("T")

# CI sets it: there every program the tests use is installed, and one that is missing is a
# broken machine, not a reason to test less.
REQUIRE_TOOLS = "KOSMOS_REQUIRE_TOOLS"


def need(tool: str, package: str) -> str:
    """The path of the program `tool`. Where this machine lacks it, the test is skipped,
    naming the Debian `package` that has it; with KOSMOS_REQUIRE_TOOLS=1 it fails instead
    (as a missing sshd does with KOSMOS_REQUIRE_SSHD=1)."""
    path = shutil.which(tool)
    if path is None:
        why = f"{tool} is not installed (apt-get install {package})"
        if os.environ.get(REQUIRE_TOOLS) == "1":
            pytest.fail(f"{REQUIRE_TOOLS}=1 but {why}")
        pytest.skip(why)
    return path


def wait_until(check: Callable[[], T], *, what: str, timeout: float = 20, every: float = 0.05) -> T:
    """Poll `check` until it gives something true, and return that; fail the test, saying
    what never came (`what`), once `timeout` seconds have passed without it."""
    deadline = time.monotonic() + timeout
    while not (got := check()):
        if time.monotonic() > deadline:
            pytest.fail(f"waited {timeout:g} s for {what}; it never came")
        time.sleep(every)
    return got


def running(command: str) -> list[int]:
    """The live processes (zombies are not) whose command line is `command`, from /proc."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().rstrip(b"\0").replace(b"\0", b" ")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue  # gone meanwhile
        if args.decode(errors="replace") == command and state != "Z":
            pids.append(int(entry.name))
    return pids


def read_until(fd: int, text: bytes, timeout: float = 20) -> bytes:
    """Read `fd` until `text` has come; return all that was read. Fail the test, showing
    what came, if it has not within `timeout` seconds or the writer ends first."""
    seen = b""
    deadline = time.monotonic() + timeout
    while text not in seen:
        left = deadline - time.monotonic()
        if left <= 0:
            pytest.fail(f"{text!r} never came within {timeout:g} s; there came {seen!r}")
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            chunk = os.read(fd, 4096)
            if not chunk:
                pytest.fail(f"the output ended before {text!r}; there came {seen!r}")
            seen += chunk
    return seen


async def until(
    check: Callable[[], T], *, what: str, timeout: float = 20, every: float = 0.05
) -> T:
    """`wait_until` in an event loop: the loop runs on between two looks."""
    deadline = time.monotonic() + timeout
    while not (got := check()):
        if time.monotonic() > deadline:
            pytest.fail(f"waited {timeout:g} s for {what}; it never came")
        await asyncio.sleep(every)
    return got


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
