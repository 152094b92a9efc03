"""The chat agent: [main] input -> [cls] classify -> [select] tool -> [valid] -> [exec].

Front ends give it an Output (stdout texts), a line reader and a SkillRunner; it keeps the one
message history of the conversation and writes the detailed log.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeVar

import httpx
from pydantic import BaseModel, ConfigDict, Field, field_validator

from kosmos.chat.catalog import Catalog
from kosmos.chat.http_tools import call_http_tool
from kosmos.chat.log import ChatLog
from kosmos.chat.ranking import ToolRanker
from kosmos.chat.tools import Tool, build_tools, format_params, validate
from kosmos.config_chat import ChatSettings
from kosmos.errors import EXIT_DONE, EXIT_FAILED, EXIT_LLM, KosmosError, LLMError
from kosmos.events import Message
from kosmos.llm.content import ContextMessage, as_context
from kosmos.llm.structured import InvalidSolution, StructuredClient
from kosmos.prompts import Prompts
from kosmos.skills.model import Skill

Kind = Literal["progress", "result", "error", "help", "reason"]
T = TypeVar("T", bound=BaseModel)


class Output(Protocol):
    """Where the agent's short texts go (a terminal, a chat screen)."""

    def say(self, text: str, kind: Kind = "progress") -> None: ...


@dataclass(frozen=True)
class SkillOutcome:
    status: str
    message: str
    transcript: str | None = None


class SkillRunner(Protocol):
    """Runs a skill the way `kosmos run` does (approvals, transcript) and reports its end."""

    async def run_skill(self, skill: Skill, params: dict[str, str]) -> SkillOutcome: ...


class Classification(BaseModel):
    """[cls]: whether the request is something this agent does."""

    model_config = ConfigDict(extra="forbid")

    relevant: bool


class Selection(BaseModel):
    """[select]: the tool to call and its parameters; tool is null when none fits."""

    model_config = ConfigDict(extra="forbid")

    tool: str | None
    params: dict[str, str | None] = Field(default_factory=dict)

    @field_validator("params", mode="before")
    @classmethod
    def _as_text(cls, value: Any) -> Any:
        # Models send numbers and booleans for parameters that are text to kosmos.
        if not isinstance(value, dict):
            return value
        return {k: _scalar_text(v) for k, v in value.items()}


def _scalar_text(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return value


def _short(text: str, limit: int = 90) -> str:
    """The first sentence of a description, for the help list."""
    flat = " ".join(text.split())
    first = flat.split(". ")[0].split(": ")[0]
    return first if len(first) <= limit else first[: limit - 1] + "…"


class _End(Exception):
    """The chat ends with this exit code (an LLM error or a parse error)."""

    def __init__(self, exit_code: int) -> None:
        self.exit_code = exit_code


class ChatAgent:
    """One conversation: its history, its tools, its log."""

    def __init__(
        self,
        *,
        settings: ChatSettings,
        tools: Sequence[Tool],
        structured: StructuredClient,
        prompts: Prompts,
        catalog: Catalog,
        log: ChatLog,
        output: Output,
        http: httpx.AsyncClient,
        skills: SkillRunner | None = None,
        ranker: ToolRanker | None = None,
    ) -> None:
        self.settings = settings
        self.tools = list(tools)
        self.structured = structured
        self.prompts = prompts
        self.t = catalog
        self.log = log
        self.out = output
        self.http = http
        self.skills = skills
        self.ranker = ranker
        self.history: list[Message] = []
        self.started = False

    def use_skills(self, skills: Sequence[Skill]) -> None:
        """Offer these skills as the tools next to the HTTP ones (another host, its skills)."""
        self.tools = build_tools(self.settings.tools, skills if self.settings.skills else ())

    # -- [main] --------------------------------------------------------------------------

    def help_text(self) -> str:
        lines = [self.t("greeting")] if not self.started else []
        if self.tools:
            lines.append(self.t("help_tools"))
            lines += [f"  • {t.name}: {_short(t.description)}" for t in self.tools]
        else:
            lines.append(self.t("help_no_tools"))
        lines.append(
            self.t(
                "help_commands",
                help=", ".join(self.settings.help_commands),
                exit=", ".join(self.settings.exit_commands),
            )
        )
        return "\n".join(lines)

    def begin(self) -> None:
        """Step 1.1: help on a new session (AgentStart), else only AgentRestart."""
        self.log.step = "main"
        if not self.started:
            self.out.say(self.help_text(), "help")
            self.started = True
            self.log.debug("AgentStart")
        else:
            self.log.debug("AgentRestart")

    def _is(self, text: str, commands: Sequence[str]) -> bool:
        return text.strip().lower() in {c.lower() for c in commands}

    async def run(self, read: Callable[[], Awaitable[str | None]]) -> int:
        """Steps 1-5 until an exit command, the end of input, or an LLM failure."""
        self.begin()
        while True:
            code = await self.handle(await read())
            if code is not None:
                return code

    async def handle(self, line: str | None) -> int | None:
        """One line the operator typed (None: input ended): the exit code once the chat is
        over, else None and the agent waits for the next line. A chat screen calls this."""
        if line is None or self._is(line, self.settings.exit_commands):
            self.log.step = "main"
            self.out.say(self.t("goodbye"), "result")
            self.log.debug("AgentEnd")
            return EXIT_DONE
        if self._is(line, self.settings.help_commands):
            self.log.step = "main"
            self.out.say(self.help_text(), "help")
            self.log.debug("AgentHelp")
            return None
        if not line.strip():
            return None
        try:
            await self.process(line.strip())
        except _End as end:
            return end.exit_code
        self.begin()
        return None

    def _say(self, text: str, kind: Kind = "progress", *, remember: bool = True) -> None:
        """Print a text; most of them go into the history too."""
        self.out.say(text, kind)
        if remember:
            self.history.append(Message(role="assistant", content=text))

    async def process(self, text: str) -> None:
        """One request through [cls], [select], [valid] and [exec]."""
        self.history.append(Message(role="user", content=text))
        self.log.info(f"user // {text}")
        if not await self._classify():
            return
        choice = await self._select()
        if choice is None:
            return
        tool, params = choice
        await self._execute(tool, params)

    # -- LLM requests --------------------------------------------------------------------

    def _context(self, system: str) -> list[ContextMessage]:
        # At most CONTEXT_HIST_LIMIT messages of the history go to the LLM.
        recent = self.history[-self.settings.context_hist_limit :]
        return [ContextMessage(role="system", content=system), *as_context(recent)]

    async def _ask(self, fn: str, system: str, schema: type[T]) -> T:
        try:
            solution = await self.structured.request(self._context(system), schema)
        except InvalidSolution as e:
            self.out.say(self.t("parse_error"), "error")
            self.log.critical(f"{fn} // LLM Response Parse Error: {e.problem}")
            raise _End(EXIT_FAILED) from e
        except LLMError as e:
            self.out.say(self.t("llm_error"), "error")
            self.out.say(str(e), "reason")  # what failed and what to do, for the operator
            self.log.critical(f"{fn} // LLM Error: {e}")
            raise _End(EXIT_LLM) from e
        return solution.value

    def _tools_text(self, tools: Sequence[Tool]) -> str:
        return "\n".join(t.describe() for t in tools) or "(none)"

    # -- [cls] ---------------------------------------------------------------------------

    async def _classify(self) -> bool:
        self.log.step = "cls"
        self._say(self.t("classifying"), remember=False)
        self.log.debug("AgentClassify")
        system = self.prompts["CHAT_CLASSIFY_PROMPT"].format(tools=self._tools_text(self.tools))
        verdict = await self._ask("classify_intent", system, Classification)
        if not verdict.relevant:
            self._say(self.t("irrelevant"), "result")
            self.out.say(self.help_text(), "help")
            self.log.warning("classify_intent // Irrelevant query")
            return False
        self._say(self.t("relevant"))
        self.log.debug("classify_intent // Relevant query")
        return True

    # -- [select] ------------------------------------------------------------------------

    async def _candidates(self) -> list[Tool]:
        if self.ranker is None:
            return self.tools
        query = next((m.content for m in reversed(self.history) if m.role == "user"), "")
        return await self.ranker.rank(self.tools, query)

    async def _select(self) -> tuple[Tool, dict[str, str]] | None:
        self.log.step = "select"
        self._say(self.t("selecting"), remember=False)
        self.log.debug("AgentSelect")
        candidates = await self._candidates()
        system = self.prompts["CHAT_SELECT_PROMPT"].format(tools=self._tools_text(candidates))
        selection = await self._ask("select_tool_call", system, Selection)
        name = (selection.tool or "").strip()
        if not name:
            self._say(self.t("selection_fail"), "result")
            self.log.warning("select_tool_call // Selection Fail")
            return None
        self._say(self.t("selected", tool=name, params=format_params(selection.params, self.t)))
        self.log.debug("select_tool_call // Selection OK")
        return self._validate(name, selection.params)

    # -- [valid] -------------------------------------------------------------------------

    def _validate(
        self, name: str, given: dict[str, str | None]
    ) -> tuple[Tool, dict[str, str]] | None:
        self.log.step = "valid"
        self._say(self.t("validating"), remember=False)
        self.log.debug("AgentValidate")
        tool = next((t for t in self.tools if t.name == name), None)
        check = validate(tool, name, given, self.t)
        if not check.ok or tool is None:
            self._say(check.say, "result")
            if check.note:
                self._say(check.note, "result", remember=False)
            self.log.warning(f"validate_tool_call // {check.log}")
            return None
        self._say(check.say)
        self.log.debug(f"validate_tool_call // {check.log}")
        return tool, check.params

    # -- [exec] --------------------------------------------------------------------------

    async def _execute(self, tool: Tool, params: dict[str, str]) -> None:
        self.log.step = "exec"
        self._say(self.t("executing"), remember=False)
        self.log.debug("AgentExecute")
        if tool.http is not None:
            result = await call_http_tool(
                tool.http, params, client=self.http, log=self.log, catalog=self.t
            )
            kind: Kind = "result" if result.ok else "error"
            self._say(result.lines[0], kind)
            for line in result.lines[1:]:
                self.out.say(line, kind)
            if result.reason:
                self.out.say(result.reason, "reason")  # what failed and where, for the operator
            return
        assert tool.skill is not None
        await self._run_skill(tool.skill, params)

    async def _run_skill(self, skill: Skill, params: dict[str, str]) -> None:
        fn = "run_skill"
        if self.skills is None:
            outcome = SkillOutcome("error", "no host to run skills on")
        else:
            try:
                outcome = await self.skills.run_skill(skill, params)
            except KosmosError as e:
                outcome = SkillOutcome(e.status, str(e))
        if outcome.transcript:
            self.log.debug(f"{fn} // transcript: {outcome.transcript}")
        message = " ".join(outcome.message.split())
        if outcome.status == "done":
            self.log.debug(f"{fn} // {skill.name}: done")
            self._say(self.t("skill_done", skill=skill.name, message=message), "result")
        else:
            self.log.error(f"{fn} // {skill.name}: {outcome.status}: {message}")
            self._say(
                self.t("skill_failed", skill=skill.name, status=outcome.status, message=message),
                "error",
            )
