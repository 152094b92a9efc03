"""`kosmos fleet merge DIR...`: the run directories of a fleet's shards, as one fleet run.

Each shard (`kosmos run ... --shard K/N`) writes its hosts' transcripts and a `fleet.json` into
its own run directory. The merge reads those results and prints what one controller would
have: the table, the counts, the `result` line (`--json`) and the exit code (`EXIT_PRIORITY`).

A merge is whole or refused: every shard 1..N of one split exactly once (a job that died
before uploading its directory must not make the fleet look done), and each fleet.json
agrees with the transcripts it names. Each fleet.json and each transcript it names must carry
an unbroken seal (`kosmos.seal`), fleet.json's naming each transcript's last digest; with the
seal key (KOSMOS_SEAL_KEY), signed by it: a directory edited after its run is refused, naming
the first file or line that does not verify.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path

import msgspec

from kosmos.engine.guard import visible
from kosmos.errors import UsageError
from kosmos.events import RunFinished, dump
from kosmos.fleet.results import FleetFinished, fleet_result, reason_lines, summary_lines
from kosmos.frontends.console import Console
from kosmos.frontends.render import json_line
from kosmos.seal import verify_document, verify_file
from kosmos.transcript import open_regular, read_transcript

__all__ = ["merge_command", "merge_results"]


# A fleet.json of 100,000 hosts is some 40 MB; past this it is not one of ours.
MAX_RESULT_BYTES = 256 * 1024 * 1024


def _load(directory: Path, key: bytes | None) -> tuple[FleetFinished, dict[str, str]]:
    """A shard's result, and the transcripts' last digests its seal vouches for."""
    path = directory / "fleet.json"
    try:
        with open_regular(path, "a fleet result") as f:
            data = f.read(MAX_RESULT_BYTES + 1)
        if len(data) > MAX_RESULT_BYTES:
            limit = MAX_RESULT_BYTES // 2**20
            raise UsageError(f"{path}: larger than {limit} MiB; not a fleet result")
        result = msgspec.json.decode(data, type=FleetFinished, strict=False)
        return result, verify_document(json.loads(data), key, str(path))
    except FileNotFoundError:
        raise UsageError(
            f"{directory}: no fleet.json; give the run directory of a finished fleet run "
            "(its transcripts folder)"
        ) from None
    except (OSError, ValueError) as e:
        why = e.strerror if isinstance(e, OSError) else "not a fleet result"
        raise UsageError(f"{path}: cannot read it ({why}); was the run cut short?") from None


def _shards(results: Sequence[tuple[Path, FleetFinished]]) -> None:
    """Shards 1..N of one split, each exactly once; else UsageError naming what is missing or
    doubled. Without shards, one run directory is the whole fleet."""
    split = [(d, r.shard) for d, r in results if r.shard]
    if not split:
        if len(results) > 1:
            named = ", ".join(str(d) for d, _ in results)
            raise UsageError(
                f"none of {named} is a shard (--shard K/N); merge the shards of one run"
            )
        return
    if len(split) < len(results):
        whole = next(d for d, r in results if not r.shard)
        raise UsageError(f"{whole} is a whole run, not a shard; merge the shards of one run")
    seen: dict[int, Path] = {}
    totals: set[int] = set()
    for directory, shard in split:
        numbers = re.fullmatch(r"(\d+)/(\d+)", shard)
        if numbers is None:
            raise UsageError(f"{directory / 'fleet.json'}: shard {shard!r} is not K/N")
        index, total = int(numbers.group(1)), int(numbers.group(2))
        totals.add(total)
        if index in seen:
            raise UsageError(
                f"shard {index}/{total} is given twice ({seen[index]} and {directory}); give "
                "each shard's run directory once"
            )
        seen[index] = directory
    if len(totals) > 1:
        raise UsageError(
            "these shards come from different splits ("
            + ", ".join(sorted({f"of {t}" for t in totals}))
            + "); merge the shards of one run"
        )
    total = totals.pop()
    missing = [str(k) for k in range(1, total + 1) if k not in seen]
    if missing:
        raise UsageError(
            f"shard {', '.join(f'{k}/{total}' for k in missing)} is missing: a merge takes "
            f"all {total} shards; did its job upload its run directory?"
        )


def _check_transcripts(
    directory: Path, result: FleetFinished, sealed: dict[str, str], key: bytes | None
) -> None:
    """Each host's transcript is in the directory, its seal unbroken and ending where
    fleet.json's seal says, and it ends as fleet.json says it did."""
    for host in result.hosts:
        if host.transcript is None:
            continue  # never ran a session (unreachable, skipped): no transcript to check
        # Found by name beside fleet.json: a CI artifact is unpacked elsewhere than it ran.
        path = directory / Path(host.transcript).name
        try:
            events = read_transcript(path)
            chain = verify_file(path, key)
        except FileNotFoundError:
            raise UsageError(
                f"{directory}: fleet.json names {path.name} for host {host.host}, and it is not "
                "there; give the whole run directory"
            ) from None
        except OSError as e:
            raise UsageError(f"{path}: cannot read it ({e.strerror or e})") from None
        if sealed.get(path.name) != chain.last:
            raise UsageError(
                f"{path}: its seal ends otherwise than fleet.json's seal says: the run directory "
                "was changed after the run"
            )
        ends = [e for e in events if isinstance(e, RunFinished)]
        end = ends[-1] if ends else None
        if end is None or end.host != host.host or end.status != host.status:
            said = "no result" if end is None else f"{end.host} ended {end.status}"
            raise UsageError(
                f"{path}: says {said}, but fleet.json says {host.host} ended {host.status}; "
                "the run directory was changed after the run"
            )


def merge_results(directories: Sequence[Path], key: bytes | None = None) -> FleetFinished:
    """One fleet result from the shards'; UsageError (exit 2) for a missing or doubled shard,
    a host found twice, directories of different skills, or a fleet.json its transcripts
    contradict."""
    loaded = [(d, *_load(d, key)) for d in directories]
    results = [(d, r) for d, r, _ in loaded]
    skills = {r.skill for _, r in results}
    if len(skills) > 1:
        named = ", ".join(f"{d} ({r.skill})" for d, r in results)
        raise UsageError(f"these runs are of different skills: {named}; merge one skill's shards")
    _shards(results)
    seen: dict[str, Path] = {}
    hosts = []
    for directory, result, sealed in loaded:
        _check_transcripts(directory, result, sealed, key)
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


def merge_command(directories: Sequence[Path], *, json_out: bool, key: bytes | None = None) -> int:
    result = merge_results(directories, key)
    console = Console(out=sys.stdout, err=sys.stderr)
    if json_out:
        print(json_line(dump(result), screen=sys.stdout.isatty()), flush=True)
    else:
        replayed = any(h.mode != "llm" for h in result.hosts)
        for line in [*summary_lines(result, canary=replayed), *reason_lines(result)]:
            console.say(line)
        color = "32" if result.exit_code == 0 else "31"
        message = visible(result.message)
        console.say(console.style(f"■ {message} · {len(directories)} runs merged", color))
    return result.exit_code
