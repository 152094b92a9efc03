"""`run_command` and `read_file`: one call on a host, on the road a skill's steps take.

Each call opens the host under the server's policy, judges the command (or the read, as `cat
PATH`) with the same gate and kernel lock as a skill's `[CMD]` and `[GET-FILE]`, asks the
client's person where the policy leaves it to one, and writes every decision and result to a
transcript of its own. What does not run is the tool's error, with the reason.
"""

from __future__ import annotations

import uuid
from contextlib import AbstractAsyncContextManager
from pathlib import Path

from mcp.server.mcpserver.exceptions import ToolError

from kosmos.engine.commands import CommandOutcome
from kosmos.engine.direct import DirectHost
from kosmos.engine.guard import visible
from kosmos.events import CommandFinished, Event, Notice
from kosmos.mcp.asking import Asker, ElicitingOperator
from kosmos.mcp.models import CommandResult, FileResult
from kosmos.mcp.options import McpOptions
from kosmos.runs.assembly import RunChoices
from kosmos.runs.direct import DIRECT_TRANSCRIPT, open_host
from kosmos.transcript import default_path


def who_decides(asker: Asker, policy: str) -> str:
    """The transcript's note on who `operator` is in this run's decisions."""
    if asker.can_ask:
        return (
            f"policy {policy}; decisions by `operator` are the person at {asker.client}, "
            "asked through MCP elicitation"
        )
    return (
        f"policy {policy}; {asker.client} cannot ask a person (no elicitation): "
        "what the policy leaves to one is not run"
    )


class HostCalls:
    """The server's single calls on hosts, each under its own transcript."""

    def __init__(self, options: McpOptions) -> None:
        self.options = options

    def _transcript(self) -> Path:
        settings = self.options.settings
        assert settings.transcript_dir is not None
        return default_path(settings.transcript_dir, DIRECT_TRANSCRIPT, uuid.uuid4().hex)

    def _open(
        self, host: str, asker: Asker, path: Path, show: list[Event]
    ) -> AbstractAsyncContextManager[DirectHost]:
        o = self.options
        return open_host(
            o.target(host),
            settings=o.settings,
            operator=ElicitingOperator(asker, policy=o.policy),
            env=o.env,
            choices=RunChoices(policy=o.policy, non_interactive=not asker.can_ask),
            show=show.append,
            transcript=path,
        )

    async def run_command(self, asker: Asker, host: str, command: str) -> CommandResult:
        """Run `command` on `host` if the policy or the client's person lets it."""
        if not command.strip():
            raise ToolError("command: empty; give the shell command to run")
        path = self._transcript()
        events: list[Event] = []
        async with self._open(host, asker, path, events) as direct:
            direct.emit(Notice(message=who_decides(asker, self.options.policy)))
            outcome = await direct.run_command(command)
        if not outcome.ran:
            raise ToolError(self._not_run(direct, asker, outcome))
        finished = [e for e in events if isinstance(e, CommandFinished)]
        d = outcome.decision
        return CommandResult(
            host=direct.runner.name,
            command=outcome.command,
            exit_code=outcome.exit_code,
            output=outcome.output,
            verdict=d.risk,
            reason=d.reason,
            decided_by=d.by,
            asked=d.asked,
            locked=bool(finished and finished[-1].locked),
            timed_out=outcome.timed_out,
            cancelled=outcome.cancelled,
            duration_s=round(outcome.duration_s, 3),
            transcript=str(path),
        )

    def _not_run(self, direct: DirectHost, asker: Asker, outcome: CommandOutcome) -> str:
        d, host = outcome.decision, direct.runner.name
        shown = f"`{visible(outcome.proposed)}` on {visible(host, one_line=True)}"
        if outcome.sudo_declined:
            return (
                f"not run: {shown} calls sudo, which wants a password, and kosmos does not ask "
                "for passwords through MCP; run it without sudo, or give the user NOPASSWD"
            )
        if d.action == "refused":
            return f"refused: {shown}: {visible(d.reason)}"
        if d.by == "policy":
            return (
                f"not run: {shown} is {d.risk} ({visible(d.reason)}) and the {self.options.policy} "
                f"policy leaves it to a person, whom {asker.client} cannot ask (it offers no "
                "elicitation); use a client that does, or start kosmos mcp with another --policy"
            )
        return f"not run: the person at {asker.client} declined {shown}"

    async def read_file(self, asker: Asker, host: str, path: str) -> FileResult:
        """Read `path` on `host` as a [GET-FILE] does, if the policy or the person lets it."""
        if not path.strip():
            raise ToolError("path: empty; give the path of the file to read")
        transcript = self._transcript()
        async with self._open(host, asker, transcript, []) as direct:
            direct.emit(Notice(message=who_decides(asker, self.options.policy)))
            outcome = await direct.read_file(path)
        if outcome.status != "done":
            d = outcome.decision
            if outcome.status == "skipped" and d.by == "policy":
                raise ToolError(
                    f"not read: {visible(path)} on {visible(direct.runner.name, one_line=True)} "
                    f"needs a person's yes under the {self.options.policy} policy "
                    f"({visible(d.reason)}), and "
                    f"{asker.client} cannot ask one (it offers no elicitation)"
                )
            if outcome.status == "skipped":
                raise ToolError(f"not read: the person at {asker.client} declined {visible(path)}")
            raise ToolError(f"{outcome.status}: {visible(outcome.reason)}")
        return FileResult(
            host=direct.runner.name,
            path=path,
            content=outcome.content,
            bytes=outcome.bytes,
            decided_by=outcome.decision.by,
            transcript=str(transcript),
        )
