"""`kosmos run`: build the parts of one run, hand them to the engine, render its events."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kosmos.config import Settings, user_config_dir
from kosmos.engine.operator import Operator
from kosmos.engine.session import Session
from kosmos.errors import EXIT_INTERRUPTED, KosmosError, SkillNotFound
from kosmos.events import Event, Notice, RunFinished, RunStarted
from kosmos.frontends.console import Console
from kosmos.frontends.headless import HeadlessOperator
from kosmos.frontends.line import LineOperator, LinePrompter
from kosmos.frontends.params_line import collect_in_dialogue, dialogue_wanted
from kosmos.frontends.render import JsonRenderer, TextRenderer
from kosmos.frontends.setup import session_options, transcript_path
from kosmos.hosts.factory import make_runner
from kosmos.hosts.local import LocalRunner
from kosmos.hosts.runner import Runner
from kosmos.llm.factory import make_provider
from kosmos.prompts import Prompts
from kosmos.skills.discovery import REMOTE_SKILLS_DIR, SkillLibrary, find_remote_skill
from kosmos.skills.model import Param, Skill
from kosmos.skills.params import parse_param_flags, resolve_params, validate_value
from kosmos.transcript import Transcript


@dataclass
class RunRequest:
    """What the operator asked for on the command line."""

    skill: str
    host: str = "local"
    params: Sequence[str] = ()
    prompt: str | None = None
    answers: Sequence[str] = ()
    non_interactive: bool = False
    yes: bool = False
    json: bool = False
    max_steps: int | None = None
    command_timeout: float | None = None
    transcript: Path | None = None
    skills_dirs: Sequence[Path] = field(default_factory=tuple)
    protocol: str | None = None


def skill_library(
    settings: Settings, extra: Sequence[Path], env: dict[str, str], home: Path
) -> SkillLibrary:
    dirs = [*extra, *settings.skills_dirs]
    return SkillLibrary.default(Path.cwd(), user_config_dir(env, home) / "skills", dirs)


def ask_param_in_terminal(console: Console) -> Callable[[Param], str | None]:
    """Line mode asks for a missing required parameter, re-asking until its rules are met."""

    def ask(param: Param) -> str | None:
        about = f" ({param.description})" if param.description else ""
        choices = f" [{'/'.join(param.choices)}]" if param.choices else ""
        while True:
            console.err.write(f"{param.name}{about}{choices}: ")
            console.err.flush()
            line = sys.stdin.readline()
            if not line:
                return None
            value = line.strip()
            problem = validate_value(param, value) if value else "a value is required"
            if problem is None:
                return value
            console.say(f"  {problem}", stream=console.err)

    return ask


async def find_skill(library: SkillLibrary, ref: str, runner: Runner, settings: Settings) -> Skill:
    """A local skill first; then the host's own skills (seed 001: remote skills)."""
    try:
        return library.find(ref)
    except SkillNotFound as e:
        if isinstance(runner, LocalRunner):
            raise
        timeout = settings.remote_skill_timeout
        try:
            skill = await find_remote_skill(runner, ref, timeout=timeout)
        except TimeoutError:
            raise SkillNotFound(
                f"{e}; {runner.name} did not answer within {timeout:g} s when kosmos looked in "
                f"{REMOTE_SKILLS_DIR}"
            ) from None
        if skill is None:
            raise SkillNotFound(
                f"{e}; {runner.name} has none in {REMOTE_SKILLS_DIR} either"
            ) from None
        return skill


class RunFrontend:
    """One `kosmos run` in line mode or headless."""

    def __init__(
        self, request: RunRequest, settings: Settings, *, env: dict[str, str], home: Path
    ) -> None:
        self.request = request
        self.settings = settings
        self.env = env
        self.home = home
        self.line_mode = not request.non_interactive
        if request.json:
            self.console = Console(out=sys.stderr)
        else:
            self.console = Console()
        self.session: Session | None = None
        self.result: RunFinished | None = None
        # Events from before the run started (the parameter dialogue), for the transcript.
        self._early: list[Event] = []
        self._emit: Callable[[Event], None] | None = None

    def _operator(self) -> Operator:
        if self.line_mode:
            return LineOperator(self.console, yes=self.request.yes, answers=self.request.answers)
        return HeadlessOperator(yes=self.request.yes, answers=self.request.answers)

    def _emitter(self, transcript: Transcript) -> Callable[[Event], None]:
        renderer: Callable[[Event], None]
        renderer = JsonRenderer() if self.request.json else TextRenderer(self.console)
        json_mode = self.request.json

        def emit(event: Event) -> None:
            transcript.write(event)
            if isinstance(event, RunStarted):
                for early in self._early:
                    transcript.write(early.model_copy(update={"host": event.host}))
                self._early.clear()
            renderer(event)
            if json_mode and isinstance(event, RunFinished):
                # stdout carries the JSON; the one-line error and the transcript go to stderr.
                if event.status != "done":
                    self.console.error(f"kosmos: {event.message}")
                self.console.say(f"transcript: {event.transcript}", stream=self.console.err)

        return emit

    def _notify(self, message: str) -> None:
        """A host's news (a reconnect): into the run's events once the run has started."""
        if self._emit is not None:
            self._emit(Notice(message=message, host=self.request.host))
        else:
            self.console.say(self.console.style(message, "33"), stream=self.console.err)

    def fail_early(self, error: KosmosError) -> int:
        """An error before the session started: one line on stderr (and a --json result line)."""
        self.console.error(f"kosmos: {error}")
        if self.request.json:
            JsonRenderer()(
                RunFinished(
                    status=error.status, steps=0, message=str(error), exit_code=error.exit_code
                )  # type: ignore[arg-type]
            )
        return error.exit_code

    async def run(self) -> int:
        req, settings = self.request, self.settings
        prompts = Prompts.load(settings.prompts_file)
        library = skill_library(settings, req.skills_dirs, self.env, self.home)
        prompter = None if req.non_interactive else LinePrompter(self.console)
        runner = make_runner(req.host, settings, prompter=prompter, notify=self._notify)
        try:
            await runner.connect()
            skill = await find_skill(library, req.skill, runner, settings)
            ask = None if req.non_interactive else ask_param_in_terminal(self.console)
            given = parse_param_flags(req.params)
            if dialogue_wanted(skill, given, settings, non_interactive=req.non_interactive):
                given = await collect_in_dialogue(
                    skill, given, settings, prompts, self.console, emit=self._early.append
                )
            params = resolve_params(skill, given, ask=ask)
            return await self._run_session(skill, params, runner, prompts)
        finally:
            await runner.close()

    async def run_loaded(
        self, skill: Skill, params: dict[str, str], runner: Runner, prompts: Prompts
    ) -> RunFinished:
        """Run a loaded skill with resolved params on a connected runner (`kosmos chat`)."""
        await self._run_session(skill, params, runner, prompts)
        assert self.result is not None
        return self.result

    async def _run_session(
        self, skill: Skill, params: dict[str, str], runner: Runner, prompts: Prompts
    ) -> int:
        req, settings = self.request, self.settings
        run_id = uuid.uuid4().hex
        path = transcript_path(settings, skill, run_id, req.transcript)
        transcript = Transcript(path)
        provider = make_provider(settings)
        options = session_options(
            settings,
            skill,
            max_steps=req.max_steps,
            command_timeout=req.command_timeout,
            prompt=req.prompt,
            non_interactive=req.non_interactive,
            protocol=req.protocol,
        )
        self._emit = self._emitter(transcript)
        session = Session(
            skill,
            params=params,
            runner=runner,
            provider=provider,
            operator=self._operator(),
            prompts=prompts,
            emit=self._emit,
            options=options,
            run_id=run_id,
            transcript=str(path),
        )
        self.session = session
        try:
            result = self.result = await self._drive(session)
        finally:
            self._emit = None
            self.console.stop_spinner()
            transcript.close()
            await provider.aclose()
        return result.exit_code

    async def _drive(self, session: Session) -> RunFinished:
        """Run the session with Ctrl-C / SIGTERM handling: stop the command, or end the run."""
        loop = asyncio.get_running_loop()
        task = asyncio.ensure_future(session.run())

        def on_sigint() -> None:
            if self.line_mode and session.command_running:
                session.stop_command()
                self.console.say(
                    self.console.style("  stopping the command (Ctrl-C again ends the run)", "33"),
                    stream=self.console.err,
                )
            else:
                task.cancel()

        installed = []
        for sig, handler in ((signal.SIGINT, on_sigint), (signal.SIGTERM, task.cancel)):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, handler)
                installed.append(sig)
        try:
            return await task
        except asyncio.CancelledError:
            if session.result is not None:
                return session.result
            return RunFinished(
                status="aborted", steps=0, message="interrupted", exit_code=EXIT_INTERRUPTED
            )
        finally:
            for sig in installed:
                loop.remove_signal_handler(sig)
