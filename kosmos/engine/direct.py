"""One command or one file read on a host, outside a skill session.

`DirectHost.run_command` and `DirectHost.read_file` take the road a skill's `[CMD]` and
`[GET-FILE]` take (`CommandStep`, `FileStep`): the same approval gate and policy (a
dangerous command needs the host's name typed), sudo handling, output caps, NUL check and
redaction, and the same events, each call a numbered step of its own. A front end that
offers these as tools (an MCP server) builds one `DirectHost` per host and its operator.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kosmos.engine.approval import ApprovalGate, Policy
from kosmos.engine.commands import CommandOutcome, CommandStep
from kosmos.engine.files import FileOutcome, FileStep
from kosmos.engine.guard import outgoing
from kosmos.engine.operator import Operator
from kosmos.engine.sudo import SudoHelper
from kosmos.events import Emit, Event
from kosmos.hosts.lock import host_lock
from kosmos.hosts.runner import Runner
from kosmos.prompts import Prompts
from kosmos.safety import Redactor

__all__ = ["CommandOutcome", "DirectHost", "DirectOptions", "FileOutcome"]


@dataclass(frozen=True)
class DirectOptions:
    """How the gate treats direct calls: the approval policy, whether anyone can be asked,
    and how long a command or a read may take."""

    policy: Policy = "ask"
    non_interactive: bool = False
    allow_dangerous: bool = False
    command_timeout: float = 60.0


@dataclass
class DirectHost:
    """One connected host's commands and file reads through the approval gate.

    Every event (decision, start, output, finish, file read) goes to `emit` tagged with the
    host and redacted, as a session's do; `redactor` also learns a sudo password typed here.
    """

    runner: Runner
    operator: Operator
    prompts: Prompts
    emit_to: Emit
    options: DirectOptions = field(default_factory=DirectOptions)
    redactor: Redactor = field(default_factory=Redactor)
    step: int = 0

    def __post_init__(self) -> None:
        o = self.options
        self.gate = ApprovalGate(
            self.operator,
            self.prompts,
            host=self.runner.name,
            policy=o.policy,
            non_interactive=o.non_interactive,
            allow_dangerous=o.allow_dangerous,
            shell=lambda: self.runner.dialect,
            host_lock=lambda: host_lock(self.runner),
        )
        sudo = SudoHelper(
            self.runner,
            self.operator,
            self.redactor,
            self.prompts,
            non_interactive=o.non_interactive,
        )
        self.commands = CommandStep(
            runner=self.runner,
            gate=lambda: self.gate,
            sudo=sudo,
            operator=self.operator,
            redactor=self.redactor,
            prompts=self.prompts,
            emit=self.emit,
            command_timeout=o.command_timeout,
        )
        self.files = FileStep(
            runner=self.runner,
            gate=lambda: self.gate,
            operator=self.operator,
            redactor=self.redactor,
            prompts=self.prompts,
            emit=self.emit,
            read_timeout=o.command_timeout,
        )

    def emit(self, event: Event) -> None:
        self.emit_to(outgoing(event, self.runner.name, self.redactor))

    async def run_command(self, command: str) -> CommandOutcome:
        """Judge `command`, ask where the policy says so, run it if allowed; what became of it.

        Raises HostError when the host cannot be reached and the operator does not retry.
        """
        self.step += 1
        return await self.commands.run(command, self.step)

    async def read_file(self, path: str) -> FileOutcome:
        """Judge the read as `cat PATH`, ask where the policy says so, read it if allowed."""
        self.step += 1
        return await self.files.read(path, self.step)

    @property
    def command_running(self) -> bool:
        stop = self.commands.stop
        return stop is not None and not stop.is_set()

    def stop_command(self) -> bool:
        """Stop the command running now (its whole process tree); False if none is."""
        stop = self.commands.stop
        if stop is None or stop.is_set():
            return False
        stop.set()
        return True
