"""The cost of a fleet's plan (`fleet-plan.json`, written before its first host starts).

N hosts that all run on this machine (inventory `ansible_host: local`), a one-command skill,
a scripted LLM in its own process; the fleet runs in-process (`FleetFrontend.run()`), so its
wall time and this process's CPU time are the controller's. Medians of `--repeat` runs.
Run it once with the kosmos to measure on PYTHONPATH and once with the one before, e.g.:

    git archive bf49120 | tar -x -C /tmp/kosmos-before
    PYTHONPATH=/tmp/kosmos-before python benchmarks/fleet_journal.py --hosts 1000
    PYTHONPATH=. python benchmarks/fleet_journal.py --hosts 1000

It also times writing and reading the plan of N hosts alone, when this kosmos has one.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kosmos.config import load_settings
from kosmos.frontends.console import Console
from kosmos.frontends.fleet import FleetFrontend
from kosmos.frontends.request import RunRequest

SKILL = "---\nname: one\ndescription: one command\n---\nRun one command.\n"
LLM_SERVER = """
from tests.fleethelpers import scripted
from tests.llmserver import ScriptedLLM
llm = ScriptedLLM()
llm.default = scripted(["[CMD] true", "[DONE] ok"])
print(llm.base_url, flush=True)
llm._server.serve_forever()
"""


async def fleet(n: int, forks: int, root: Path, base_url: str, run: int) -> None:
    env = {"HOME": str(root / "home"), "AI_KOSMOS_MODEL_BASE_URL": base_url}
    settings = load_settings({}, env=env, cwd=root, home=root / "home")
    request = RunRequest(
        skill="one",
        inventory=root / "hosts.yml",
        non_interactive=True,
        yes=True,
        forks=forks,
        skills_dirs=(root / "skills",),
        transcript=root / f"run-{run}",
    )
    frontend = FleetFrontend(request, settings, env=env, home=root / "home")
    frontend.console = Console(out=io.StringIO(), err=io.StringIO(), color=False)
    code = await frontend.run()
    assert code == 0, frontend.console.out.getvalue()  # type: ignore[attr-defined]


def plan_alone(n: int, root: Path) -> None:
    try:
        from kosmos.fleet.plan import FleetPlan, read_plan, write_plan
    except ImportError:
        return
    plan = FleetPlan(
        run_id="x" * 32,
        skill="one",
        skill_path=str(root / "skills" / "one" / "SKILL.md"),
        params={},
        hosts=[(f"h{i:04d}", "local") for i in range(n)],
    )
    d = root / "plan"
    d.mkdir()
    wall, cpu = time.perf_counter(), time.process_time()
    write_plan(d, plan)
    w = (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000
    wall, cpu = time.perf_counter(), time.process_time()
    read_plan(d)
    r = (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000
    print(f"plan of {n} hosts: write {w[0]:.1f} ms wall, {w[1]:.1f} ms CPU; ", end="")
    print(f"read {r[0]:.1f} ms wall, {r[1]:.1f} ms CPU")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", type=int, default=1000)
    ap.add_argument("--forks", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="kosmos-journal-"))
    (root / "home").mkdir()
    (root / "skills" / "one").mkdir(parents=True)
    (root / "skills" / "one" / "SKILL.md").write_text(SKILL)
    last = f"{args.hosts - 1:04d}"
    (root / "hosts.yml").write_text(
        f"all:\n  hosts:\n    h[0000:{last}]:\n      ansible_host: local\n"
    )
    repo = Path(__file__).resolve().parent.parent
    llm = subprocess.Popen(
        [sys.executable, "-c", LLM_SERVER], stdout=subprocess.PIPE, text=True, cwd=repo
    )
    try:
        assert llm.stdout is not None
        base_url = llm.stdout.readline().strip()
        walls, cpus = [], []
        for i in range(args.repeat):
            wall, cpu = time.perf_counter(), time.process_time()
            asyncio.run(fleet(args.hosts, args.forks, root, base_url, i))
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu)
        print(
            f"{args.hosts} local hosts, forks {args.forks}: wall {statistics.median(walls):.2f} s, "
            f"controller CPU {statistics.median(cpus):.2f} s (median of {args.repeat}; "
            f"walls {', '.join(f'{w:.2f}' for w in walls)})"
        )
        plan_alone(args.hosts, root)
    finally:
        llm.terminate()
        llm.wait()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
