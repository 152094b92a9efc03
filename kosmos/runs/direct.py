"""A host opened for single commands and file reads, outside a skill session.

`open_host` connects the host and gives a `DirectHost` (`kosmos.engine.direct`) under the
host's approval policy, with a transcript of every decision and result; `run_command` and
`read_file` do one call on a host opened for it. A front end that offers these as tools
(an MCP server) brings its operator and, when a person can be asked while connecting, its
prompter.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path

from kosmos.config import Settings
from kosmos.engine.direct import CommandOutcome, DirectHost, DirectOptions, FileOutcome
from kosmos.engine.operator import Operator
from kosmos.events import Event
from kosmos.hosts.factory import make_runner
from kosmos.hosts.lock import learn_lock
from kosmos.hosts.runner import HostPrompter
from kosmos.prompts import Prompts
from kosmos.runs.assembly import RunChoices, Show, TranscriptSink
from kosmos.runs.policy import resolve_policy
from kosmos.runs.redactor import run_redactor
from kosmos.transcript import default_path

# What a transcript of single commands is named after, where a run's names its skill.
DIRECT_TRANSCRIPT = "direct"


@contextlib.asynccontextmanager
async def open_host(
    host: str,
    *,
    settings: Settings,
    operator: Operator,
    env: Mapping[str, str],
    choices: RunChoices | None = None,
    prompter: HostPrompter | None = None,
    notify: Callable[[str], None] | None = None,
    show: Show | None = None,
    transcript: Path | None = None,
) -> AsyncIterator[DirectHost]:
    """The connected host, ready for `run_command` and `read_file`; closed on the way out.

    The policy is the run's (`--policy`, the host's config, `--yes`, else ask); each call's
    events go to the transcript (default: a new one under the transcript folder), then
    `show`. Raises HostError when the host cannot be reached.
    """
    choices = choices or RunChoices()
    assert settings.transcript_dir is not None
    path = transcript or default_path(settings.transcript_dir, DIRECT_TRANSCRIPT, uuid.uuid4().hex)
    redactor = run_redactor(settings, env)
    runner = make_runner(host, settings, prompter=prompter, notify=notify)
    policy, _ = resolve_policy(settings, runner.name, flag=choices.policy, yes=choices.yes)
    options = DirectOptions(
        policy=policy,
        non_interactive=choices.non_interactive,
        allow_dangerous=choices.allow_dangerous,
        command_timeout=choices.command_timeout or settings.command_timeout,
    )
    sink = TranscriptSink(path, redactor)

    def emit(event: Event) -> None:
        sink(event)
        if show is not None:
            show(event)

    try:
        await runner.connect()
        # What the host's kernel lock offers, learnt before the first command runs unasked.
        await learn_lock(runner, timeout=settings.knowledge_timeout)
        prompts = Prompts.load(settings.prompts_file)
        yield DirectHost(runner, operator, prompts, emit, options=options, redactor=redactor)
    finally:
        sink.close()
        await runner.close()


async def run_command(
    host: str,
    command: str,
    *,
    settings: Settings,
    operator: Operator,
    env: Mapping[str, str],
    choices: RunChoices | None = None,
) -> CommandOutcome:
    """One command on `host` through its approval policy and the gate; what became of it."""
    async with open_host(
        host, settings=settings, operator=operator, env=env, choices=choices
    ) as direct:
        return await direct.run_command(command)


async def read_file(
    host: str,
    path: str,
    *,
    settings: Settings,
    operator: Operator,
    env: Mapping[str, str],
    choices: RunChoices | None = None,
) -> FileOutcome:
    """One file's text from `host`, judged as `cat PATH`, capped and redacted."""
    async with open_host(
        host, settings=settings, operator=operator, env=env, choices=choices
    ) as direct:
        return await direct.read_file(path)
