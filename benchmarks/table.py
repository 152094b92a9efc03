"""Every row of the speed table, each against its floor, in one run, with the lock on.

Rows (each floor is built from the same libraries, in a process of its own, doing the same
work and nothing else):

* 20-step headless run, local: `kosmos run --host local` / httpx + asyncio subprocess;
* 20-step headless run over SSH: `kosmos run --host box` / httpx + asyncssh;
* 1,000 hosts, a 1,000-block ssh config, `--forks 100 --canary h000`: `kosmos run` /
  a bare asyncssh fan-out (100 at once) of the same 3 commands;
* 50 hosts in-process: `FleetFrontend.run()` / a bare asyncssh `gather`, each timed inside a
  process of its own after one warm-up run there (imports and first-use costs left out).

The in-process row has a second reference, `+LLM`: the bare gather that also makes the LLM
requests kosmos makes (one before each command, one after the last, to the same scripted LLM)
and runs what they answer; its floor leaves the LLM out. (The 1,000-host row needs none: with
`--canary` only the canary asks the LLM, the others replay its answers.) Under each row, the
CPU seconds of one run on the hosts' side (the loopback sshd and all it starts, read from a
cgroup v2 of its own) and of the fleet's LLM server: on loopback both share the two cores.

kosmos runs under `--policy read-only` (default; `--policy locked` also works): every command
it runs unasked (`true`, `hostname`, `uptime`, `df -P /` are reads) runs inside the kernel
lock's prelude. `--policy yes` runs them with `--yes` instead, without the lock.

`--before DIR` also times another checkout's kosmos (e.g. `git worktree add /tmp/before
main`, or `git archive main | tar -x -C DIR`) with the same floors, interleaved: each round
runs floor, after, before once per row, each round starting with the next of them, so that
load changes and a place in the order hit all alike. Medians of `--repeat` rounds after one
warm-up round; the load average is printed at the start and the end.

Each cell gives the wall time and the contender's own CPU time (user + system of its process,
not of its children): on loopback the hosts' side (sshd, the shells, the lock's prelude) runs
on this machine's cores too, where a real fleet's hosts would carry it, and the other
engineers' load sways the wall clock more than the CPU a process used.

    sudo python benchmarks/table.py [--repeat 5] [--before DIR] [--policy read-only]
        [--rows local,ssh,fleet,inprocess] [--hosts 1000] [--forks 100] [--inprocess-hosts 50]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.step_overhead import FLOOR as STEPS_FLOOR  # noqa: E402
from benchmarks.step_overhead import _steps_llm  # noqa: E402
from tests.sshd import Sshd, start_sshd, write_client_home  # noqa: E402

STEPS = 20
COMMANDS = ("hostname", "uptime", "df -P /")
THREE = "---\nname: three\ndescription: three commands\n---\nRun three commands.\n"
STEPS_SKILL = "---\nname: steps\ndescription: d\n---\nRun.\n"

# The fleet floor: one connection per host with its settings given outright, the 3 commands
# in turn, at most FORKS at once. Timed whole (`process`) or after one warm-up (`inside`).
# With an LLM's URL (not "-"), each host also asks the scripted LLM before each command and
# once after the last, as kosmos does, and runs what it answers: the floor plus the LLM's
# part of the work (the `+LLM` reference), which the floor leaves out.
BARE_FLEET = r"""
import asyncio, sys, time
import asyncssh
n, forks, port, user, key, known, how, url = sys.argv[1:]
n, forks = int(n), int(forks)
COMMANDS = ("hostname", "uptime", "df -P /")

async def fleet():
    slots = asyncio.Semaphore(forks)
    clients = []
    if url != "-":  # clients of 4 connections each: httpcore looks over every idle
        import httpx  # connection of a client at each request, so one of 100 costs more
        clients = [httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=4))
                   for _ in range(-(-forks // 4))]
    async def host(i):
        async with slots, asyncssh.connect("127.0.0.1", int(port), username=user,
                client_keys=[key], known_hosts=known, config=[]) as conn:
            if not clients:
                for command in COMMANDS:
                    await conn.run(command, check=True)
                return
            client = clients[i % len(clients)]
            messages = [{"role": "system", "content": f"host: h{i:03d}"},
                        {"role": "user", "content": "go"}]
            while True:
                body = {"model": "m", "messages": messages}
                reply = (await client.post(url + "/chat/completions", json=body)).json()
                text = reply["choices"][0]["message"]["content"]
                messages.append({"role": "assistant", "content": text})
                if not text.startswith("[CMD]"):
                    break
                output = (await conn.run(text[6:], check=True)).stdout
                messages.append({"role": "user", "content": "Command output:\n" + output})
    try:
        await asyncio.gather(*(host(i) for i in range(n)))
    finally:
        for client in clients:
            await client.aclose()

if how == "inside":
    asyncio.run(fleet())
    t, c = time.perf_counter(), time.process_time()
    asyncio.run(fleet())
    print(time.perf_counter() - t, time.process_time() - c)
else:
    asyncio.run(fleet())
"""

# kosmos in-process on a fleet, from the checkout first on sys.path (argv[1]).
INPROCESS = r"""
import asyncio, io, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
n, home, skills, url, runs, policy = sys.argv[2:]
from kosmos.config import load_settings
from kosmos.frontends.console import Console
from kosmos.frontends.fleet import FleetFrontend
from kosmos.frontends.run import RunRequest

async def once():
    env = {"HOME": home, "AI_KOSMOS_MODEL_BASE_URL": url}
    settings = load_settings({}, env=env, cwd=Path(skills), home=Path(home))
    choice = {"yes": True} if policy == "yes" else {"policy": policy}
    request = RunRequest(skill="three", hosts_pattern="h*", non_interactive=True,
                         forks=int(n), skills_dirs=(Path(skills),),
                         transcript=Path(runs) / f"in-{time.monotonic_ns()}", **choice)
    frontend = FleetFrontend(request, settings, env=env, home=Path(home))
    frontend.console = Console(out=io.StringIO(), err=io.StringIO(), color=False)
    code = await frontend.run()
    assert code == 0, frontend.console.out.getvalue()

asyncio.run(once())
t, c = time.perf_counter(), time.process_time()
asyncio.run(once())
print(time.perf_counter() - t, time.process_time() - c)
"""

LLM_SERVER = """
import sys
sys.path.insert(0, sys.argv[1])
from tests.fleethelpers import scripted
from tests.llmserver import ScriptedLLM
llm = ScriptedLLM()
llm.default = scripted([*("[CMD] " + c for c in sys.argv[2:]), "[DONE] ok"])
print(llm.base_url, flush=True)
llm._server.serve_forever()
"""


def fleet_home(home: Path, sshd: Sshd, n: int) -> Path:
    """A HOME whose ~/.ssh/config has one block per alias h000..., as a real fleet's has."""
    ssh = home / ".ssh"
    ssh.mkdir(mode=0o700, parents=True, exist_ok=True)
    key = ssh / "id_ed25519"
    key.write_bytes(sshd.client_key.read_bytes())
    key.chmod(0o600)
    blocks = [
        f"Host h{i:03d}\n  HostName 127.0.0.1\n  Port {sshd.port}\n  User {sshd.user}\n"
        for i in range(n)
    ]
    common = (
        f"Host *\n  IdentityFile {key}\n  IdentitiesOnly yes\n"
        f"  UserKnownHostsFile {ssh / 'known_hosts'}\n  BatchMode yes\n"
    )
    (ssh / "config").write_text("".join(blocks) + common)
    (ssh / "known_hosts").write_text(sshd.known_hosts_line())
    return ssh


Timing = tuple[float, float]  # seconds: wall, and the CPU (user + system) of the process


def run_process(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[bytes, float]:
    """Run to the end; its stdout, and the CPU it used (not its children's: not the shells a
    local run starts, nor the loopback sshd's, whose work a real fleet's hosts do)."""
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=err,
        )  # fmt: skip
        assert proc.stdout is not None
        out = proc.stdout.read()
        proc.stdout.close()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            sys.exit(f"{' '.join(argv[:7])}... failed: {err.read().decode()[-1500:]}")
    return out, usage.ru_utime + usage.ru_stime


def whole(argv: list[str], env: dict[str, str], cwd: Path) -> Callable[[], Timing]:
    """A contender timed as a whole process."""

    def run() -> Timing:
        t = time.perf_counter()
        _, cpu = run_process(argv, env, cwd)
        return time.perf_counter() - t, cpu

    return run


def inside(argv: list[str], env: dict[str, str], cwd: Path) -> Callable[[], Timing]:
    """A contender that times itself and prints its wall and CPU seconds."""

    def run() -> Timing:
        wall, cpu = run_process(argv, env, cwd)[0].decode().split()[-2:]
        return float(wall), float(cpu)

    return run


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) of the process `pid`, all its threads; 0 if it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


class HostsCPU:
    """The CPU of the loopback sshd and of everything it starts (sessions, shells, the lock's
    prelude, what outlives its parent too), from a cgroup v2 of their own; `seconds()` is None
    where no cgroup could be made (no cgroup v2, or not root)."""

    def __init__(self, pid: int) -> None:
        self.dir: Path | None = None
        for base in (Path("/sys/fs/cgroup/unified"), Path("/sys/fs/cgroup")):
            where = base / f"kosmos-table-{os.getpid()}"
            try:
                if not (base / "cgroup.controllers").exists():  # not a cgroup v2
                    continue
                where.mkdir()
                (where / "cgroup.procs").write_text(str(pid))
            except OSError:
                with contextlib.suppress(OSError):
                    where.rmdir()
                continue
            self.dir = where
            break

    def seconds(self) -> float | None:
        if self.dir is None:
            return None
        for line in (self.dir / "cpu.stat").read_text().splitlines():
            if line.startswith("usage_usec "):
                return int(line.split()[1]) / 1e6
        return None

    def close(self) -> None:
        """Remove the cgroup (once the sshd and its sessions are gone)."""
        if self.dir is not None:
            for _ in range(50):
                try:
                    self.dir.rmdir()
                    return
                except OSError:
                    time.sleep(0.1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--before", type=Path, help="another checkout to time beside this one")
    parser.add_argument("--policy", default="read-only", help="read-only (lock), locked or yes")
    parser.add_argument("--rows", default="local,ssh,fleet,inprocess")
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--forks", type=int, default=100)
    parser.add_argument("--inprocess-hosts", type=int, default=50)
    args = parser.parse_args()
    rows = args.rows.split(",")
    roots = {"after": ROOT}
    if args.before:
        if not (args.before / "kosmos" / "__init__.py").is_file():
            sys.exit(f"--before {args.before}: no kosmos/ there; give a checkout's top folder")
        roots["before"] = args.before.resolve()
    py = sys.executable
    policy = ["--yes"] if args.policy == "yes" else ["--policy", args.policy]
    tmp = Path(tempfile.mkdtemp(prefix="kosmos-table-"))
    for root in roots.values():  # as installed: bytecode cached
        subprocess.run([py, "-m", "compileall", "-q", str(root / "kosmos")], check=True)
    os.environ.pop("SSH_AUTH_SOCK", None)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    print(f"load average at start: {load()}  ({os.cpu_count()} cores)")
    sshd = start_sshd("table")
    hosts_cpu = HostsCPU(sshd.pid)
    steps_llm = _steps_llm(STEPS)
    fleet_llm = subprocess.Popen(
        [py, "-c", LLM_SERVER, str(ROOT), *COMMANDS], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    assert fleet_llm.stdout is not None
    fleet_url = fleet_llm.stdout.readline().strip()
    # Each row: its label and its contenders (the floor first), each a call timing one run.
    table: dict[str, dict[str, Callable[[], Timing]]] = {}
    # The rows that ask the fleet's LLM server, and those whose process runs its fleet twice.
    on_fleet_llm: set[str] = set()
    twice: set[str] = set()
    try:
        skills = tmp / "skills"
        for name, text in (("steps", STEPS_SKILL), ("three", THREE)):
            (skills / name).mkdir(parents=True)
            (skills / name / "SKILL.md").write_text(text)
        runs = tmp / "runs"
        runs.mkdir()
        home = tmp / "home"
        ssh = write_client_home(home, sshd)
        where = f"127.0.0.1,{sshd.port},{sshd.user},{ssh / 'id_ed25519'},{ssh / 'known_hosts'}"
        base = {**os.environ, "HOME": str(home), "AI_KOSMOS_MODEL_BASE_URL": steps_llm.base_url}
        envs = {label: {**base, "PYTHONPATH": str(root)} for label, root in roots.items()}
        run = [py, "-m", "kosmos", "run", "steps", "--skills-dir", str(skills)]
        run += ["--non-interactive", "--max-steps", str(STEPS + 5), *policy]
        url = steps_llm.base_url
        for row, host, floor_where in (("local", "local", "local"), ("ssh", "box", where)):
            if row in rows:
                label = f"{STEPS}-step run, {'local' if row == 'local' else 'over SSH'}"
                floor = [py, "-c", STEPS_FLOOR, url, str(STEPS), floor_where]
                table[label] = {"floor": whole(floor, base, tmp)} | {
                    k: whole([*run, "--host", host], e, tmp) for k, e in envs.items()
                }
        if "fleet" in rows:
            n, forks = args.hosts, args.forks
            fhome = tmp / f"home-{n}"
            fssh = fleet_home(fhome, sshd, n)
            fenv = {**os.environ, "HOME": str(fhome), "AI_KOSMOS_MODEL_BASE_URL": fleet_url}
            key, known = str(fssh / "id_ed25519"), str(fssh / "known_hosts")
            bare = [py, "-c", BARE_FLEET, str(n), str(forks), str(sshd.port), sshd.user]
            fleet_run = [py, "-m", "kosmos", "run", "three", "--skills-dir", str(skills)]
            fleet_run += ["--hosts", "h*", "--forks", str(forks), "--canary", "h000"]
            fleet_run += ["--non-interactive", *policy]
            row = f"{n} hosts, {n}-block config, --forks {forks} --canary"
            on_fleet_llm.add(row)
            table[row] = {"floor": whole([*bare, key, known, "process", "-"], fenv, tmp)} | {
                k: whole(fleet_run, {**fenv, "PYTHONPATH": str(root)}, tmp)
                for k, root in roots.items()
            }
        if "inprocess" in rows:
            n = args.inprocess_hosts
            ihome = tmp / f"home-{n}"
            issh = fleet_home(ihome, sshd, n)
            ienv = {**os.environ, "HOME": str(ihome)}
            key, known = str(issh / "id_ed25519"), str(issh / "known_hosts")
            bare = [py, "-c", BARE_FLEET, str(n), str(n), str(sshd.port), sshd.user, key, known]
            how = args.policy
            row = f"{n} hosts in-process"
            on_fleet_llm.add(row)
            twice.add(row)
            table[row] = {
                "floor": inside([*bare, "inside", "-"], ienv, tmp),
                "+LLM": inside([*bare, "inside", fleet_url], ienv, tmp),
            } | {
                k: inside(
                    [py, "-c", INPROCESS, str(root), str(n), str(ihome), str(skills)]
                    + [fleet_url, str(runs), how],
                    {**ienv, "PYTHONPATH": str(root)},
                    tmp,
                )
                for k, root in roots.items()
            }
        times: dict[str, dict[str, list[Timing]]] = {
            row: {k: [] for k in contenders} for row, contenders in table.items()
        }
        # The CPU the hosts' side (the loopback sshd and everything it started: sessions,
        # shells, the lock's prelude) and the fleet rows' LLM server used during each run: on
        # loopback they share the cores with the contender. An in-process contender's process
        # runs its fleet twice (a warm-up, then the timed run): half of it is one run's.
        beside: dict[str, dict[str, list[tuple[float, float]]]] = {
            row: {k: [] for k in contenders} for row, contenders in table.items()
        }
        for round_ in range(args.repeat + 1):  # round 0 warms up: page cache, bytecode, sshd
            for row, contenders in table.items():
                llm_pid = fleet_llm.pid if row in on_fleet_llm else 0
                runs_per = 2 if row in twice else 1
                # Each round starts with the next contender: a run's place in the round can sway
                # its time (two processes importing the same code, alternated in a fixed order,
                # differed by 60 ms on a 2-core machine, the first of each pair the slower).
                order = list(contenders.items())
                order = order[round_ % len(order) :] + order[: round_ % len(order)]
                for k, contender in order:
                    hosts0, llm0 = hosts_cpu.seconds() or 0.0, proc_cpu(llm_pid)
                    timing = contender()
                    time.sleep(0.2)  # the last sessions' ends
                    on_hosts = ((hosts_cpu.seconds() or 0.0) - hosts0) / runs_per
                    on_llm = (proc_cpu(llm_pid) - llm0) / runs_per
                    if round_:
                        times[row][k].append(timing)
                        beside[row][k].append((on_hosts, on_llm))
    finally:
        steps_llm.stop()
        fleet_llm.terminate()
        fleet_llm.wait()
        sshd.stop()
        hosts_cpu.close()
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(sshd.root, ignore_errors=True)
    print(f"load average at the end: {load()}")
    print(
        f"kosmos {' '.join(policy)}; medians of {args.repeat} interleaved rounds: wall seconds "
        "(x the floor's), then the process's own CPU seconds (x the floor's)"
    )
    print(f"{'row':46} {'floor':>13} " + " ".join(f"{k:>27}" for k in roots))
    for row, by in times.items():
        wall = {k: statistics.median(t[0] for t in ts) for k, ts in by.items()}
        cpu = {k: statistics.median(t[1] for t in ts) for k, ts in by.items()}
        cells = [
            f"{wall[k]:6.3f} ({wall[k] / wall['floor']:4.2f}x) "
            f"{cpu[k]:6.3f} ({cpu[k] / cpu['floor']:4.2f}x)"
            for k in roots
        ]
        floor_cell = f"{wall['floor']:6.3f} {cpu['floor']:6.3f}"
        print(f"{row:46} {floor_cell:>13} " + " ".join(f"{c:>27}" for c in cells))
        if "+LLM" in by:  # the floor with the LLM's part of the work: kosmos x that
            ref = f"{wall['+LLM']:6.3f} {cpu['+LLM']:6.3f}"
            cells = [
                f"{wall[k] / wall['+LLM']:4.2f}x wall, {cpu[k] / cpu['+LLM']:4.2f}x CPU"
                for k in roots
            ]
            label = "  +LLM: the floor, and the same LLM requests"
            print(f"{label:46} {ref:>13} " + " ".join(f"{c:>27}" for c in cells))
        host_s = {k: statistics.median(t[0] for t in ts) for k, ts in beside[row].items()}
        llm_s = {k: statistics.median(t[1] for t in ts) for k, ts in beside[row].items()}
        said = ", ".join(
            f"{k} {host_s[k]:.2f}" + (f" + {llm_s[k]:.2f}" if row in on_fleet_llm else "")
            for k in by
        )
        what = "hosts' CPU + the LLM server's" if row in on_fleet_llm else "hosts' CPU"
        if hosts_cpu.dir is None:
            said += " (the hosts' part unmeasured: no cgroup v2 here)"
        print(f"  {what}, s: {said}")


if __name__ == "__main__":
    main()
