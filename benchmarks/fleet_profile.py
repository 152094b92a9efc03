"""Where the CPU of a 50-host in-process fleet goes, by package: kosmos against its floors.

Runs the contenders of `table.py`'s in-process row (the bare asyncssh gather, the same gather
with the LLM requests kosmos makes, and `FleetFrontend.run()`), each in a process of its own,
a warm-up run first and then one run under `cProfile` with a CPU clock. Each function's own
time goes to the package its file belongs to; a built-in's (a socket send, a C hash, a JSON
encode) goes to the package of the Python function that called it. Prints CPU seconds per
package for each contender, and kosmos's own costliest functions.

    sudo python benchmarks/fleet_profile.py [--hosts 50] [--policy read-only] [--top 25]
        [--keep DIR]   (keeps each contender's profile there, for `python -m pstats`)
"""

from __future__ import annotations

import argparse
import os
import pstats
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.table import (  # noqa: E402
    BARE_FLEET,
    COMMANDS,
    INPROCESS,
    LLM_SERVER,
    THREE,
    fleet_home,
)
from tests.sshd import start_sshd  # noqa: E402

# Runs a contender's script with its second `asyncio.run` (the timed run, after the warm-up)
# under cProfile with a CPU clock, and dumps the stats to argv[1].
PROFILED = r"""
import asyncio, cProfile, sys, time
out, script = sys.argv[1], sys.argv[2]
sys.argv = [sys.argv[0], *sys.argv[3:]]
real, calls = asyncio.run, []
def run(main, **kw):
    calls.append(1)
    if len(calls) < 2:
        return real(main, **kw)
    profile = cProfile.Profile(time.process_time)
    profile.enable()
    try:
        return real(main, **kw)
    finally:
        profile.disable()
        profile.dump_stats(out)
asyncio.run = run
exec(compile(script, "<contender>", "exec"), {"__name__": "__main__"})
"""

PACKAGES = ("kosmos", "asyncssh", "cryptography", "httpx", "httpcore", "h11", "anyio", "msgspec")


def package(filename: str) -> str:
    """The package a profiled function's file belongs to ("" for a built-in)."""
    if filename == "~":
        return ""
    parts = Path(filename).parts
    for name in PACKAGES:
        if name in parts:
            return name
    if "asyncio" in parts or Path(filename).stem in ("selectors", "socket", "ssl"):
        return "asyncio, selectors, socket"
    if Path(filename).stem in ("json", "decoder", "encoder") or "json" in parts:
        return "json"
    return "other Python"


def by_package(path: Path) -> tuple[dict[str, float], float]:
    """CPU seconds per package, built-ins charged to their callers' packages; and the total."""
    stats = pstats.Stats(str(path)).stats  # type: ignore[attr-defined]
    sums: dict[str, float] = defaultdict(float)
    for (filename, _, _), (_, _, own, _, callers) in stats.items():
        name = package(filename)
        if name:
            sums[name] += own
            continue
        charged = 0.0
        for (cfile, _, _), caller in callers.items():
            sums[package(cfile) or "built-in from built-in"] += caller[2]
            charged += caller[2]
        sums["built-in from built-in"] += own - charged
    return dict(sums), sum(sums.values())


def top_kosmos(path: Path, top: int) -> list[tuple[float, float, str]]:
    """kosmos's functions with the most CPU of their own (built-ins they call included)."""
    stats = pstats.Stats(str(path)).stats  # type: ignore[attr-defined]
    own: dict[tuple[str, int, str], float] = defaultdict(float)
    cumulative: dict[tuple[str, int, str], float] = {}
    for key, (_, _, tt, ct, callers) in stats.items():
        if package(key[0]) == "kosmos":
            own[key] += tt
            cumulative[key] = ct
        elif not package(key[0]):
            for caller, entry in callers.items():
                if package(caller[0]) == "kosmos":
                    own[caller] += entry[2]
    rows = [
        (seconds, cumulative.get(key, 0.0), f"{key[0].split('/kosmos/', 1)[-1]}:{key[1]} {key[2]}")
        for key, seconds in own.items()
    ]
    return sorted(rows, reverse=True)[:top]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=50)
    parser.add_argument("--policy", default="read-only")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--keep", type=Path, help="a folder to keep the profiles in")
    args = parser.parse_args()
    py, n = sys.executable, args.hosts
    tmp = Path(tempfile.mkdtemp(prefix="kosmos-profile-"))
    os.environ.pop("SSH_AUTH_SOCK", None)
    sshd = start_sshd("profile")
    llm = subprocess.Popen(
        [py, "-c", LLM_SERVER, str(ROOT), *COMMANDS], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    assert llm.stdout is not None
    url = llm.stdout.readline().strip()
    try:
        (tmp / "skills" / "three").mkdir(parents=True)
        (tmp / "skills" / "three" / "SKILL.md").write_text(THREE)
        (tmp / "runs").mkdir()
        home = tmp / "home"
        ssh = fleet_home(home, sshd, n)
        env = {**os.environ, "HOME": str(home), "PYTHONPATH": str(ROOT)}
        bare = [BARE_FLEET, str(n), str(n), str(sshd.port), sshd.user]
        bare += [str(ssh / "id_ed25519"), str(ssh / "known_hosts"), "inside"]
        contenders = {
            "floor": [*bare, "-"],
            "+LLM": [*bare, url],
            "kosmos": [INPROCESS, str(ROOT), str(n), str(home), str(tmp / "skills"), url]
            + [str(tmp / "runs"), args.policy],
        }
        sums: dict[str, dict[str, float]] = {}
        totals: dict[str, float] = {}
        for name, (script, *argv) in contenders.items():
            out = tmp / f"{name}.prof"
            subprocess.run(
                [py, "-c", PROFILED, str(out), script, *argv],
                env=env, cwd=tmp, check=True, stdout=subprocess.DEVNULL,
            )  # fmt: skip
            sums[name], totals[name] = by_package(out)
            if args.keep:
                args.keep.mkdir(parents=True, exist_ok=True)
                shutil.copy(out, args.keep / out.name)
        kosmos_top = top_kosmos(tmp / "kosmos.prof", args.top)
    finally:
        llm.terminate()
        llm.wait()
        sshd.stop()
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(sshd.root, ignore_errors=True)
    print(f"{n} hosts in-process, kosmos --policy {args.policy}: CPU seconds of one run")
    print("(cProfile's own overhead included: compare the columns, not with table.py)")
    names = sorted({p for s in sums.values() for p in s}, key=lambda p: -sums["kosmos"].get(p, 0))
    print(f"{'package':28}" + "".join(f"{c:>10}" for c in contenders))
    for p in names:
        print(f"{p:28}" + "".join(f"{sums[c].get(p, 0.0):10.3f}" for c in contenders))
    print(f"{'total':28}" + "".join(f"{totals[c]:10.3f}" for c in contenders))
    print(f"\nkosmos's own functions, CPU of their own (and cumulative), top {args.top}:")
    for seconds, cumulative, where in kosmos_top:
        print(f"{seconds:8.3f} {cumulative:8.3f}  {where}")


if __name__ == "__main__":
    main()
