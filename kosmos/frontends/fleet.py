"""`kosmos run SKILL` on many hosts: build the fleet's parts, show its table, print its summary."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import signal
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

from msgspec.structs import replace

from kosmos import errors
from kosmos.config import Settings
from kosmos.engine.guard import visible
from kosmos.engine.operator import Operator
from kosmos.errors import KosmosError, RecordError, UsageError
from kosmos.events import Event, Notice
from kosmos.fleet.approvals import ApprovalBroker
from kosmos.fleet.canary import CanaryRecord
from kosmos.fleet.journal import Journal, refuse_earlier_run
from kosmos.fleet.orchestrator import Fleet
from kosmos.fleet.plan import FleetPlan, hold_plan, write_plan
from kosmos.fleet.results import (
    FleetFinished,
    fleet_result,
    lock_lines,
    reason_lines,
    report_lines,
    summary_lines,
)
from kosmos.fleet.shard import Shard, parse_shard
from kosmos.fleet.targets import HostSpec, resolve_hosts
from kosmos.frontends.console import Console
from kosmos.frontends.fleet_view import FleetView, LineFleetDesk
from kosmos.frontends.headless import HeadlessOperator
from kosmos.frontends.params_line import ask_param_in_terminal
from kosmos.frontends.render import JsonRenderer
from kosmos.frontends.request import RunRequest
from kosmos.frontends.terminal import fail_early
from kosmos.hosts.factory import make_runner
from kosmos.hosts.runner import Runner
from kosmos.hosts.sshconfig import SSHConfigFile, local_user
from kosmos.llm.factory import make_provider
from kosmos.prompts import Prompts
from kosmos.runs.fleet import FleetRecorder, FleetSessions, fleet_run_dir, write_fleet_result
from kosmos.runs.fleet_resume import FleetResume, load_fleet
from kosmos.runs.redactor import run_redactor
from kosmos.runs.skills import skill_library
from kosmos.seal import key_bytes, verify_file
from kosmos.skills.model import Skill
from kosmos.skills.params import parse_param_flags, resolve_params
from kosmos.transcript import read_transcript


class FleetFrontend:
    """One skill on many hosts, in line mode or headless; transcripts in one run directory."""

    def __init__(
        self, request: RunRequest, settings: Settings, *, env: dict[str, str], home: Path
    ) -> None:
        self.request = request
        self.settings = settings
        self.env = env
        self.home = home
        self.line_mode = not request.non_interactive
        self.console = Console(out=sys.stderr) if request.json else Console()
        self.redactor = run_redactor(settings, env)
        self.broker: ApprovalBroker | None = None
        self.on_event: Callable[[Event], None] | None = None
        self.fleet: Fleet | None = None
        self.journal: Journal | None = None
        # A lock on the fleet's plan while this run drives it (kosmos.fleet.plan.hold_plan).
        self.plan_lock: int | None = None
        # Why a --canary-from file's decisions do not stand here (it is not signed with the key).
        self.seal_note = ""
        # No one reads the output any more (`| head`): the fleet stops, as SIGPIPE would end it.
        self.console.on_closed = lambda: self.stop(errors.OutputClosed())

    def stop(self, error: KosmosError) -> None:
        """End the fleet early (its output or transcripts cannot be written)."""
        if self.fleet is not None:
            self.fleet.stop(error)

    def fail_early(self, error: KosmosError) -> int:
        """An error before the fleet started: one line on stderr (and a --json result line)."""
        return fail_early(error, self.console, self.redactor, json=self.request.json)

    def hosts(self) -> list[HostSpec]:
        """The run's hosts; with --shard K/N, only this job's share of them."""
        req = self.request
        shard = self.shard  # a bad K/N is refused before anything is looked up
        hosts = resolve_hosts(
            req.hosts,
            req.hosts_pattern,
            inventory=req.inventory,
            ssh_config=self.ssh_config,
        )
        if shard is not None:
            hosts = [h for h in hosts if shard.takes(h.name)]
        return hosts

    @functools.cached_property
    def shard(self) -> Shard | None:
        return parse_shard(self.request.shard) if self.request.shard else None

    def canary_record(self, skill: Skill) -> CanaryRecord | None:
        """--canary-from: the recorded run every host replays."""
        source = self.request.canary_from
        if source is None:
            return None
        if self.request.canary is not None:
            raise UsageError("--canary and --canary-from: give one (a host, or a transcript)")
        try:
            events = read_transcript(source)
            sealed = verify_file(source, key_bytes(self.settings.seal_key))
        except OSError as e:
            raise UsageError(f"--canary-from {source}: {e.strerror or e}") from None
        except UsageError as e:  # names the file and the line that is not a kosmos event
            raise UsageError(f"--canary-from {e}") from None
        if sealed.trust == "unsealed":
            raise UsageError(
                f"--canary-from {sealed.note}; record the canary again with this kosmos"
            )
        record = CanaryRecord.from_transcript(events, str(source), skill.name)
        # Only a seal signed with this operator's key vouches for the canary's "all hosts".
        record.trusted = sealed.trust == "signed"
        if not record.trusted:
            self.seal_note = (
                f"--canary-from {sealed.note}: every write the canary's operator approved is "
                "asked here (headless: refused unless --yes)"
            )
        return record

    @functools.cached_property
    def ssh_config(self) -> SSHConfigFile:
        """~/.ssh/config, read once for the whole fleet: aliases, and every host's settings."""
        return SSHConfigFile(self.home / ".ssh" / "config", local_user())

    def open_runner(self, spec: HostSpec) -> Runner:
        prompter = self.broker.desk_for(spec.name) if self.broker is not None else None

        def notify(message: str) -> None:
            if self.on_event is not None:
                self.on_event(Notice(message=self.redactor(message), host=spec.name))

        return make_runner(
            spec.target, self.settings, prompter=prompter, notify=notify, ssh_config=self.ssh_config
        )

    async def run(self) -> int:
        settings = self.settings
        prompts = Prompts.load(settings.prompts_file)
        resumed = self._resumed(prompts)
        req = self.request
        if req.resume is not None or req.replay is not None:
            raise UsageError(
                "--replay plays one host's run again; run it with one --host (--resume takes "
                "a host's HOST.jsonl, or a fleet's run directory)"
            )
        if not req.skill:
            raise UsageError("name a skill to run on the hosts")
        hosts = resumed.plan.specs() if resumed is not None else self.hosts()
        skill = skill_library(settings, req.skills_dirs, self.env, self.home).find(req.skill)
        # Said once for the fleet, not once per host.
        for warning in skill.warnings:
            self.console.say(
                self.console.style(f"  ! skill file: {warning}", "33"), stream=self.console.err
            )
        skill = replace(skill, warnings=())
        replayed = self.canary_record(skill)
        if resumed is not None and resumed.canary_record is not None:
            replayed = resumed.canary_record
        ask = None if req.non_interactive else ask_param_in_terminal(self.console)
        params = resolve_params(skill, parse_param_flags(req.params), ask=ask)
        if replayed is not None:  # refused before any host is touched
            protocol = req.protocol or skill.protocol or settings.protocol
            replayed.check(skill, params, prompt=req.prompt, protocol=protocol)
            if self.seal_note:
                self.console.say(
                    self.console.style(f"  ! {self.seal_note}", "33"), stream=self.console.err
                )
        run_id = resumed.plan.run_id if resumed is not None else uuid.uuid4().hex
        run_dir = req.transcript or fleet_run_dir(settings, skill.name, run_id, shard=self.shard)
        if run_dir.exists() and not run_dir.is_dir():
            raise UsageError(
                f"--transcript {run_dir}: a fleet writes one transcript per host into a "
                "directory; give a directory (new or existing)"
            )
        if resumed is None:
            refuse_earlier_run(run_dir)
        if not hosts and self.shard is not None:
            # A job of a matrix that this fleet's split leaves nothing to: done, and said so.
            # Its fleet.json is sealed like any shard's, so that the merge takes it.
            self.journal = Journal(run_dir, key=key_bytes(settings.seal_key))
            result = fleet_result([], 0.0, skill=skill.name, shard=str(self.shard))
            self.console.say(f"shard {self.shard} takes none of this run's hosts")
            return self._report(result, run_dir, canary=False)
        journal = Journal(run_dir, key=key_bytes(settings.seal_key))
        self.journal = journal
        provider = make_provider(settings)
        json_out = JsonRenderer(console=self.console) if req.json else None
        sessions = FleetSessions(
            skill,
            params,
            settings,
            prompts,
            self.redactor,
            journal,
            choices=req.choices(),
            run_id=run_id,
            resumes=dict(resumed.resumes) if resumed is not None else {},
        )
        recorder = FleetRecorder(sessions)

        def on_event(event: Event) -> None:
            recorder(event)
            if json_out is not None:
                json_out(event)
            view(event)

        def make_operator(spec: HostSpec) -> Operator:
            if self.broker is not None:
                return self.broker.desk_for(spec.name)
            # `--yes` is the `auto` policy, applied by the engine per host.
            return HeadlessOperator(answers=req.answers)

        fleet = Fleet(
            hosts,
            open_runner=self.open_runner,
            make_operator=make_operator,
            make_session=sessions,
            provider=provider,
            forks=req.forks,
            llm_concurrency=req.llm_concurrency,
            canary=req.canary,
            canary_record=replayed,
            on_event=on_event,
            redact=self.redactor,
            skill=skill.name,
            shard=str(self.shard) if self.shard else None,
            transcript_of=journal.path,
            resumes=resumed.resumes if resumed is not None else None,
        )
        recorder.fleet = self.fleet = fleet
        if resumed is not None:
            resumed.keep_ended(fleet)
            self.plan_lock = resumed.hold
        else:  # before any host starts: what `kosmos run --resume DIR` finishes
            write_plan(run_dir, self._plan(run_id, skill, params, hosts))
            self.plan_lock = hold_plan(run_dir)
        # A terminal gets the live table (on stderr); a log gets one line per event (on
        # stdout, beside the summary), unless stdout carries --json.
        live = self.console.err.isatty()
        stream = self.console.err if live or req.json else self.console.out
        view = FleetView(self.console, fleet, stream=stream, live=live, quiet=req.json)
        if self.line_mode:
            desk = LineFleetDesk(self.console, view, answers=req.answers)
            self.broker = ApprovalBroker(desk)
        self.on_event = on_event
        if not req.json:
            where = f" · canary {req.canary}" if req.canary else ""
            where += f" · replaying {req.canary_from}" if replayed is not None else ""
            where += f" · shard {self.shard}" if self.shard else ""
            self.console.say(
                self.console.style(f"▶ {visible(skill.name, one_line=True)}", "1")
                + f" on {len(hosts)} hosts · forks {req.forks}{where} · model {settings.model}",
                stream=stream,
            )
        view.start()
        try:
            result = await self._drive(fleet)
        finally:
            await view.stop()
            if self.broker is not None:
                await self.broker.aclose()
            await provider.aclose()
        if self.plan_lock is not None:
            os.close(self.plan_lock)
            self.plan_lock = None
        try:
            journal.close()
        except RecordError as e:
            self.console.error(f"kosmos: {e}")
            result = replace(result, exit_code=e.exit_code)
        return self._report(result, run_dir, canary=req.canary is not None or replayed is not None)

    def _resumed(self, prompts: Prompts) -> FleetResume | None:
        """`--resume DIR`: the killed fleet to finish; this run's request becomes its plan's."""
        directory = self.request.resume
        if directory is None or not directory.is_dir():
            return None
        resumed = load_fleet(directory, prompts, key_bytes(self.settings.seal_key))
        self.request = self.request.from_plan(resumed.plan, directory)
        stream = self.console.err
        for line in [resumed.line(), *resumed.notes]:
            self.console.say(self.console.style(f"  {line}", "33"), stream=stream)
        return resumed

    def _plan(
        self, run_id: str, skill: Skill, params: dict[str, str], hosts: list[HostSpec]
    ) -> FleetPlan:
        req = self.request
        return FleetPlan(
            run_id=run_id,
            skill=skill.name,
            skill_path=skill.path,
            params=dict(params),
            hosts=[(h.name, h.target) for h in hosts],
            prompt=req.prompt,
            policy=req.policy,
            forks=req.forks,
            llm_concurrency=req.llm_concurrency,
            max_steps=req.max_steps,
            command_timeout=req.command_timeout,
            protocol=req.protocol,
            allow_dangerous=req.allow_dangerous,
            canary=req.canary,
            canary_from=str(req.canary_from.resolve()) if req.canary_from else None,
            shard=req.shard,
        )

    async def _drive(self, fleet: Fleet) -> FleetFinished:
        """Run the fleet; Ctrl-C or SIGTERM ends every host's run and still prints the summary."""
        loop = asyncio.get_running_loop()
        task = asyncio.ensure_future(fleet.run())
        installed = []
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, task.cancel)
                installed.append(sig)
        try:
            return await task
        except asyncio.CancelledError:
            assert fleet.result is not None
            return fleet.result
        finally:
            for sig in installed:
                loop.remove_signal_handler(sig)

    def _report(self, result: FleetFinished, run_dir: Path, *, canary: bool) -> int:
        """Write fleet.json and print the summary; the fleet's exit code."""
        code = result.exit_code
        try:
            write_fleet_result(run_dir, result, self.journal)
        except RecordError as e:
            self.console.error(f"kosmos: {e}")
            code = e.exit_code
        c = self.console
        out = c.err if self.request.json else c.out
        for line in [*summary_lines(result, canary=canary), *reason_lines(result)]:
            c.say(line, stream=out)
        for line in [*report_lines(result), *lock_lines(result)]:
            c.say(line, stream=out)
        color = "32" if result.exit_code == 0 else "31"
        message = visible(result.message)
        c.say(c.style(f"■ {message} · {result.duration_s:.1f}s", color), stream=out)
        where = f"  transcripts: {run_dir} (read them: kosmos log {run_dir})"
        c.say(c.style(where, "2"), stream=c.err)
        if result.exit_code != 0 and self.request.json:
            c.error(f"kosmos: {result.message}")
        return code
