"""sudo without a terminal: ask the operator for the password, never keep it anywhere.

A command that calls sudo runs with a shell function in front that turns every `sudo` the
shell itself starts into `sudo -n` (never prompt, never read stdin):

* interactive, password needed: kosmos probes `sudo -n true` first (it has no effect);
  when that says a password is required, the operator types it (masked) and the command
  runs behind `sudo -S -p '' -v`, which reads it from stdin and validates it, so the
  `sudo -n` calls that follow use the credentials sudo just cached for this shell; stdin
  is then closed, so nothing else can read the password. The
  password goes only to the process's stdin: never into the command text (argv), an
  event, the transcript, the LLM or a log; the run's redactor masks it should it ever
  be echoed back.
* non-interactive: the command runs with the `sudo -n` function only; when sudo answers
  that it needs a password, the LLM is told in one line.

Judgement call: sudo started by another program (`xargs sudo`, `timeout 5 sudo`,
`find -exec sudo`) is not covered by the function; it finds no terminal and fails at once
instead of hanging, which the LLM sees in the output.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from kosmos.engine.operator import Operator
from kosmos.hosts.own import run_own
from kosmos.hosts.runner import Runner
from kosmos.prompts import Prompts
from kosmos.safety import Redactor
from kosmos.safety.shell import Compound, Function, Script, ShellSyntaxError, Simple, Word, parse

PROBE_TIMEOUT = 10.0
# sudo's own words when -n meets a rule that wants a password.
NEEDS_PASSWORD = re.compile(r"sudo: (?:a )?password is required", re.IGNORECASE)
# The one line the operator sees when the password was wrong (the command did not run).
REJECTED_MARK = (
    "kosmos: sudo did not accept the password, so the command did not run; "
    "the next sudo command asks for it again"
)

_NON_INTERACTIVE = 'sudo() { command sudo -n "$@"; }\n'
# After validating, stdin is closed for good: nothing the command runs can read the password.
_VALIDATE = (
    f"command sudo -S -p '' -v 2>/dev/null || {{ echo '{REJECTED_MARK}'; exit 1; }}\n"
    "exec </dev/null\n"
)
_ROUGH = re.compile(r"(?:^|[\s;&|(`$])sudo(?:\s|$)")


def _words_call_sudo(words: list[Word]) -> bool:
    return any(_script_calls_sudo(sub) for w in words for sub in w.subs)


def _script_calls_sudo(script: Script) -> bool:
    for pipeline in script.pipelines:
        for command in pipeline.commands:
            if _command_calls_sudo(command):
                return True
    return False


def _command_calls_sudo(command: Simple | Compound | Function) -> bool:
    if isinstance(command, Function):
        return _command_calls_sudo(command.body)
    if isinstance(command, Compound):
        return any(_script_calls_sudo(b) for b in command.bodies) or _words_call_sudo(command.words)
    if command.words and command.words[0].text.rsplit("/", 1)[-1] == "sudo":
        return True
    return _words_call_sudo(command.words) or _words_call_sudo(command.assigns)


@functools.lru_cache(maxsize=256)
def calls_sudo(command: str) -> bool:
    """True when the shell running `command` would start sudo itself (kept per text: a fleet
    asks it of the same command on every host, twice each)."""
    try:
        return _script_calls_sudo(parse(command))
    except (ShellSyntaxError, RecursionError):
        return bool(_ROUGH.search(command))


@dataclass(frozen=True)
class Prepared:
    """How to run one command: the text for `sh -c`, what goes to its stdin, or why not."""

    text: str
    stdin: bytes | None = None
    declined: bool = False
    with_password: bool = False


class SudoHelper:
    """Prepares commands that call sudo; holds a typed password in memory for one run."""

    def __init__(
        self,
        runner: Runner,
        operator: Operator,
        redactor: Redactor,
        prompts: Prompts,
        *,
        non_interactive: bool,
    ) -> None:
        self.runner = runner
        self.operator = operator
        self.redactor = redactor
        self.prompts = prompts
        self.non_interactive = non_interactive
        self._password: str | None = None

    async def prepare(self, command: str) -> Prepared:
        if not calls_sudo(command):
            return Prepared(command)
        wrapped = _NON_INTERACTIVE + command
        if self.non_interactive:
            return Prepared(wrapped)
        if self._password is None:
            probe = await run_own(
                self.runner, "sudo -n true", purpose="sudo probe", timeout=PROBE_TIMEOUT
            )
            if probe.exit_code == 0 or not NEEDS_PASSWORD.search(probe.output.text()):
                return Prepared(wrapped)
            password = await self.operator.ask_secret(f"[sudo] password on {self.runner.name}: ")
            if not password:
                return Prepared(command, declined=True)
            self.redactor.add(password)
            self._password = password
        return Prepared(
            _VALIDATE + wrapped, stdin=(self._password + "\n").encode(), with_password=True
        )

    def note(self, prepared: Prepared, output: str) -> str | None:
        """One line for the LLM when sudo refused the password (which is then forgotten) or
        needs one that nobody can give."""
        if prepared.with_password and REJECTED_MARK in output:
            self._password = None
            return self.prompts["SKILL_SUDO_REJECTED"]
        if self.non_interactive and NEEDS_PASSWORD.search(output):
            return self.prompts["SKILL_SUDO_PASSWORD_NEEDED"]
        return None
