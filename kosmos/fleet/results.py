"""A fleet's outcome: each host's summary, the counts and the exit code (`EXIT_PRIORITY`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from msgspec import Struct

from kosmos.engine.guard import visible
from kosmos.errors import (
    EXIT_DONE,
    EXIT_FAILED,
    EXIT_HOST,
    EXIT_INTERRUPTED,
    EXIT_LLM,
    EXIT_NEEDS_INPUT,
    EXIT_PIPE,
    EXIT_RECORD,
    EXIT_STEP_LIMIT,
    EXIT_USAGE,
    KosmosError,
)
from kosmos.events import Event
from kosmos.fleet.reports import OWN, FleetReport, fleet_report, group_line, names

# A fleet exits with the first of these codes that some host ended with; a fleet stopped
# early (its record could not be kept, its output was closed, Ctrl-C) comes first.
EXIT_PRIORITY: tuple[int, ...] = (
    EXIT_RECORD,
    EXIT_PIPE,
    EXIT_INTERRUPTED,
    EXIT_HOST,
    EXIT_LLM,
    EXIT_FAILED,
)
EXIT_PRIORITY += (EXIT_NEEDS_INPUT, EXIT_STEP_LIMIT, EXIT_USAGE)


class HostSummary(Struct, frozen=True, kw_only=True):
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
    # What `message` (the host's report) was made from: `own` outputs, or the name of the
    # host whose identical conversation made it (the canary, or the first of a group).
    report_from: str = OWN
    # The kernel lock on the host, as its run found it (`held (...)`, `not held: why`), the
    # policy it ran under, and the commands that ran there unasked outside the lock.
    lock: str | None = None
    policy: str | None = None
    unlocked_commands: int = 0


class FleetFinished(Event, frozen=True, kw_only=True):
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
    # The hosts grouped by outcome (`reports.fleet_report`).
    report: FleetReport | None = None


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
    stopped: KosmosError | None = None,
) -> FleetFinished:
    """The fleet's `result` from its hosts' summaries: counts, the message, the exit code;
    `stopped`: the error that ended the fleet early, which gives the exit code."""
    code = fleet_exit_code([h.exit_code for h in hosts])
    if stopped is not None:
        code = stopped.exit_code
    counts: dict[str, int] = {}
    for h in hosts:
        counts[h.status] = counts.get(h.status, 0) + 1
    done = counts.get("done", 0)
    rest = [
        f"{n} {status} ({names([h.host for h in hosts if h.status == status])})"
        for status, n in counts.items()
        if status != "done"
    ]
    message = f"{done} of {len(hosts)} hosts done" + ("; " + "; ".join(rest) if rest else "")
    if stopped is not None:
        message = f"stopped early: {stopped}; {message}"
    return FleetFinished(
        status=STATUS_OF_CODE.get(code, "error"),
        exit_code=code,
        message=message,
        duration_s=round(duration_s, 3),
        counts=counts,
        hosts=list(hosts),
        skill=skill,
        shard=shard,
        report=fleet_report(hosts),
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
    EXIT_PIPE: "aborted",
    EXIT_RECORD: "error",
}


# -- as text: the summary a terminal, a log and the TUI show ---------------------------------


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Plain aligned columns, two spaces apart; the last column is not padded. A cell's
    control characters are drawn as symbols: a host name from a file cannot redraw the table."""
    rows = [[visible(str(cell), one_line=True) for cell in row] for row in rows]
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
        headers += ["MODE", "REPORT FROM"]
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
            row.append(h.report_from if h.report_from == OWN else f"{h.report_from}'s outputs")
        rows.append(row)
    return table(headers, rows)


def reason_lines(result: FleetFinished, width: int = 300) -> list[str]:
    """Why each host that is not done ended as it did, under the summary table: hosts that
    ended for the same reason share a line (`h2, h3 and 40 more: not run: ...`)."""
    reasons: dict[str, list[str]] = {}
    for h in result.hosts:
        if h.status != "done" and h.message:
            reasons.setdefault(h.message, []).append(h.host)
    lines = []
    for message, hosts in reasons.items():
        flat = visible(" ".join(message.split()), one_line=True)
        said = flat if len(flat) <= width else flat[: width - 1] + "…"
        lines.append(f"  {visible(names(hosts, 60), one_line=True)}: {said}")
    return lines


def report_lines(result: FleetFinished, width: int = 200) -> list[str]:
    """The fleet report under the table: each outcome once, with the hosts that share it; a
    report made from another host's identical outputs says so."""
    if result.report is None or not result.report.groups:
        return []
    lines = ["fleet report:"]
    for group in result.report.groups:
        lines.append("  " + visible(group_line(group, width=width, names_width=60), one_line=True))
        borrowed: dict[str, list[str]] = {}
        for host, source in zip(group.hosts, group.report_from, strict=True):
            if source != OWN:
                borrowed.setdefault(source, []).append(host)
        for source, hosts in borrowed.items():
            said = f"    made from {source}'s identical outputs: {names(hosts, 60)}"
            lines.append(visible(said, one_line=True))
    return lines


def lock_lines(result: FleetFinished) -> list[str]:
    """The hosts where the kernel lock was not held, or commands ran unasked outside it,
    grouped by why."""
    why: dict[str, list[str]] = {}
    for h in result.hosts:
        if h.lock is not None and not h.lock.startswith("held"):
            why.setdefault(f"the kernel lock is {h.lock}", []).append(h.host)
        elif h.unlocked_commands:
            reason = f"policy {h.policy}: commands that ran unasked ran outside the lock"
            why.setdefault(reason, []).append(h.host)
    if not why:
        return []
    lines = ["without the kernel lock:"]
    for reason, hosts in why.items():
        lines.append(visible(f"  {names(hosts, 60)}: {reason}", one_line=True))
    return lines
