"""`kosmos chat`: the line-mode REPL over the chat agent; skills run as `kosmos run` runs them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kosmos.chat.agent import Kind, SkillOutcome
from kosmos.chat.build import open_chat
from kosmos.chat.catalog import pick_lang
from kosmos.chat.host_skills import offer
from kosmos.chat.log import default_log_path
from kosmos.config import Settings
from kosmos.engine.guard import visible
from kosmos.frontends.console import Console, EndOfInput
from kosmos.frontends.line import LineOperator, LinePrompter
from kosmos.frontends.render import TextRenderer
from kosmos.frontends.terminal import drive
from kosmos.hosts.factory import make_runner
from kosmos.hosts.runner import Runner
from kosmos.prompts import Prompts
from kosmos.runs.assembly import prepare_run
from kosmos.runs.redactor import run_redactor
from kosmos.runs.skills import HostSkills, host_skills, skill_library
from kosmos.skills.model import Skill

STYLES: dict[str, str] = {"progress": "2", "result": "1", "error": "31", "help": "36"}
# Kinds that go to stderr: the one-line reason after a text such as "LLM request failed".
STDERR_KINDS = frozenset({"reason"})


@dataclass
class ChatRequest:
    """What the operator asked for on the command line."""

    host: str = "local"
    lang: str | None = None
    log: Path | None = None
    verbose: bool = False
    skills_dirs: Sequence[Path] = field(default_factory=tuple)


class ConsoleOutput:
    """The agent's texts on stdout: progress dimmed, results bold, errors red, each drawn
    through `visible`."""

    def __init__(self, console: Console) -> None:
        self.c = console

    def say(self, text: str, kind: Kind = "progress") -> None:
        if kind in STDERR_KINDS:
            self.c.error(f"kosmos: {text}")
            return
        # Tool names and parameters come from the LLM, results from a host or an API: an
        # escape in them (OSC 52 fills the clipboard) is drawn, never obeyed.
        self.c.say(self.c.style(visible(text), STYLES[kind]))


class LineSkillRunner:
    """Runs a chosen skill as `kosmos run` does in line mode, on one host connected on first
    use: the host's policy from config (else ask), the person at this terminal approving."""

    def __init__(
        self, settings: Settings, host: str, console: Console, env: dict[str, str], home: Path
    ) -> None:
        self.settings = settings
        self.host = host
        self.console = console
        self.env = env
        self.home = home
        self.prompts = Prompts.load(settings.prompts_file)
        # Built now so that a bad TARGET stops the chat at once; connected on first use.
        self._runner = make_runner(
            host, settings, prompter=LinePrompter(console), notify=self._notify
        )
        self._connected_once = False

    def _notify(self, message: str) -> None:
        """A host's news (a reconnect), shown between the chat's lines."""
        self.console.say(self.console.style(message, "33"), stream=self.console.err)

    async def connected(self) -> Runner:
        """The host's runner, connected on the first call."""
        if not self._connected_once:
            await self._runner.connect()
            self._connected_once = True
        return self._runner

    async def run_skill(self, skill: Skill, params: dict[str, str]) -> SkillOutcome:
        runner = await self.connected()
        ready = prepare_run(
            skill,
            params,
            runner,
            settings=self.settings,
            prompts=self.prompts,
            operator=LineOperator(self.console),
            redactor=run_redactor(self.settings, self.env),
            show=TextRenderer(self.console),
        )
        try:
            result = await drive(ready.session, console=self.console, line_mode=True)
        finally:
            self.console.stop_spinner()
            await ready.close()
        return SkillOutcome(result.status, result.message, result.transcript)

    async def close(self) -> None:
        if self._connected_once:
            await self._runner.close()


class ChatFrontend:
    """One `kosmos chat` session in a terminal."""

    def __init__(
        self, request: ChatRequest, settings: Settings, *, env: dict[str, str], home: Path
    ) -> None:
        self.request = request
        self.settings = settings
        self.env = env
        self.home = home
        self.console = Console()

    async def _read(self) -> str | None:
        try:
            # The next message may be typed while the agent works: it is kept.
            return await self.console.ask(self.console.style("> ", "1"), fresh=False)
        except EndOfInput:
            return None

    async def _host_skills(self, runner: LineSkillRunner) -> HostSkills:
        """Connect to --host now and list the skills stored there (kosmos.runs.skills)."""
        timeout = self.settings.remote_skill_timeout
        found = await host_skills(await runner.connected(), timeout=timeout)
        for problem in found.problems:
            self.console.error(f"warning: {problem}")
        return found

    async def run(self) -> int:
        req, settings = self.request, self.settings
        log_path = req.log or default_log_path(self.env, self.home)
        skills: list[Skill] = []
        if settings.chat_settings.skills:
            skills = skill_library(settings, req.skills_dirs, self.env, self.home).list()
        runner = LineSkillRunner(settings, req.host, self.console, self.env, self.home)
        opened = False
        try:
            found = HostSkills(req.host)
            if settings.chat_settings.skills:
                found = await self._host_skills(runner)
            async with open_chat(
                settings,
                lang=pick_lang(req.lang, self.env),
                output=ConsoleOutput(self.console),
                log_path=log_path,
                env=self.env,
                skills=skills,
                skill_runner=runner,
                verbose=req.verbose,
            ) as agent:
                opened = True
                offer(agent, skills, found)
                return await agent.run(self._read)
        finally:
            await runner.close()
            if opened:
                self.console.say(
                    self.console.style(f"log: {log_path}", "2"), stream=self.console.err
                )
