"""`kosmos fleet merge DIR...`: the run directories of a fleet's shards, as one fleet run.

Each shard (`kosmos run ... --shard K/N`) writes its hosts' transcripts and a `fleet.json` into
its own run directory. The merge reads those results and prints what one controller would
have: the table, the counts, the `result` line (`--json`) and the exit code of DESIGN's order.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError

from kosmos.engine.guard import visible
from kosmos.errors import UsageError
from kosmos.fleet.results import FleetFinished, fleet_result
from kosmos.frontends.console import Console
from kosmos.frontends.fleet_view import summary_lines
from kosmos.transcript import open_regular

__all__ = ["merge_command", "merge_results"]


# A fleet.json of 100,000 hosts is some 40 MB; past this it is not one of ours.
MAX_RESULT_BYTES = 256 * 1024 * 1024


def _load(directory: Path) -> FleetFinished:
    path = directory / "fleet.json"
    try:
        with open_regular(path, "a fleet result") as f:
            data = f.read(MAX_RESULT_BYTES + 1)
        if len(data) > MAX_RESULT_BYTES:
            limit = MAX_RESULT_BYTES // 2**20
            raise UsageError(f"{path}: larger than {limit} MiB; not a fleet result")
        return FleetFinished.model_validate_json(data)
    except FileNotFoundError:
        raise UsageError(
            f"{directory}: no fleet.json; give the run directory of a finished fleet run "
            "(its transcripts folder)"
        ) from None
    except (OSError, ValueError, ValidationError) as e:
        why = e.strerror if isinstance(e, OSError) else "not a fleet result"
        raise UsageError(f"{path}: cannot read it ({why}); was the run cut short?") from None


def merge_results(directories: Sequence[Path]) -> FleetFinished:
    """One fleet result from the shards'; UsageError (exit 2) for a host found twice or
    directories of different skills."""
    results = [(d, _load(d)) for d in directories]
    skills = {r.skill for _, r in results}
    if len(skills) > 1:
        named = ", ".join(f"{d} ({r.skill})" for d, r in results)
        raise UsageError(f"these runs are of different skills: {named}; merge one skill's shards")
    seen: dict[str, Path] = {}
    hosts = []
    for directory, result in results:
        for host in result.hosts:
            if host.host in seen:
                raise UsageError(
                    f"host {host.host} is in both {seen[host.host]} and {directory}; merge each "
                    "shard of one run once"
                )
            seen[host.host] = directory
            hosts.append(host)
    shards = sorted({r.shard for _, r in results if r.shard})
    return fleet_result(
        hosts,
        max(r.duration_s for _, r in results),
        skill=skills.pop(),
        shard=",".join(shards) or None,
    )


def merge_command(directories: Sequence[Path], *, json_out: bool) -> int:
    result = merge_results(directories)
    console = Console(out=sys.stdout, err=sys.stderr)
    if json_out:
        print(json.dumps(result.model_dump(mode="json"), ensure_ascii=False), flush=True)
    else:
        replayed = any(h.mode != "llm" for h in result.hosts)
        for line in summary_lines(result, canary=replayed):
            console.say(line)
        color = "32" if result.exit_code == 0 else "31"
        message = visible(result.message)
        console.say(console.style(f"■ {message} · {len(directories)} runs merged", color))
    return result.exit_code
