"""A fleet's outcome: each host's summary, the counts and the exit code of DESIGN's order."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel

from kosmos.errors import (
    EXIT_DONE,
    EXIT_FAILED,
    EXIT_HOST,
    EXIT_INTERRUPTED,
    EXIT_LLM,
    EXIT_NEEDS_INPUT,
    EXIT_STEP_LIMIT,
    EXIT_USAGE,
)
from kosmos.events import Event

# DESIGN: a fleet exits with the first of these codes that some host ended with.
EXIT_PRIORITY = (EXIT_INTERRUPTED, EXIT_HOST, EXIT_LLM, EXIT_FAILED, EXIT_NEEDS_INPUT)
EXIT_PRIORITY += (EXIT_STEP_LIMIT, EXIT_USAGE)


class HostSummary(BaseModel):
    host: str
    target: str
    status: str
    steps: int
    duration_s: float
    last_exit_code: int | None
    exit_code: int
    commands_run: int
    message: str
    mode: str
    diverged_at_step: int | None = None
    transcript: str | None = None


class FleetFinished(Event):
    """The fleet's final `result` line: it has no host and lists every host's outcome."""

    type: Literal["result"] = "result"
    scope: Literal["fleet"] = "fleet"
    status: str
    exit_code: int
    message: str
    duration_s: float
    counts: dict[str, int]
    hosts: list[HostSummary]


def fleet_exit_code(codes: Sequence[int]) -> int:
    """0 when every host is done, else the highest-priority failure (DESIGN's order)."""
    if all(c == EXIT_DONE for c in codes):
        return EXIT_DONE
    for code in EXIT_PRIORITY:
        if code in codes:
            return code
    return max(codes)


STATUS_OF_CODE = {
    EXIT_DONE: "done",
    EXIT_FAILED: "failed",
    EXIT_USAGE: "error",
    EXIT_STEP_LIMIT: "step_limit",
    EXIT_NEEDS_INPUT: "needs_input",
    EXIT_LLM: "error",
    EXIT_HOST: "error",
    EXIT_INTERRUPTED: "aborted",
}
