"""`kosmos log [RUN] [--host NAME] [--json]`: the runs kosmos recorded, and one of them shown.

Runs are what kosmos writes to the transcript folder (`transcript_dir`): a single run's JSONL
file, or a fleet's directory (one file per host and `fleet.json`). `kosmos log` lists the
newest; `kosmos log RUN` renders one (a single run's steps, commands, who decided each, where
it ran, its outputs and report; a fleet's summary and report), `--host NAME` one fleet host's
run. RUN is a path, a name in the transcript folder, or a unique part of one (its run id).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import msgspec

from kosmos.engine.guard import visible
from kosmos.errors import UsageError
from kosmos.events import (
    CommandDecision,
    CommandFinished,
    CommandOutput,
    Event,
    LLMReply,
    LLMRequest,
    RunFinished,
    RunPlanned,
    RunStarted,
    dump,
)
from kosmos.fleet.journal import host_file_name
from kosmos.fleet.results import (
    FleetFinished,
    lock_lines,
    reason_lines,
    report_lines,
    summary_lines,
    table,
)
from kosmos.frontends.console import Console
from kosmos.frontends.render import TextRenderer, json_line
from kosmos.transcript import read_transcript

FLEET_JSON = "fleet.json"
MAX_FLEET_JSON = 256 * 1024 * 1024


@dataclass(frozen=True)
class RunEntry:
    """One recorded run, as the list shows it."""

    name: str
    path: str
    kind: str  # run | fleet
    when: str
    skill: str
    hosts: str
    status: str
    message: str

    def as_json(self) -> dict[str, str]:
        return dict(self.__dict__)


def log_command(
    transcript_dir: Path,
    run: str | None,
    *,
    host: str | None = None,
    json_out: bool = False,
    limit: int = 20,
    console: Console | None = None,
) -> int:
    """The `kosmos log` command; 0, or a UsageError naming what to give instead."""
    c = console or Console()
    if run is None:
        if host is not None:
            raise UsageError("--host NAME shows one host of a fleet run; name the run too")
        return _list(c, transcript_dir, limit, json_out=json_out)
    path = find_run(transcript_dir, run)
    if path.is_dir():
        if host is not None:
            return _show_file(c, _host_file(path, host), json_out=json_out)
        return _show_fleet(c, path, json_out=json_out)
    if host is not None:
        raise UsageError(f"{run}: a single run, not a fleet's; leave out --host")
    return _show_file(c, path, json_out=json_out)


# -- finding runs ----------------------------------------------------------------------------


def recent_runs(transcript_dir: Path) -> list[Path]:
    """The transcript folder's runs (transcript files and fleet directories), newest first."""
    try:
        found = [
            p
            for p in transcript_dir.iterdir()
            if (p.is_file() and p.suffix == ".jsonl") or (p.is_dir() and _is_fleet(p))
        ]
    except FileNotFoundError:
        return []
    except OSError as e:
        raise UsageError(f"cannot read {transcript_dir}: {e.strerror or e}") from None
    return sorted(found, key=_mtime, reverse=True)


def find_run(transcript_dir: Path, run: str) -> Path:
    """RUN as a path, a name in the transcript folder (with or without `.jsonl`), or a part
    of exactly one name there (a run id); UsageError otherwise."""
    # A name in the folder first: a folder here that happens to share it is not a run.
    for candidate in (transcript_dir / run, transcript_dir / f"{run}.jsonl"):
        if candidate.exists():
            return candidate
    given = Path(run).expanduser()
    if given.is_file() or (given.is_dir() and _is_fleet(given)):
        return given
    matches = [p for p in recent_runs(transcript_dir) if run in p.name]
    if len(matches) == 1:
        return matches[0]
    if matches:
        shown = ", ".join(p.name for p in matches[:5])
        raise UsageError(f"{run!r} names {len(matches)} runs ({shown}…); give more of the name")
    raise UsageError(
        f"no run {run!r} in {transcript_dir}; `kosmos log` lists the runs, or give a path"
    )


def _is_fleet(path: Path) -> bool:
    return (path / FLEET_JSON).is_file() or any(path.glob("*.jsonl"))


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _host_file(run_dir: Path, host: str) -> Path:
    result = _fleet_result(run_dir)
    if result is not None:
        for h in result.hosts:
            if h.host == host and h.transcript:
                named = run_dir / Path(h.transcript).name
                if named.exists():
                    return named
    path = run_dir / host_file_name(host)
    if not path.exists():
        hosts = sorted(p.stem for p in run_dir.glob("*.jsonl"))
        raise UsageError(
            f"no host {host!r} in the fleet run {run_dir.name}; its hosts: "
            f"{', '.join(hosts[:10])}{', …' if len(hosts) > 10 else ''}"
        )
    return path


def _fleet_result(run_dir: Path) -> FleetFinished | None:
    path = run_dir / FLEET_JSON
    try:
        with path.open("rb") as f:
            data = f.read(MAX_FLEET_JSON + 1)
        if len(data) > MAX_FLEET_JSON:
            return None
        return msgspec.json.decode(data, type=FleetFinished, strict=False)
    except (OSError, ValueError):
        return None


# -- the list --------------------------------------------------------------------------------


def _entry(path: Path) -> RunEntry:
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(_mtime(path)))
    if path.is_dir():
        result = _fleet_result(path)
        if result is None:
            files = len(list(path.glob("*.jsonl")))
            return RunEntry(path.name, str(path), "fleet", when, "?", f"{files} hosts", "?", "")
        said = result.message
        if result.report is not None and result.report.groups:
            # The fleet report's largest outcome, and how many others there are.
            more = len(result.report.groups) - 1
            said = result.report.text.splitlines()[0] + (f" (+{more} more)" if more else "")
        hosts = f"{len(result.hosts)} hosts"
        return RunEntry(
            path.name, str(path), "fleet", when, result.skill or "?", hosts, result.status, said
        )
    try:
        events = read_transcript(path)
    except (UsageError, OSError) as e:
        return RunEntry(path.name, str(path), "run", when, "?", "?", "unreadable", str(e))
    start = next((e for e in events if isinstance(e, RunStarted | RunPlanned)), None)
    end = next((e for e in reversed(events) if isinstance(e, RunFinished)), None)
    return RunEntry(
        path.name,
        str(path),
        "run",
        when,
        start.skill if start else "?",
        (start.host or "?") if start else "?",
        end.status if end else "unfinished",
        end.message if end else "",
    )


def _list(c: Console, transcript_dir: Path, limit: int, *, json_out: bool) -> int:
    entries = [_entry(p) for p in recent_runs(transcript_dir)[:limit]]
    if json_out:
        for entry in entries:
            c.say(json_line(entry.as_json(), screen=c.is_tty(c.out)))
        return 0
    if not entries:
        c.say(f"no runs in {transcript_dir} yet", stream=c.err)
        return 0
    rows = [
        [e.name, e.when, e.skill, e.hosts, e.status, " ".join(e.message.split())[:80]]
        for e in entries
    ]
    for line in table(["RUN", "WHEN", "SKILL", "HOST", "STATUS", "REPORT"], rows):
        c.say(line)
    c.say(c.style(f"  in {transcript_dir} · kosmos log RUN shows one", "2"), stream=c.err)
    return 0


# -- one run ---------------------------------------------------------------------------------


def _show_file(c: Console, path: Path, *, json_out: bool) -> int:
    events = read_transcript(path)
    if json_out:
        for event in events:
            c.say(json_line(dump(event), screen=c.is_tty(c.out)))
        return 0
    render = LogRenderer(c)
    for event in events:
        render(event)
    return 0


def _show_fleet(c: Console, run_dir: Path, *, json_out: bool) -> int:
    result = _fleet_result(run_dir)
    if result is None:
        raise UsageError(
            f"{run_dir}: no readable fleet.json (the run was cut short?); show a host with "
            "--host NAME"
        )
    if json_out:
        c.say(json_line(dump(result), screen=c.is_tty(c.out)))
        return 0
    title = f"▶ {visible(result.skill or '?', one_line=True)} on {len(result.hosts)} hosts"
    c.say(c.style(title + (f" · shard {result.shard}" if result.shard else ""), "1"))
    canary = any(h.mode != "llm" for h in result.hosts)
    lines = [*summary_lines(result, canary=canary), *reason_lines(result)]
    for line in [*lines, *report_lines(result), *lock_lines(result)]:
        c.say(line)
    color = "32" if result.exit_code == 0 else "31"
    c.say(c.style(f"■ {visible(result.message)} · {result.duration_s:.1f}s", color))
    c.say(c.style(f"  kosmos log {run_dir.name} --host NAME shows one host's run", "2"))
    return 0


class LogRenderer:
    """A recorded run through the line mode's renderer, with what a record adds: each
    command's output (kept in `command_finished`), who decided it, whether it ran in the
    kernel lock, and the report."""

    def __init__(self, console: Console) -> None:
        self.c = console
        self.text = TextRenderer(console)

    def __call__(self, event: Event) -> None:
        c = self.c
        match event:
            case LLMRequest() | LLMReply():
                return  # the renderer's spinner is for a run under way
            case CommandDecision():
                asked = "a person said yes here" if event.asked else "unasked"
                said = f"  {event.decision} · decided by {event.by}"
                said += f" ({asked})" if event.decision != "refused" else ""
                if event.reason:
                    said += f" · {event.reason}"
                c.say(c.style(visible(said), "2"))
                return
            case CommandFinished():
                self.text(CommandOutput(step=event.step, text=event.output))
                self.text(event)
                where = "inside the kernel lock" if event.locked else "without the kernel lock"
                c.say(c.style(f"    ran {where}", "2"))
                return
            case RunFinished():
                self.text(event)
                made = (
                    f" (made from {event.report_from}'s identical outputs)"
                    if event.report_from
                    else ""
                )
                c.say(f"report: {visible(event.message)}{visible(made)}")
                return
            case _:
                self.text(event)
