"""The TUI's fleet screen at 100 / 500 / 1,000 hosts beside headless `kosmos run` on the same fleet.

N ~/.ssh/config aliases point at one OpenSSH sshd on loopback (started here, as root, like the
tests' fixture; see benchmarks/fleet.py). A scripted LLM in its own process answers every
request at once: `[CMD] hostname`, `[CMD] uptime`, `[CMD] df -P /`, then `[DONE]`.

* headless: `kosmos run three --hosts 'h*' --forks F --non-interactive --yes` in a process of
  its own (the reference), and the same with `--policy read-only`: `A` in the TUI is a
  standing approval, so the hosts nobody looked at run its reads inside the kernel lock, as
  `read-only` runs them, where `--yes` runs them without it;
* TUI: `kosmos tui` in a process of its own, driven by Textual's Pilot at 200x50. Every frame
  is rendered to terminal bytes as a terminal driver would (and thrown away). The script starts
  the fleet and presses `A` as each command's approval bar appears; all along, it presses
  `Down`/`Up` on the host table every 100 ms and times each key to the first frame that shows
  the table's cursor on its new row.

Printed for each size, each figure beside its aim: time to done (TUI: from the start key to
the summary on screen; headless: the fleet's own duration), key latency while busy (p50, p95,
max; how much of each key's wait was the screen's thread's own CPU; and, for the five
slowest, that CPU, the time the thread was runnable but waiting for a core (the kernel's
schedstat) and the rest, asleep), the TUI's CPU use while idle after the run (from a second after
the fleet's thread has ended, once the screen has handled what the end sent), `knowledge_timeout`
notices in each side's transcripts, and peak RSS (the TUI's process: the screen and, on a
thread of its own, the fleet).

`--split-cores` puts the loopback sshd, and every session and command it starts, on the last
core and everything else (kosmos on both sides, the LLM) on the others: the hosts' work then
no longer takes the controller's cores, as on a real fleet, where it runs on the hosts. On a
shared loopback, a hundred sessions at once each get the scheduler's share (each is a session
and, with autogroup, a group of its own), and the screen's process waits for a core. The
scripted LLM runs in a session of its own too, as a remote endpoint would: it does not share
the scheduler's group of the terminal kosmos runs in.

    sudo python benchmarks/tui_fleet.py [--sizes 100,500,1000] [--forks 100] [--split-cores]
    sudo python benchmarks/tui_fleet.py --sizes 500 --profile /tmp/tui.prof   # cProfile, the
    screen's thread's CPU time
    (a --profile name ending in .yappi profiles every thread with yappi, far slower)
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# The TUI's process (`--child`) stands for `kosmos tui`: it imports what the screen does, and
# none of this harness's SSH and fleet code (benchmarks.fleet), which the parent imports.

SIZE = (200, 50)
KEY_EVERY = 0.1  # seconds between two probe keys
IDLE_S = 5.0  # how long the idle CPU is measured after the run
LOST_S = 2.0  # a probe key not shown this long is reported as lost, and the probe goes on
AGAIN_S = 5.0  # a bar still showing a command this long after its `A`: the key had no effect


def _run_delay() -> float:
    """How long this thread has waited for a core, runnable (the kernel's schedstat), in s."""
    try:
        return int(Path("/proc/thread-self/schedstat").read_text().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


# -- the TUI side, in a child process ---------------------------------------------------------


def _child(args: argparse.Namespace) -> None:
    figures = asyncio.run(_drive_tui(Path(args.home), Path(args.skills), args.forks, args.profile))
    print(json.dumps(figures), flush=True)


async def _drive_tui(home: Path, skills: Path, forks: int, profile: str | None) -> dict[str, Any]:
    from textual import events

    from kosmos.config import load_settings
    from kosmos.fleet.targets import resolve_hosts
    from kosmos.hosts.sshconfig import SSHConfigFile, local_user
    from kosmos.prompts import Prompts
    from kosmos.tui.app import KosmosApp, TuiConfig
    from kosmos.tui.screens.fleet import FleetScreen
    from tests.tuihelpers import running_timers

    env = dict(os.environ)
    settings = load_settings({}, env=env, cwd=skills, home=home)
    ssh_config = SSHConfigFile(home / ".ssh" / "config", local_user())
    fleet = resolve_hosts([], "h*", inventory=None, ssh_config=ssh_config)
    from kosmos.frontends.run import skill_library

    config = TuiConfig(
        settings=settings,
        library=skill_library(settings, [skills], env, home),
        prompts=Prompts.load(),
        hosts=["local", *(h.name for h in fleet)],
        fleet=list(fleet),
        forks=forks,
        skill="three",
        env=env,
        home=home,
    )

    class Probe(KosmosApp):
        """The app, each frame rendered to terminal bytes; the probe's key is timed to the
        first frame that shows the table's cursor on the row it asked for."""

        wanted: tuple[int, asyncio.Future[tuple[float, float, float]]] | None = None

        def _display(self, screen: Any, renderable: Any) -> None:
            super()._display(screen, renderable)
            if renderable is None or self._batch_count:
                return
            render = getattr(renderable, "render_segments", None)
            if render is not None:
                render(self.console)  # what a terminal driver writes
            wanted = self.wanted
            if wanted is None or wanted[1].done() or not isinstance(screen, FleetScreen):
                return
            table = screen.table
            if table.is_mounted and table.cursor_row == wanted[0]:
                # When, and the screen's thread's CPU and wait for a core so far.
                wanted[1].set_result((time.perf_counter(), time.thread_time(), _run_delay()))

    from kosmos.heap import settle

    app = Probe(config)
    settle()  # as `kosmos tui` does before its app starts
    latencies: list[float] = []
    key_cpu: list[float] = []
    key_queued: list[float] = []
    figures: dict[str, Any] = {}
    profiler = _start_profile(profile)
    async with app.run_test(size=SIZE) as pilot:
        while not app.main.sidebar.marked or app.main.query_one("SkillPanel").skill is None:
            await pilot.pause(0.05)
        await pilot.press("ctrl+r")
        while not isinstance(app.screen, FleetScreen):
            await pilot.pause(0.02)
        screen = app.screen
        while screen.fleet is None:  # started as the screen mounts
            await pilot.pause(0.02)
        started = time.perf_counter()
        cpu_started, ui_started = time.process_time(), time.thread_time()
        await pilot.press("ctrl+r")

        def done() -> bool:
            # Not a DOM query: a query walks every widget of the screen, each time.
            finished = getattr(screen, "finished", None)
            if finished is None:  # before the screen said so (an older kosmos)
                controller = screen.controller
                return controller is not None and controller.result is not None
            return bool(finished)

        notices: list[str] = []
        notify = screen.notify

        def noted(message: str, *args: Any, **kwargs: Any) -> None:
            notices.append(f"{time.perf_counter() - started:.1f}s {message}")
            notify(message, *args, **kwargs)

        screen.notify = noted  # type: ignore[method-assign]

        async def approve() -> None:
            # `A` as soon as each command's bar appears (once per command). A bar that still,
            # or again, shows a command `A` was pressed for is a key without effect: it is
            # reported with what the screen held, and `A` is pressed again.
            pressed: dict[tuple[str, bool], tuple[float, Any]] = {}
            while not done():
                request = screen.bar.request
                if request is not None:
                    key = (request.proposal.command, request.proposal.inferred)
                    now = time.perf_counter()
                    if key in pressed and now - pressed[key][0] > AGAIN_S:
                        same = "the same request" if request is pressed[key][1] else "a new one"
                        figures.setdefault("again", []).append(
                            f"{now - started:.1f}s: `{key[0]}` (inferred {key[1]}) still shown "
                            f"{now - pressed[key][0]:.1f} s after `A` ({same}, host "
                            f"{request.proposal.host}, {len(screen.bar.hosts)} waiting; focus "
                            f"{type(app.focused).__name__}; run_all allowed "
                            f"{screen.check_action('run_all', ())}); last notices: "
                            f"{notices[-3:]}"
                        )
                        del pressed[key]
                    if key not in pressed:
                        pressed[key] = (now, request)
                        app.post_message(events.Key("A", "A"))
                await asyncio.sleep(0.02)

        async def probe() -> None:
            # Woken by the frame that shows the key's effect (no polling beside the app: the
            # probe's own CPU would be counted as the screen's).
            loop = asyncio.get_running_loop()
            down = True
            while not done():
                table = screen.table
                if not table.has_focus:
                    app.post_message(events.Key("ctrl+t", None))
                    await asyncio.sleep(0.05)
                    continue
                row = table.cursor_row
                if row <= 0:
                    down = True
                elif row >= table.row_count - 1:
                    down = False
                want = row + (1 if down else -1)
                shown: asyncio.Future[tuple[float, float, float]] = loop.create_future()
                app.wanted = (want, shown)
                sent, cpu, queued = time.perf_counter(), time.thread_time(), _run_delay()
                focus = type(app.focused).__name__
                app.post_message(events.Key("down" if down else "up", None))
                while not done():
                    try:
                        at, cpu_at, queued_at = await asyncio.wait_for(asyncio.shield(shown), 0.05)
                        latencies.append(at - sent)
                        # The key's wait: the screen's thread's own CPU, its time runnable
                        # but waiting for a core, and the rest (asleep: nothing to do).
                        key_cpu.append(cpu_at - cpu)
                        key_queued.append(queued_at - queued)
                        break
                    except TimeoutError:
                        pass
                    if table.cursor_row != row and table.cursor_row != want:
                        break  # moved by something else: not counted
                    if not table.has_focus and time.perf_counter() - sent > 0.5:
                        break  # the focus went to a host's view before the key was handled
                    if time.perf_counter() - sent > LOST_S:
                        # Not shown, and the cursor did not move: reported, not timed.
                        figures.setdefault("lost", []).append(
                            f"{sent - started:.1f}s: row {row} -> {want}, cursor now "
                            f"{table.cursor_row}; focus {focus} when sent, "
                            f"{type(app.focused).__name__} now"
                        )
                        break
                app.wanted = None
                await asyncio.sleep(KEY_EVERY)

        async def progress() -> None:
            # Where the run is, every 5 s, on stderr (shown if the run fails or times out).
            while not done():
                await asyncio.sleep(5)
                states = collections.Counter(run.state for run in screen.fleet_runs)
                request = screen.bar.request
                waiting = request.proposal.command if request else None
                print(
                    f"{time.perf_counter() - started:6.1f}s {dict(states)} bar: {waiting} "
                    f"keys timed: {len(latencies)}",
                    file=sys.stderr,
                    flush=True,
                )

        tasks = [asyncio.ensure_future(f()) for f in (approve, probe, progress)]
        while not done():
            await asyncio.sleep(0.05)
        figures["done_s"] = time.perf_counter() - started
        # CPU seconds of the whole process, and of the screen's thread alone, during the run.
        figures["cpu_s"] = time.process_time() - cpu_started
        figures["ui_cpu_s"] = time.thread_time() - ui_started
        for task in tasks:
            if task.done() and not task.cancelled() and task.exception() is not None:
                # A helper that died early (the key probe: too few keys timed) is reported.
                error = task.exception()
                figures.setdefault("errors", []).append(f"{type(error).__name__}: {error}")
                traceback.print_exception(error, file=sys.stderr)
            task.cancel()
        _stop_profile(profiler, profile)
        # The run's end: the fleet's thread closes every host and transcript and ends, and
        # the screen draws the summary. The idle window starts once both are done.
        ended = time.perf_counter()
        fleet = screen.fleet
        while fleet is not None and fleet.running and time.perf_counter() - ended < 60:
            await asyncio.sleep(0.05)
        figures["fleet_exit_s"] = time.perf_counter() - ended
        await pilot.pause()
        await asyncio.sleep(1.0)  # the last frames
        cpu0, wall0 = time.process_time(), time.perf_counter()
        await asyncio.sleep(IDLE_S)
        figures["idle_cpu"] = (time.process_time() - cpu0) / (time.perf_counter() - wall0)
        figures["timers"] = running_timers(app)
        run_dir = screen.controller.run_dir
        figures["result"] = screen.controller.result.counts
        figures["fleet_s"] = screen.controller.result.duration_s
        await pilot.press("ctrl+w")
    figures["latencies"] = latencies
    figures["key_cpu"] = key_cpu
    figures["key_queued"] = key_queued
    figures["run_dir"] = str(run_dir)
    # The screen and the fleet's thread: one process, whose peak holds both.
    figures["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return figures


def _start_profile(path: str | None) -> Any:
    if not path:
        return None
    if not path.endswith(".yappi"):
        import cProfile

        # The screen's thread's own CPU time: a wait for the interpreter lock is not its cost.
        prof = cProfile.Profile(time.thread_time)
        prof.enable()
        return prof
    import yappi  # every thread, at a high cost in speed: pip install yappi

    yappi.set_clock_type("cpu")
    yappi.start()
    return yappi


def _stop_profile(profiler: Any, path: str | None) -> None:
    if profiler is None or path is None:
        return
    if hasattr(profiler, "disable"):
        profiler.disable()
        profiler.dump_stats(path)
        return
    profiler.stop()
    profiler.get_func_stats().save(path, type="pstat")
    with open(path + ".threads", "w") as out:
        profiler.get_thread_stats().print_all(out=out)


# -- both sides, from the parent ----------------------------------------------------------------


def knowledge_timeouts(run_dir: Path) -> int:
    """Notices of a knowledge read that timed out, in every host's transcript."""
    count = 0
    for path in run_dir.glob("*.jsonl"):
        for line in path.read_text().splitlines():
            if "knowledge file skipped" in line and "longer than" in line:
                count += 1
    return count


def tree_pss_mb(pid: int) -> float:
    """The proportional set size of `pid` and its descendants (shared pages split among the
    processes that map them), in MB; 0 for a process that has gone."""
    total, todo = 0, [pid]
    while todo:
        one = todo.pop()
        with contextlib.suppress(OSError, ValueError):
            for line in Path(f"/proc/{one}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
            for task in Path(f"/proc/{one}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
    return total / 1024


def measured(
    argv: list[str], env: dict[str, str], timeout: float | None = None
) -> tuple[str, float, float, float, float]:
    """Run to the end: (stdout, wall seconds, the process's peak RSS in MB, its CPU seconds,
    the peak PSS of it and its descendants in MB, sampled every 0.2 s); past `timeout`
    seconds it is killed and the benchmark stops, naming it."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as err:  # a pipe could fill up and stall the process
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=err)
        assert proc.stdout is not None
        killer = threading.Timer(timeout, proc.kill) if timeout else None
        if killer is not None:
            killer.start()
        pss = [0.0]
        ended = threading.Event()

        def sample() -> None:
            while not ended.wait(0.2):
                pss[0] = max(pss[0], tree_pss_mb(proc.pid))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        out = proc.stdout.read()
        ended.set()
        sampler.join()
        _, status, usage = os.wait4(proc.pid, 0)
        if killer is not None:
            killer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - started
        if proc.returncode != 0:
            err.seek(0)
            why = f"killed after {timeout:g} s" if proc.returncode == -9 else "failed"
            tail = err.read().decode(errors="replace")[-3000:]
            sys.exit(f"{' '.join(argv[1:4])} {why} ({proc.returncode}): {tail}")
    return out.decode(), wall, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime, pss[0]


def headless(
    home: Path, skills: Path, base_url: str, runs: Path, forks: int, policy: str = "auto"
) -> dict[str, Any]:
    env = {**os.environ, "HOME": str(home), "AI_KOSMOS_MODEL_BASE_URL": base_url}
    env["PYTHONPATH"] = str(ROOT)
    run_dir = runs / f"headless-{time.monotonic_ns()}"
    _, wall, rss, cpu, pss = measured(
        [sys.executable, "-m", "kosmos", "run", "three", "--skills-dir", str(skills)]
        + ["--hosts", "h*", "--forks", str(forks), "--non-interactive", "--policy", policy]
        + ["--transcript", str(run_dir)],
        env,
    )
    result = json.loads((run_dir / "fleet.json").read_text())
    return {
        "done_s": result["duration_s"],
        "wall_s": wall,
        "rss_mb": rss,
        "pss_mb": pss,
        "cpu_s": cpu,
        "timeouts": knowledge_timeouts(run_dir),
        "result": result["counts"],
    }


def tui(
    home: Path, skills: Path, base_url: str, forks: int, profile: str | None, timeout: float
) -> dict[str, Any]:
    env = {**os.environ, "HOME": str(home), "AI_KOSMOS_MODEL_BASE_URL": base_url}
    env["PYTHONPATH"] = str(ROOT)
    argv = [sys.executable, str(Path(__file__).resolve()), "--child", "--home", str(home)]
    argv += ["--skills", str(skills), "--forks", str(forks)]
    argv += ["--profile", profile] if profile else []
    out, wall, _, _, pss = measured(argv, env, timeout)
    figures = json.loads(out.strip().splitlines()[-1])
    figures["pss_mb"] = pss
    figures["wall_s"] = wall
    figures["timeouts"] = knowledge_timeouts(Path(figures["run_dir"]))
    return figures


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def report(
    n: int, ref: dict[str, Any], mine: dict[str, Any], locked: dict[str, Any] | None = None
) -> None:
    def mark(ok: bool) -> str:
        return "ok" if ok else "MISSED"

    ratio = mine["done_s"] / ref["done_s"]
    lat = [x * 1000 for x in mine["latencies"]] or [float("nan")]
    p50, p95, worst = statistics.median(lat), percentile(lat, 0.95), max(lat)
    rss = mine["rss_mb"] / ref["rss_mb"]
    idle = mine["idle_cpu"] * 100
    extra = mine["timeouts"] - ref["timeouts"]
    print(f"N={n}  (headless: {ref['result']}; TUI: {mine['result']})")
    print(
        f"  time to done      headless {ref['done_s']:7.1f} s   TUI {mine['done_s']:7.1f} s   "
        f"{ratio:5.2f}x  (aim <= 1.3x)  {mark(ratio <= 1.3)}"
    )
    if locked is not None:
        # `A` is a standing approval: on the hosts nobody looked at, the reads it lets run
        # run inside the kernel lock, as under `--policy read-only`; `--yes` runs them bare.
        same = mine["done_s"] / locked["done_s"]
        print(
            f"                    headless --policy read-only (the same reads in the kernel lock) "
            f"{locked['done_s']:.1f} s: {same:.2f}x  {mark(same <= 1.3)}"
        )
    print(
        f"                    (the fleet's own duration in the TUI: {mine['fleet_s']:.1f} s; "
        "the TUI's figure runs from the start key to the summary on screen)"
    )
    # A key not shown within LOST_S is not among the timed ones, and misses the max by itself.
    lost = mine.get("lost", [])
    ok = p95 <= 100 and worst <= 250 and not lost
    print(
        f"  key latency busy  {len(mine['latencies'])} keys: p50 {p50:.0f} ms, p95 {p95:.0f} ms "
        f"(aim <= 100), max {worst:.0f} ms (aim <= 250), {len(lost)} not shown within "
        f"{LOST_S:g} s  {mark(ok)}"
    )
    if lost:
        print(f"                    the keys not shown: {lost[:5]}")
    for again in mine.get("again", []):
        print(f"                    `A` had no effect: {again}")
    for error in mine.get("errors", []):
        print(f"                    a helper of the run failed, its figures stop there: {error}")
    if mine.get("key_cpu"):
        cpu = [x * 1000 for x in mine["key_cpu"]]
        print(
            f"                    the screen's own CPU in each key's wait: p50 "
            f"{statistics.median(cpu):.0f} ms, p95 {percentile(cpu, 0.95):.0f} ms, max "
            f"{max(cpu):.0f} ms"
        )
    if mine.get("key_queued"):
        keys = zip(mine["latencies"], mine["key_cpu"], mine["key_queued"], strict=False)
        slowest = sorted(keys, reverse=True)[:5]
        print(
            "                    the 5 slowest, ms (whole = the screen's CPU + waiting for a "
            "core + asleep): "
            + ", ".join(
                f"{w * 1e3:.0f} = {c * 1e3:.0f} + {q * 1e3:.0f} + {(w - c - q) * 1e3:.0f}"
                for w, c, q in slowest
            )
        )
    print(
        f"  idle CPU after    {idle:.1f} % over {IDLE_S:g} s, timers left running: "
        f"{mine['timers']}  (aim <= 2 %)  {mark(idle <= 2)}; from 1 s after the fleet's "
        f"thread ended, {mine['fleet_exit_s']:.1f} s after the summary"
    )
    print(
        f"  knowledge_timeout headless {ref['timeouts']}, TUI {mine['timeouts']}  "
        f"(aim: none beyond headless)  {mark(extra <= 0)}"
    )
    print(
        f"  CPU during run    TUI {mine['cpu_s']:.1f} s (the screen's thread "
        f"{mine['ui_cpu_s']:.1f} s); headless, start-up included: {ref['cpu_s']:.1f} s"
    )
    print(
        f"  peak RSS          headless {ref['rss_mb']:.0f} MB, TUI {mine['rss_mb']:.0f} MB  "
        f"{rss:.2f}x  (aim <= 1.5x)  {mark(rss <= 1.5)}"
    )
    pss = mine["pss_mb"] / ref["pss_mb"]
    print(
        f"  peak PSS          headless {ref['pss_mb']:.0f} MB, TUI {mine['pss_mb']:.0f} MB "
        f"(shared pages split with other processes; sampled every 0.2 s)  {pss:.2f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,500,1000", help="host counts (100,500,1000)")
    parser.add_argument("--forks", type=int, default=100, help="hosts at once (100)")
    parser.add_argument("--only", choices=("tui", "headless"), help="run one side only")
    parser.add_argument("--profile", help="profile the TUI process into this file (pstat)")
    parser.add_argument(
        "--timeout", type=float, default=900, help="seconds a TUI run may take (900)"
    )
    parser.add_argument(
        "--split-cores",
        action="store_true",
        help="the sshd and what it starts on the last core, kosmos on the others",
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--home", help=argparse.SUPPRESS)
    parser.add_argument("--skills", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args)
        return
    from benchmarks.fleet import COMMANDS, SKILL, llm_server, write_home
    from tests.sshd import start_sshd

    # SIGTERM (a timeout) ends the run through `finally`: the sshd and its user go too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    sizes = [int(s) for s in args.sizes.split(",")]
    sshd = start_sshd("tuibench")
    cores = sorted(os.sched_getaffinity(0))
    if args.split_cores:
        if len(cores) < 2:
            sys.exit("--split-cores: this machine gives this process one core")
        os.sched_setaffinity(sshd.pid, cores[-1:])  # its sessions inherit it
        os.sched_setaffinity(0, cores[:-1])  # and so do kosmos's processes, started from here
    tmp = Path(tempfile.mkdtemp(prefix="kosmos-bench-tui-fleet-"))
    os.environ.pop("SSH_AUTH_SOCK", None)
    try:
        skills = tmp / "skills"
        (skills / "three").mkdir(parents=True)
        (skills / "three" / "SKILL.md").write_text(SKILL)
        runs = tmp / "runs"
        runs.mkdir()
        print(
            f"3-command skill ({'; '.join(COMMANDS)}) on N aliases of one loopback sshd, "
            f"forks {args.forks}, TUI at {SIZE[0]}x{SIZE[1]} under Pilot (frames rendered)"
            + (
                f"; the sshd on core {cores[-1]}, kosmos on {cores[:-1]}"
                if args.split_cores
                else ""
            )
        )
        with llm_server() as base_url:
            for n in sizes:
                home = tmp / f"home-{n}"
                write_home(home, sshd, n, many=True)
                ref = mine = locked = None
                if args.only != "tui":
                    ref = headless(home, skills, base_url, runs, args.forks)
                    locked = headless(home, skills, base_url, runs, args.forks, "read-only")
                if args.only != "headless":
                    profile = f"{args.profile}.{n}" if args.profile and len(sizes) > 1 else None
                    mine = tui(
                        home, skills, base_url, args.forks, profile or args.profile, args.timeout
                    )
                if ref and mine:
                    report(n, ref, mine, locked)
                else:
                    lists = ("latencies", "key_cpu", "key_queued")
                    shown = ref or {k: v for k, v in (mine or {}).items() if k not in lists}
                    if mine and mine["latencies"]:
                        lat = [x * 1000 for x in mine["latencies"]]
                        shown["key_ms"] = {
                            "keys": len(lat),
                            "lost": len(mine.get("lost", [])),
                            "p95": percentile(lat, 0.95),
                            "max": max(lat),
                        }
                        cpu = [x * 1000 for x in mine["key_cpu"]]
                        shown["key_cpu_ms"] = {"p95": percentile(cpu, 0.95), "max": max(cpu)}
                    print(f"N={n}: {json.dumps(shown)}")
                sys.stdout.flush()
    finally:
        sshd.stop()
        with contextlib.suppress(OSError):
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
