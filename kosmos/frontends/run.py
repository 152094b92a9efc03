"""`kosmos run`: build the parts of one run, hand them to the engine, render its events."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import signal
import sys
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kosmos.config import Settings, user_config_dir
from kosmos.engine.approval import Policy
from kosmos.engine.guard import redact_event
from kosmos.engine.operator import Operator
from kosmos.engine.resume import Resumed, resume_state
from kosmos.engine.session import Session, SessionOptions
from kosmos.errors import EXIT_INTERRUPTED, Aborted, KosmosError, SkillNotFound, UsageError
from kosmos.events import Event, Notice, RunFinished, RunStarted
from kosmos.frontends.console import Console
from kosmos.frontends.headless import HeadlessOperator
from kosmos.frontends.line import LineOperator, LinePrompter
from kosmos.frontends.params_line import collect_in_dialogue, dialogue_wanted
from kosmos.frontends.render import JsonRenderer, TextRenderer
from kosmos.hosts.factory import make_runner
from kosmos.hosts.local import LocalRunner
from kosmos.hosts.runner import Runner
from kosmos.llm.factory import make_provider
from kosmos.llm.provider import Provider
from kosmos.prompts import Prompts
from kosmos.resources import bundled_recording
from kosmos.safety import Redactor
from kosmos.skills.discovery import REMOTE_SKILLS_DIR, SkillLibrary, find_remote_skill
from kosmos.skills.model import Param, Skill
from kosmos.skills.params import parse_param_flags, resolve_params, validate_value
from kosmos.transcript import Transcript, default_path, read_transcript

if TYPE_CHECKING:
    from kosmos.engine.replay import Recording


@dataclass
class RunRequest:
    """What the operator asked for on the command line."""

    skill: str | None
    host: str | None = None
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
    policy: Policy | None = None
    allow_dangerous: bool = False
    resume: Path | None = None
    replay: str | None = None
    replay_tolerant: bool = False
    protocol: str | None = None
    # A fleet: every --host, a --hosts pattern, an inventory (issue: fleets).
    hosts: Sequence[str] = ()
    hosts_pattern: str | None = None
    inventory: Path | None = None
    forks: int = 10
    llm_concurrency: int | None = None
    canary: str | None = None
    # --canary-from: a finished run on one host that every host of this run replays.
    canary_from: Path | None = None
    # --shard K/N: this job takes only its share of the hosts (kosmos.fleet.shard).
    shard: str | None = None

    @property
    def fleet(self) -> bool:
        """More than one host, a pattern, an inventory, a canary or a shard: a fleet run."""
        return (
            len(self.hosts) > 1
            or self.hosts_pattern is not None
            or self.inventory is not None
            or self.canary is not None
            or self.canary_from is not None
            or self.shard is not None
        )


def resolve_policy(request: RunRequest, settings: Settings, host: str) -> tuple[Policy, str]:
    """`--policy` > the host's policy in config > `--yes` (auto) > ask; with where it came from.

    A host pinned in config (say, production at read-only) stays pinned under `--yes`; only
    an explicit `--policy` overrides it.
    """
    if request.policy:
        return request.policy, "--policy"
    # The target as typed, then without the user, then without the port too.
    bare = host.split("@", 1)[-1]
    for name in dict.fromkeys((host, bare, bare.rsplit(":", 1)[0])):
        pinned = settings.hosts.get(name)
        if pinned is not None and pinned.policy:
            return pinned.policy, f"config hosts.{name}.policy"
    if request.yes:
        return "auto", "--yes"
    return "ask", "default"


def load_events(path: Path, flag: str) -> list[Event]:
    try:
        return read_transcript(path)
    except FileNotFoundError:
        raise UsageError(f"{path}: no such transcript; check {flag}") from None
    except UsageError as e:  # the file and line that is not a kosmos event
        raise UsageError(f"{e}; check {flag}") from None
    except OSError as e:
        raise UsageError(f"{path}: not a readable kosmos transcript ({e}); check {flag}") from e


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
        # Every secret kosmos knows of is masked in everything it shows, stores or sends.
        self.redactor = Redactor(settings.secrets(), env=env)
        self.host = request.host or "local"
        self.result: RunFinished | None = None
        # Events from before the run started (the parameter dialogue, notices from connecting),
        # for the transcript.
        self._early: list[Event] = []
        self._emit: Callable[[Event], None] | None = None

    def _operator(self) -> Operator:
        # `--yes` is the `auto` policy, applied by the engine; the operator is asked only about
        # what the policy leaves to a person (dangerous, inferred, interrupted commands...).
        if self.line_mode:
            return LineOperator(self.console, answers=self.request.answers)
        return HeadlessOperator(yes=False, answers=self.request.answers)

    def _emitter(self, transcript: Transcript) -> Callable[[Event], None]:
        renderer: Callable[[Event], None]
        renderer = JsonRenderer() if self.request.json else TextRenderer(self.console)
        json_mode = self.request.json

        def emit(event: Event) -> None:
            # The session redacts what it emits; this catches what the front end adds.
            transcript.write(event)
            if isinstance(event, RunStarted):
                for early in self._early:
                    early = redact_event(early, self.redactor)
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
        """A host's news (a reconnect, a host key added while connecting): into the run's
        events once the run has started; before that, shown now and kept for the transcript."""
        message = self.redactor(message)
        if self._emit is not None:
            self._emit(Notice(message=message, host=self.host))
        else:
            self.console.say(self.console.style(message, "33"), stream=self.console.err)
            self._early.append(Notice(message=message, host=self.host))

    def fail_early(self, error: KosmosError) -> int:
        """An error before the session started: one line on stderr (and a --json result line)."""
        message = self.redactor(str(error))
        self.console.error(f"kosmos: {message}")
        if self.request.json:
            JsonRenderer()(
                RunFinished(
                    status=error.status, steps=0, message=message, exit_code=error.exit_code
                )  # type: ignore[arg-type]
            )
        return error.exit_code

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
        resume: Resumed | None = None
        if req.resume is not None:
            events = load_events(req.resume, "--resume")
            resume = resume_state(events, prompts, source=str(req.resume))
        host = req.host or (resume.started.host if resume else None) or "local"
        self.host = host
        prompter = None if req.non_interactive else LinePrompter(self.console)
        runner = make_runner(host, settings, prompter=prompter, notify=self._notify)
        replay: tuple[Recording, bool] | None = None
        try:
            await runner.connect()
            if resume is not None:
                ref = resume.started.skill_path
                if req.skill or not Path(ref).exists():
                    ref = req.skill or resume.started.skill
                skill = await find_skill(library, ref, runner, settings)
                params = dict(resume.started.params)
            else:
                if not req.skill:
                    raise UsageError("name a skill to run, or pass --resume TRANSCRIPT")
                skill = await find_skill(library, req.skill, runner, settings)
                ask = None if req.non_interactive else ask_param_in_terminal(self.console)
                given = parse_param_flags(req.params)
                replay = self._recording(skill)
                if replay is not None:
                    # The recorded parameters, unless the operator gives others.
                    given = {**replay[0].started.params, **given}
                elif dialogue_wanted(skill, given, settings, non_interactive=req.non_interactive):
                    given = await collect_in_dialogue(
                        skill, given, settings, prompts, self.console, emit=self._early.append
                    )
                params = resolve_params(skill, given, ask=ask)
            return await self._run_session(skill, params, runner, prompts, resume, replay)
        finally:
            await runner.close()

    def _replay_warner(self, session: Session) -> Callable[[str], None]:
        """Where the replayed run's outputs differ: a notice each, or one for a bundled demo."""
        if self.request.replay != "bundled":
            return lambda text: session.emit(Notice(message=text))
        shown = False

        def once(text: str) -> None:
            nonlocal shown
            if not shown:
                shown = True
                session.emit(
                    Notice(
                        message=f"{text}; expected: the recording was made on another host "
                        "(further differences are not shown)"
                    )
                )

        return once

    def _recording(self, skill: Skill) -> tuple[Recording, bool] | None:
        """The recording to replay, and whether differences only warn."""
        ref = self.request.replay
        if ref is None:
            return None
        tolerant = self.request.replay_tolerant
        path = Path(ref)
        if ref == "bundled":
            # Recorded on another machine: its outputs differ from this one's by nature.
            path, tolerant = bundled_recording(skill.name), True
            if not path.is_file():
                raise UsageError(
                    f"no bundled recording for {skill.name}; "
                    "try: kosmos run system-overview --replay bundled"
                )
        from kosmos.engine.replay import Recording

        recording = Recording.from_events(load_events(path, "--replay"), str(path))
        if recording.started.skill != skill.name:
            raise UsageError(
                f"{path} records a run of {recording.started.skill}, not {skill.name}; "
                f"try: kosmos run {recording.started.skill} --replay {ref}"
            )
        return recording, tolerant

    async def run_loaded(
        self, skill: Skill, params: dict[str, str], runner: Runner, prompts: Prompts
    ) -> RunFinished:
        """Run a loaded skill with resolved params on a connected runner (`kosmos chat`)."""
        await self._run_session(skill, params, runner, prompts)
        assert self.result is not None
        return self.result

    async def _run_session(
        self,
        skill: Skill,
        params: dict[str, str],
        runner: Runner,
        prompts: Prompts,
        resume: Resumed | None = None,
        replay: tuple[Recording, bool] | None = None,
    ) -> int:
        req, settings = self.request, self.settings
        run_id = uuid.uuid4().hex
        assert settings.transcript_dir is not None
        path = (
            req.transcript
            or req.resume
            or default_path(settings.transcript_dir, skill.name, run_id)
        )
        if resume is not None and req.resume is not None:
            same = path.resolve() == req.resume.resolve()
            resume = dataclasses.replace(resume, same_transcript=same)
        transcript = Transcript(path)
        policy, policy_from = resolve_policy(req, settings, runner.name)
        operator = self._operator()
        provider: Provider
        if replay is not None:
            from kosmos.engine.replay import ReplayOperator, ReplayProvider

            recording, tolerant = replay
            provider = ReplayProvider(recording, tolerant=tolerant)
            operator = ReplayOperator(recording.decided, operator)
        else:
            provider = make_provider(settings)
        started = resume.started if resume else None
        recorded_protocol = None
        recorded_memory = False
        if started is not None:
            recorded_protocol, recorded_memory = started.protocol, started.memory
        elif replay is not None:
            recorded_protocol = replay[0].started.protocol
            recorded_memory = replay[0].started.memory
        options = SessionOptions(
            max_steps=req.max_steps or (started.max_steps if started else settings.max_steps),
            command_timeout=req.command_timeout or skill.timeout or settings.command_timeout,
            knowledge_timeout=settings.knowledge_timeout,
            history_mode=started.history_mode if started else skill.history_mode,
            history_max=skill.history_max,
            prompt=started.prompt if started else req.prompt,
            non_interactive=req.non_interactive,
            policy=policy,
            allow_dangerous=req.allow_dangerous,
            # --protocol > the recorded run's (resume, replay) > the skill's frontmatter > the
            # config file > tags.
            protocol=req.protocol or recorded_protocol or skill.protocol or settings.protocol,
            memory=settings.memory or recorded_memory,
            memory_dir=settings.memory_dir,
        )
        self._emit = self._emitter(transcript)
        session = Session(
            skill,
            params=params,
            runner=runner,
            provider=provider,
            operator=operator,
            prompts=prompts,
            emit=self._emit,
            options=options,
            run_id=run_id,
            transcript=str(path),
            redactor=self.redactor,
        )
        if replay is not None:
            from kosmos.engine.replay import ReplayGate, ReplayProvider

            assert isinstance(provider, ReplayProvider)
            session.replay_of = provider.recording.source
            recorded = provider.recording
            session.gate = ReplayGate(
                recorded.decided, session.gate, interrupted=recorded.interrupted
            )
            provider.warn = self._replay_warner(session)
        self.session = session
        if policy_from.startswith("config") and req.yes:
            self.console.say(
                self.console.style(f"  policy {policy} ({policy_from}) overrides --yes", "33"),
                stream=self.console.err,
            )
        try:
            result = self.result = await self._drive(session, resume)
        finally:
            self._emit = None
            self.console.stop_spinner()
            transcript.close()
            await provider.aclose()
        return result.exit_code

    async def _drive(self, session: Session, resume: Resumed | None = None) -> RunFinished:
        """Run the session with Ctrl-C / SIGTERM handling: stop the command, or end the run."""
        loop = asyncio.get_running_loop()
        task = asyncio.ensure_future(session.run(resume))

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
