"""The one error tree users see: each error is one line and carries its exit code."""

from __future__ import annotations

import re
from typing import Literal

# Exit codes, as the README's table lists them.
EXIT_DONE = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_STEP_LIMIT = 3
EXIT_NEEDS_INPUT = 4
EXIT_LLM = 5
EXIT_HOST = 6
# kosmos could not keep its own record: a transcript or fleet.json could not be written.
EXIT_RECORD = 7
EXIT_INTERRUPTED = 130
# Standard output (or error) was a pipe whose reader went away: 128 + SIGPIPE, as for any
# program a closed pipe ends.
EXIT_PIPE = 141


# How a run ended (a fleet host's own: `skipped`, it never started, its canary did not end
# done or the fleet stopped first; `unreachable`, no connection to it).
RunStatus = Literal[
    "done", "failed", "step_limit", "needs_input", "error", "aborted", "skipped", "unreachable"
]


class KosmosError(Exception):
    """Base of every error a user can see; its message says what failed and what to do."""

    exit_code: int = EXIT_FAILED
    status: RunStatus = "failed"


class UsageError(KosmosError):
    """A bad flag, config value, skill file or parameter."""

    exit_code = EXIT_USAGE
    status = "error"


class ConfigError(UsageError):
    """A config file or value that cannot be used."""


class SkillError(UsageError):
    """A SKILL.md that cannot be loaded; the message starts with `path:line:`."""


class SkillNotFound(UsageError):
    """No skill of that name in any of the places kosmos looks."""


class ParamError(UsageError):
    """A skill parameter that is missing or breaks its rules."""


class RunFailed(KosmosError):
    """The run could not go on (for example, the LLM kept answering in the wrong format)."""

    exit_code = EXIT_FAILED
    status = "failed"


class StepLimitReached(KosmosError):
    exit_code = EXIT_STEP_LIMIT
    status = "step_limit"


class InputNeeded(KosmosError):
    """Non-interactive mode reached a point where a person has to answer."""

    exit_code = EXIT_NEEDS_INPUT
    status = "needs_input"


class LLMError(KosmosError):
    """The LLM is unreachable or kept failing after retries."""

    exit_code = EXIT_LLM
    status = "error"


class HostError(KosmosError):
    """The host is unreachable, refused us, or authentication failed."""

    exit_code = EXIT_HOST
    status = "error"


class Aborted(KosmosError):
    """The operator interrupted the run (Ctrl-C or SIGTERM)."""

    exit_code = EXIT_INTERRUPTED
    status = "aborted"


class RecordError(KosmosError):
    """kosmos cannot write its record of the run (a transcript, fleet.json): a full disk, an
    I/O error. The run stops, since what it does could no longer be traced."""

    exit_code = EXIT_RECORD
    status = "error"


class OutputClosed(KosmosError):
    """The reader of kosmos's standard output (or error) went away (`| head`, `| grep -q`)."""

    exit_code = EXIT_PIPE
    status = "aborted"

    def __init__(self) -> None:
        super().__init__(
            "standard output was closed (the program reading it ended); the run stopped"
        )


# What `validation_problem` says of a required key that is absent (the path names the key).
MISSING = "missing"


def validation_problem(error: Exception) -> tuple[str, tuple[str | int, ...]]:
    """A record's validation error (msgspec's `... - at `$.params[0].name``) as what is wrong
    and where: the keys and list indexes that lead to it (to the key itself, for MISSING)."""
    text = str(error)
    message, at, where = text.rpartition(" - at `")
    if not at:
        message, where = text, ""
    if where.startswith("key` in `"):  # a mapping's key, not its value
        message, where = f"{message} (a key)", where.removeprefix("key` in `")
    found = re.findall(r"\.([^.\[`]+)|\[(\d+)\]", where.removeprefix("$").rstrip("`"))
    path: tuple[str | int, ...] = tuple(name or int(index) for name, index in found)
    absent = re.fullmatch(r"Object missing required field `(.*)`", message)
    if absent:
        return MISSING, (*path, absent[1])
    return message, path
