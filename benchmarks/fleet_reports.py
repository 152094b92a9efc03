"""LLM calls and wall time of a --canary fleet whose hosts' outputs differ, at N hosts.

Each host is a directory on this machine (a `LocalRunner` whose HOME and working directory
are its own, as the fleet tests make several hosts) holding a `role` file. A 3-command skill
(`cat role`, `uname -s`, `echo ok`) ends with a [DONE] that repeats the host's role, from a
scripted LLM on loopback (`--llm-delay S` makes each answer take S seconds, as a real model's
would). Three spreads of outputs:

* same: every host's role is the canary's;
* groups: three roles (`g0`, `g1`, `g2`), a third of the hosts each;
* distinct: every host's role is its own.

For each, the fleet core (`Fleet`, in-process, `--forks` hosts at once) runs with the canary
h000; `--reference` adds the fleet without a canary (one conversation per host). It prints
the LLM requests the server saw, the wall time, and how many hosts reported their own role.
Run it once per source tree to compare the code before and after a change:

    python benchmarks/fleet_reports.py --sizes 100,1000
    git archive BASE | tar -x -C /tmp/before && \
        python benchmarks/fleet_reports.py --sizes 100,1000 --tree /tmp/before
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def tree_from_argv() -> Path:
    """`--tree PATH`: the kosmos (and its tests' helpers) to measure; this checkout if none."""
    if "--tree" in sys.argv:
        return Path(sys.argv[sys.argv.index("--tree") + 1]).resolve()
    return ROOT


sys.path.insert(0, str(tree_from_argv()))

from tests.fleethelpers import Hosts, run_fleet  # noqa: E402
from tests.llmserver import Hang, Recorded, ScriptedLLM  # noqa: E402

COMMANDS = ("cat role", "uname -s", "echo ok")


def reply(delay: float) -> Callable[[Recorded], object]:
    """The scripted LLM: the three commands in turn, then a [DONE] naming the host's role."""

    def answer(record: Recorded) -> object:
        said = sum(1 for m in record.messages if m["role"] == "assistant")
        if said < len(COMMANDS):
            text = f"[CMD] {COMMANDS[said]}"
        else:
            first = record.messages[3]["content"]  # the output of `cat role`
            role = first.removeprefix("Command output:\n").split("\n")[0]
            text = f"[DONE] this host's role is {role}"
        return Hang(delay, text) if delay else text

    return answer


def roles(n: int, spread: str) -> dict[str, str]:
    names = [f"h{i:03d}" for i in range(n)]
    if spread == "same":
        return dict.fromkeys(names, "web")
    if spread == "groups":
        return {name: f"g{i % 3}" for i, name in enumerate(names)}
    return {name: f"r{i}" for i, name in enumerate(names)}


async def measure(
    llm: ScriptedLLM, n: int, spread: str, forks: int, canary: str | None
) -> tuple[int, float, int]:
    """(LLM requests, wall seconds, hosts whose report names their own role)."""
    given = roles(n, spread)
    with tempfile.TemporaryDirectory(prefix="kosmos-bench-") as tmp:
        root = Path(tmp)
        for name, role in given.items():
            (root / name).mkdir()
            (root / name / "role").write_text(role + "\n")
        before = len(llm.requests)
        started = time.perf_counter()
        run = await run_fleet(
            llm.base_url, list(given), open_runner=Hosts(root), canary=canary, forks=forks
        )
        wall = time.perf_counter() - started
    assert run.result.exit_code == 0, run.result.message
    own = sum(1 for h in run.result.hosts if h.message == f"this host's role is {given[h.host]}")
    return len(llm.requests) - before, wall, own


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100")
    parser.add_argument("--forks", type=int, default=100)
    parser.add_argument("--spreads", default="same,groups,distinct")
    parser.add_argument("--llm-delay", type=float, default=0.0, help="seconds per LLM answer")
    parser.add_argument("--reference", action="store_true", help="also run without a canary")
    parser.add_argument("--tree", help="the source tree to measure (default: this checkout)")
    args = parser.parse_args()
    llm = ScriptedLLM().start()
    llm.default = reply(args.llm_delay)
    print(f"tree {tree_from_argv()} · forks {args.forks} · LLM delay {args.llm_delay}s")
    print(f"{'hosts':>6}  {'outputs':<9} {'run':<10} {'LLM calls':>9}  {'wall':>7}  own reports")
    try:
        for n in (int(s) for s in args.sizes.split(",")):
            for spread in args.spreads.split(","):
                runs = [("canary", "h000")] + ([("no canary", None)] if args.reference else [])
                for label, canary in runs:
                    calls, wall, own = asyncio.run(measure(llm, n, spread, args.forks, canary))
                    print(
                        f"{n:>6}  {spread:<9} {label:<10} {calls:>9}  {wall:>6.2f}s  {own}/{n}",
                        flush=True,
                    )
    finally:
        llm.stop()


if __name__ == "__main__":
    main()
