"""Helpers for `kosmos chat` tests: the example services, their config, a scripted conversation."""

from __future__ import annotations

import importlib.util
import json
import re
import socket
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kosmos.chat.agent import ChatAgent, Kind, SkillOutcome, SkillRunner
from kosmos.chat.build import open_chat
from kosmos.config import Settings, check_settings
from kosmos.skills.model import Skill

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_CONFIG = ROOT / "examples" / "chat" / "kosmos.yaml"
LOG_LINE = re.compile(
    r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d (DEBUG|INFO|WARNING|ERROR|CRITICAL) +"
    r"\[(main|cls|select|valid|exec)\] "
)


def load_services_module() -> Any:
    """examples/chat/services.py, imported by path (examples/ is not a package)."""
    spec = importlib.util.spec_from_file_location(
        "kosmos_example_services", ROOT / "examples" / "chat" / "services.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def example_chat(services_url: str, **overrides: Any) -> dict[str, Any]:
    """The shipped example `chat:` section, pointed at the running example services."""
    text = EXAMPLE_CONFIG.read_text(encoding="utf-8").replace("http://127.0.0.1:8500", services_url)
    chat = yaml.safe_load(text)["chat"]
    chat.update(overrides)
    return chat


def settings_for(llm_url: str, chat: dict[str, Any], **more: Any) -> Settings:
    return check_settings({"base_url": llm_url, "llm_retries": 0, "chat": chat, **more})


class Recorder:
    """An Output that keeps what the agent said."""

    def __init__(self) -> None:
        self.said: list[tuple[Kind, str]] = []

    def say(self, text: str, kind: Kind = "progress") -> None:
        self.said.append((kind, text))

    @property
    def text(self) -> str:
        return "\n".join(t for _, t in self.said)


@dataclass
class Conversation:
    exit_code: int
    out: Recorder
    log: str
    agent: ChatAgent
    log_lines: list[str] = field(default_factory=list)

    def logged(self, level: str, prefix: str, message: str) -> bool:
        """Whether some log line has this level, step prefix and message."""
        return any(
            re.search(rf" {level} +\[{prefix}\] {re.escape(message)}$", line)
            for line in self.log_lines
        )


async def converse(
    settings: Settings,
    lines: Sequence[str],
    log_path: Path,
    *,
    lang: str = "en",
    skills: Sequence[Skill] = (),
    skill_runner: SkillRunner | None = None,
    verbose: bool = False,
    env: dict[str, str] | None = None,
) -> Conversation:
    """Type `lines` into a chat (then end of input) and collect stdout and the log."""
    out = Recorder()
    pending = list(lines)

    async def read() -> str | None:
        return pending.pop(0) if pending else None

    async with open_chat(
        settings,
        lang=lang,  # type: ignore[arg-type]
        output=out,
        log_path=log_path,
        env=env or {},
        skills=skills,
        skill_runner=skill_runner,
        verbose=verbose,
    ) as agent:
        code = await agent.run(read)
    log = log_path.read_text(encoding="utf-8")
    return Conversation(code, out, log, agent, log.splitlines())


def relevant(value: bool = True) -> str:
    return json.dumps({"relevant": value})


def select(tool: str | None, **params: Any) -> str:
    return json.dumps({"tool": tool, "params": params}, ensure_ascii=False)


class SessionSkillRunner:
    """A SkillRunner that drives the real session engine on this machine (tests.helpers)."""

    def __init__(self, llm_url: str) -> None:
        self.llm_url = llm_url
        self.runs: list[tuple[str, dict[str, str]]] = []

    async def run_skill(self, skill: Skill, params: dict[str, str]) -> SkillOutcome:
        from tests.helpers import run_session

        self.runs.append((skill.name, params))
        run = await run_session(self.llm_url, skill, params=params)
        return SkillOutcome(run.result.status, run.result.message)
