"""`run_skill`: a whole skill with kosmos's own LLM, on one host or on a fleet.

One host runs as `kosmos run` does (the local skill library, then the host's own skills); a
fleet runs as `kosmos run --host A --host B` does, with one approval for every host that
proposes the same command and, when asked, a canary that runs first. Each step's news is an
MCP progress notification; the result names each host's end and the transcripts.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence

from mcp.server.mcpserver.exceptions import ToolError

from kosmos.events import Event, Notice, RunFinished
from kosmos.fleet.adapters import NamedRunner
from kosmos.fleet.approvals import ApprovalBroker
from kosmos.fleet.journal import Journal
from kosmos.fleet.orchestrator import Fleet
from kosmos.fleet.results import FleetFinished
from kosmos.fleet.targets import HostSpec
from kosmos.hosts.factory import make_runner
from kosmos.hosts.runner import Runner
from kosmos.llm.factory import make_provider
from kosmos.mcp.asking import Asker, ElicitingDesk, ElicitingOperator
from kosmos.mcp.calls import who_decides
from kosmos.mcp.models import HostOutcome, SkillRunResult
from kosmos.mcp.options import McpOptions
from kosmos.mcp.progress import Progress
from kosmos.prompts import Prompts
from kosmos.runs.assembly import RunChoices, prepare_run
from kosmos.runs.fleet import FleetRecorder, FleetSessions, fleet_run_dir, write_fleet_result
from kosmos.runs.redactor import run_redactor
from kosmos.runs.skills import find_skill, skill_library
from kosmos.seal import key_bytes
from kosmos.skills.params import resolve_params


def _outcome(host: str, r: RunFinished) -> HostOutcome:
    return HostOutcome(
        host=host,
        status=r.status,
        message=r.message,
        exit_code=r.exit_code,
        steps=r.steps,
        commands_run=r.commands_run,
        transcript=r.transcript,
    )


class SkillRuns:
    """The server's skill runs; each builds its parts through run assembly."""

    def __init__(self, options: McpOptions) -> None:
        self.options = options

    def _choices(self, asker: Asker) -> RunChoices:
        return RunChoices(policy=self.options.policy, non_interactive=not asker.can_ask)

    def _runner(self, name: str) -> Runner:
        o = self.options
        target = o.target(name)
        runner = make_runner(target, o.settings, prompter=None, ssh_config=o.ssh_config)
        return NamedRunner(runner, name) if runner.name != name else runner

    async def run(
        self,
        asker: Asker,
        progress: Progress,
        skill: str,
        *,
        hosts: Sequence[str],
        params: Mapping[str, str],
        canary: str | None = None,
    ) -> SkillRunResult:
        if len(hosts) == 1 and canary is None:
            return await self._one(asker, progress, skill, hosts[0], params)
        return await self._fleet(asker, progress, skill, hosts, params, canary)

    async def _one(
        self, asker: Asker, progress: Progress, ref: str, host: str, params: Mapping[str, str]
    ) -> SkillRunResult:
        o, settings = self.options, self.options.settings
        prompts = Prompts.load(settings.prompts_file)
        library = skill_library(settings, o.skills_dirs, o.env, o.home)
        runner = self._runner(host)
        try:
            await runner.connect()
            skill = await find_skill(library, ref, runner, timeout=settings.remote_skill_timeout)
            resolved = resolve_params(skill, dict(params))
            ready = prepare_run(
                skill,
                resolved,
                runner,
                settings=settings,
                prompts=prompts,
                operator=ElicitingOperator(asker, policy=o.policy),
                redactor=run_redactor(settings, o.env),
                show=progress.show,
                choices=self._choices(asker),
                early=[Notice(message=who_decides(asker, o.policy))],
            )
            finished = await ready.run()
        finally:
            await runner.close()
        return SkillRunResult(
            skill=skill.name,
            status=finished.status,
            message=finished.message,
            exit_code=finished.exit_code,
            hosts=[_outcome(runner.name, finished)],
            transcripts=str(ready.path),
        )

    async def _fleet(
        self,
        asker: Asker,
        progress: Progress,
        ref: str,
        hosts: Sequence[str],
        params: Mapping[str, str],
        canary: str | None,
    ) -> SkillRunResult:
        o, settings = self.options, self.options.settings
        specs = [HostSpec(name, o.target(name)) for name in dict.fromkeys(hosts)]
        if canary is not None and canary not in {s.name for s in specs}:
            raise ToolError(f"canary: {canary!r} is not one of hosts; name one of them")
        prompts = Prompts.load(settings.prompts_file)
        # As `kosmos run` on many hosts: the local library only (no host is asked first).
        skill = skill_library(settings, o.skills_dirs, o.env, o.home).find(ref)
        resolved = resolve_params(skill, dict(params))
        redactor = run_redactor(settings, o.env)
        run_id = uuid.uuid4().hex
        run_dir = fleet_run_dir(settings, skill.name, run_id)
        journal = Journal(run_dir, key=key_bytes(settings.seal_key))
        note = who_decides(asker, o.policy)
        for spec in specs:
            journal.write(Notice(message=note, host=spec.name))
        broker = ApprovalBroker(ElicitingDesk(asker, policy=o.policy, hosts=len(specs)))
        sessions = FleetSessions(
            skill,
            resolved,
            settings,
            prompts,
            redactor,
            journal,
            choices=self._choices(asker),
            run_id=run_id,
        )
        # Each host's file, a plan kept for one that never ran, a full disk stopping the fleet.
        recorder = FleetRecorder(sessions)

        def on_event(event: Event) -> None:
            recorder(event)
            progress.show(event)

        provider = make_provider(settings)
        fleet = Fleet(
            specs,
            open_runner=lambda spec: make_runner(
                spec.target, settings, prompter=None, ssh_config=o.ssh_config
            ),
            make_operator=lambda spec: broker.desk_for(spec.name),
            make_session=sessions,
            provider=provider,
            forks=o.forks,
            canary=canary,
            on_event=on_event,
            redact=redactor,
            skill=skill.name,
        )
        recorder.fleet = fleet
        try:
            result: FleetFinished = await fleet.run()
        finally:
            await broker.aclose()
            journal.close()
            await provider.aclose()
            if fleet.result is not None:
                write_fleet_result(run_dir, fleet.result, journal)
        return SkillRunResult(
            skill=skill.name,
            status="done" if result.exit_code == 0 else "failed",
            message=result.message,
            exit_code=result.exit_code,
            hosts=[
                HostOutcome(
                    host=h.host,
                    status=h.status,
                    message=h.message,
                    exit_code=h.exit_code,
                    steps=h.steps,
                    commands_run=h.commands_run,
                    transcript=h.transcript,
                    report_from=h.report_from,
                )
                for h in result.hosts
            ],
            transcripts=str(run_dir),
            fleet_report=result.report.text if result.report else None,
        )
