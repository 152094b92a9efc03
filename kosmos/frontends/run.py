"""`kosmos run`: build the parts of one run, hand them to the engine, render its events."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from kosmos import errors
from kosmos.config import Settings
from kosmos.engine.operator import Operator
from kosmos.engine.session import Session
from kosmos.errors import Aborted, KosmosError, UsageError
from kosmos.events import Event, Notice, RunFinished
from kosmos.frontends.console import Console
from kosmos.frontends.headless import HeadlessOperator
from kosmos.frontends.line import LineOperator, LinePrompter
from kosmos.frontends.render import JsonRenderer, TextRenderer
from kosmos.frontends.request import RunRequest
from kosmos.frontends.terminal import drive, fail_early
from kosmos.hosts.factory import make_runner
from kosmos.hosts.runner import Runner
from kosmos.prompts import Prompts
from kosmos.runs.assembly import prepare_run
from kosmos.runs.redactor import run_redactor
from kosmos.runs.skills import find_skill, skill_library
from kosmos.skills.model import Param, Skill
from kosmos.skills.params import parse_param_flags, resolve_params

if TYPE_CHECKING:
    from kosmos.engine.resume import Resumed
    from kosmos.runs.replay import Replay


class RunFrontend:
    """One `kosmos run` in line mode or headless: connect, find the skill and its
    parameters, hand them to run assembly, drive the session and render its events."""

    def __init__(
        self, request: RunRequest, settings: Settings, *, env: dict[str, str], home: Path
    ) -> None:
        self.request = request
        self.settings = settings
        self.env = env
        self.home = home
        self.line_mode = not request.non_interactive
        self.console = Console(out=sys.stderr) if request.json else Console()
        self.session: Session | None = None
        self.redactor = run_redactor(settings, env)
        self.host = request.host or "local"
        self.result: RunFinished | None = None
        # Events from before the run started (the parameter dialogue, notices from connecting),
        # for the transcript.
        self._early: list[Event] = []
        # No one reads the output any more (`| head`): the run stops, as SIGPIPE would end it.
        self.console.on_closed = lambda: self.stop(errors.OutputClosed())

    def stop(self, error: KosmosError) -> None:
        """End the run under way with `error` (its output or transcript cannot be written)."""
        if self.session is not None:
            self.session.stop(error)

    def _operator(self) -> Operator:
        # `--yes` is the `auto` policy, applied by the engine; the operator is asked only about
        # what the policy leaves to a person (dangerous, inferred, interrupted commands...).
        if self.line_mode:
            return LineOperator(
                self.console, answers=self.request.answers, show_directives=self.request.json
            )
        return HeadlessOperator(answers=self.request.answers)

    def _renderer(self) -> Callable[[Event], None]:
        if not self.request.json:
            return TextRenderer(self.console)
        renderer = JsonRenderer(console=self.console)

        def render(event: Event) -> None:
            renderer(event)
            if isinstance(event, RunFinished):
                # stdout carries the JSON; the one-line error and the transcript go to stderr.
                if event.status != "done":
                    self.console.error(f"kosmos: {event.message}")
                self.console.say(f"transcript: {event.transcript}", stream=self.console.err)

        return render

    def _notify(self, message: str) -> None:
        """A host's news (a reconnect, a host key added while connecting): into the run's
        events once the run has started; before that, shown now and kept for the transcript."""
        message = self.redactor(message)
        if self.session is not None and self.session.result is None:
            self.session.emit(Notice(message=message, host=self.host))
        else:
            self.console.say(self.console.style(message, "33"), stream=self.console.err)
            self._early.append(Notice(message=message, host=self.host))

    def fail_early(self, error: KosmosError) -> int:
        """An error before the session started: one line on stderr (and a --json result line)."""
        # A run that ended and then could not close its transcript has its result line out.
        result_line = self.request.json and self.result is None
        return fail_early(error, self.console, self.redactor, json=result_line)

    async def run(self) -> int:
        """The whole run; Ctrl-C or SIGTERM before the session starts (while connecting, at a
        host key or passphrase prompt) ends it with one line and exit 130 too."""
        loop = asyncio.get_running_loop()
        main = asyncio.current_task()
        installed = False
        if main is not None:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(signal.SIGTERM, main.cancel)
                installed = True
        try:
            return await self._run()
        except asyncio.CancelledError:
            if self.session is not None:
                raise
            return self.fail_early(Aborted("interrupted before the run started; nothing was run"))
        finally:
            if installed:
                loop.remove_signal_handler(signal.SIGTERM)

    async def _run(self) -> int:
        req, settings = self.request, self.settings
        prompts = Prompts.load(settings.prompts_file)
        library = skill_library(settings, req.skills_dirs, self.env, self.home)
        resume = self._resumed(req.resume, prompts) if req.resume is not None else None
        req = self.request
        host = req.host or (resume.started.host if resume else None) or "local"
        self.host = host
        prompter = None if req.non_interactive else LinePrompter(self.console)
        runner = make_runner(host, settings, prompter=prompter, notify=self._notify)
        timeout = settings.remote_skill_timeout
        replay: Replay | None = None
        try:
            await runner.connect()
            if resume is not None:
                ref = resume.started.skill_path
                if req.skill or not Path(ref).exists():
                    ref = req.skill or resume.started.skill
                skill = await find_skill(library, ref, runner, timeout=timeout)
                from kosmos.engine.resume import same_skill

                same_skill(resume, skill.name, req.skill)
                params = dict(resume.started.params)
            else:
                if not req.skill:
                    raise UsageError("name a skill to run, or pass --resume TRANSCRIPT")
                skill = await find_skill(library, req.skill, runner, timeout=timeout)
                given = parse_param_flags(req.params)
                if req.replay is not None:
                    from kosmos.runs.replay import load_replay

                    replay = load_replay(req.replay, skill.name, tolerant=req.replay_tolerant)
                    # The recorded parameters, unless the operator gives others.
                    given = {**replay.recording.started.params, **given}
                elif not req.non_interactive:
                    given = await self._dialogue(skill, given, prompts)
                params = resolve_params(skill, given, ask=self._asker())
            return await self._run_session(skill, params, runner, prompts, resume, replay)
        finally:
            await runner.close()

    def _resumed(self, path: Path, prompts: Prompts) -> Resumed | None:
        """The run `--resume` continues; None for a fleet host's run that never started,
        which becomes this run's request anew (into that file)."""
        # Loaded here: a fresh run has no use for reading a transcript back.
        from kosmos.runs.replay import Planned, load_resume

        resume = load_resume(path, prompts)
        if not isinstance(resume, Planned):
            return resume
        self.console.say(self.console.style(resume.note, "33"), stream=self.console.err)
        self.request = self.request.planned(resume.plan)
        return None

    def _asker(self) -> Callable[[Param], str | None] | None:
        """How a missing parameter is asked for: at the terminal, if a person is there."""
        if self.request.non_interactive:
            return None
        # The terminal's ways of asking are loaded only where someone can answer them.
        from kosmos.frontends.params_line import ask_param_in_terminal

        return ask_param_in_terminal(self.console)

    async def _dialogue(
        self, skill: Skill, given: dict[str, str], prompts: Prompts
    ) -> dict[str, str]:
        """The parameters after a dialogue with the LLM, where one is wanted."""
        from kosmos.frontends.params_line import collect_in_dialogue, dialogue_wanted

        if not dialogue_wanted(skill, given, self.settings, non_interactive=False):
            return given
        return await collect_in_dialogue(
            skill, given, self.settings, prompts, self.console, emit=self._early.append
        )

    async def _run_session(
        self,
        skill: Skill,
        params: dict[str, str],
        runner: Runner,
        prompts: Prompts,
        resume: Resumed | None = None,
        replay: Replay | None = None,
    ) -> int:
        req = self.request
        ready = prepare_run(
            skill,
            params,
            runner,
            settings=self.settings,
            prompts=prompts,
            operator=self._operator(),
            redactor=self.redactor,
            show=self._renderer(),
            choices=req.choices(),
            transcript=req.transcript,
            early=self._early,
            resume=resume,
            replay=replay,
        )
        self.session = ready.session
        overrides = None
        if ready.policy_from.startswith("config") and req.yes:
            overrides = f"policy {ready.policy} ({ready.policy_from}) overrides --yes"
        elif ready.policy_from.startswith("--policy, over "):
            overrides = (
                f"--policy {ready.policy} overrides {ready.policy_from[len('--policy, over ') :]}"
            )
        if overrides is not None:
            self.console.say(self.console.style(f"  {overrides}", "33"), stream=self.console.err)
        try:
            self.result = await drive(
                ready.session, ready.resume, console=self.console, line_mode=self.line_mode
            )
        finally:
            self.console.stop_spinner()
            await ready.close()
        return self.result.exit_code
