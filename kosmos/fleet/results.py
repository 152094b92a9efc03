"""A fleet's outcome: each host's summary, the counts and the exit code (`EXIT_PRIORITY`)."""

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

# A fleet exits with the first of these codes that some host ended with.
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
    # The skill run, and with --shard K/N which job of N this was ("2/4").
    skill: str | None = None
    shard: str | None = None


def fleet_exit_code(codes: Sequence[int]) -> int:
    """0 when every host is done, else the first failure in `EXIT_PRIORITY`."""
    if all(c == EXIT_DONE for c in codes):
        return EXIT_DONE
    for code in EXIT_PRIORITY:
        if code in codes:
            return code
    return max(codes)


def fleet_result(
    hosts: Sequence[HostSummary],
    duration_s: float,
    *,
    skill: str | None = None,
    shard: str | None = None,
) -> FleetFinished:
    """The fleet's `result` from its hosts' summaries: counts, the message, the exit code."""
    code = fleet_exit_code([h.exit_code for h in hosts])
    counts: dict[str, int] = {}
    for h in hosts:
        counts[h.status] = counts.get(h.status, 0) + 1
    done = counts.get("done", 0)
    rest = [
        f"{n} {status} ({', '.join(h.host for h in hosts if h.status == status)[:120]})"
        for status, n in counts.items()
        if status != "done"
    ]
    message = f"{done} of {len(hosts)} hosts done" + ("; " + "; ".join(rest) if rest else "")
    return FleetFinished(
        status=STATUS_OF_CODE.get(code, "error"),
        exit_code=code,
        message=message,
        duration_s=round(duration_s, 3),
        counts=counts,
        hosts=list(hosts),
        skill=skill,
        shard=shard,
    )


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


# -- as text: the summary a terminal, a log and the TUI show ---------------------------------


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Plain aligned columns, two spaces apart; the last column is not padded."""
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]
    lines = []
    for row in [headers, *rows]:
        cells = [str(c).ljust(w) for c, w in zip(row[:-1], widths[:-1], strict=True)]
        lines.append("  ".join([*cells, str(row[-1])]).rstrip())
    return lines


def summary_lines(result: FleetFinished, *, canary: bool = False) -> list[str]:
    """The final table: host, status, steps, duration, last exit code (and how it was driven)."""
    headers = ["HOST", "STATUS", "STEPS", "DURATION", "LAST EXIT"]
    if canary:
        headers.append("MODE")
    rows = []
    for h in result.hosts:
        row = [
            h.host,
            h.status,
            str(h.steps),
            f"{h.duration_s:.1f}s",
            "" if h.last_exit_code is None else str(h.last_exit_code),
        ]
        if canary:
            row.append(h.mode + (f" at step {h.diverged_at_step}" if h.diverged_at_step else ""))
        rows.append(row)
    return table(headers, rows)
