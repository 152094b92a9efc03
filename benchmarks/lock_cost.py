"""What the kernel lock costs per command: the same command with and without it, in one run.

Interleaved (so that load from elsewhere hits all alike), medians of `--repeat`, as wall time
and, where the processes are this one's children, as their CPU time (user + system: what the
lock itself costs, less swayed by other load on a shared machine than the wall clock):
- the prelude alone: `sh -c true` against `perl -e PRELUDE SPEC sh -c true` (and python3's);
- the local runner: `LocalRunner.run("true")` without a lock and inside it, as it runs them
  (from the spawner, hosts/spawner.py), and as it runs them where no spawner can run: in the sh
  wrapper, with the perl prelude, with the python3 one (a PATH without perl). Wall time only:
  the spawner's commands are its children, not this process's;
- the SSH runner to Debian's sshd on loopback (needs root; it starts one as the tests do):
  `SSHRunner.run("true")` without the lock (a session a command) and with it (the lock server
  that perl's prelude runs in the session that learnt the host: a fork a command), on one
  reused connection;
- on both, a program as plain words inside the lock, which the perl prelude execs itself
  (`hostname`), against the same run by the shell (`hostname;`);
- over SSH, what each kind of command costs the host: the CPU of the sshd and all it starts
  (from a cgroup v2 of its own), per command, for `hostname` as sshd runs it for a bare
  asyncssh client (the fleet floor's way), in kosmos's wrapper, inside the lock (from the lock
  server), and for the session that learns the host (its OS, the lock it offers and the
  knowledge file, in one) and then serves.

    python benchmarks/lock_cost.py [--repeat 200]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.table import HostsCPU  # noqa: E402
from kosmos.hosts.local import LocalRunner  # noqa: E402
from kosmos.hosts.runner import Lock, Runner  # noqa: E402
from kosmos.hosts.ssh import SSHRunner  # noqa: E402
from tests.lockkit import bin_without  # noqa: E402
from tests.sshd import Sshd  # noqa: E402

COMMAND = "true"


Timing = tuple[float, float]  # (wall, CPU of the children) in seconds


class Unspawned(LocalRunner):
    """The local runner as it runs where no spawner can (off Linux): each command in the sh
    wrapper, or in the perl prelude that is its own wrapper inside the lock."""

    def _spawns(self) -> bool:
        return False


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _spawn(argv: list[str]) -> Timing:
    t, cpu = time.perf_counter(), _children_cpu()
    subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t, _children_cpu() - cpu


def _run(
    runner: Runner, lock: Lock | None, command: str = COMMAND
) -> Callable[[], Awaitable[Timing]]:
    async def once() -> Timing:
        t, cpu = time.perf_counter(), _children_cpu()
        result = await runner.run(command, timeout=30, lock=lock)
        elapsed = time.perf_counter() - t, _children_cpu() - cpu
        if result.exit_code != 0 or result.locked is not (lock is not None):
            sys.exit(f"`{command}` failed (locked: {result.locked}): {result.output.text()}")
        return elapsed

    return once


async def _interleaved(
    cases: dict[str, Callable[[], Awaitable[Timing]]], repeat: int
) -> dict[str, list[Timing]]:
    times: dict[str, list[Timing]] = {name: [] for name in cases}
    for case in cases.values():  # warm-up: page cache, the first connection
        await case()
    for _ in range(repeat):
        for name, case in cases.items():
            times[name].append(await case())
    return times


def _report(title: str, times: dict[str, list[Timing]], *, cpu: bool = True) -> None:
    print(title)
    names = list(times)

    def median(name: str, i: int) -> float:
        return statistics.median(t[i] for t in times[name]) * 1000

    for name in names:
        line = f"  {name:40} wall {median(name, 0):7.2f} ms"
        if name != names[0]:
            line += f" ({median(name, 0) - median(names[0], 0):+.2f})"
        if cpu:
            line = f"{line:72} CPU {median(name, 1):6.2f} ms"
            if name != names[0]:
                line += f" ({median(name, 1) - median(names[0], 1):+.2f})"
        print(line)


async def local_and_ssh(repeat: int, tmp: Path) -> None:
    plain = LocalRunner(cwd=tmp)
    await plain.learn_host(timeout=30)
    status = plain.host_lock.status
    assert status is not None
    print(f"lock here: {status.describe()} via {status.interpreter}")
    # The prelude alone, outside kosmos.
    kit = plain.host_lock
    words = kit.words(Lock(), "sh")
    assert words is not None
    python_path = str(bin_without(tmp, "perl"))
    py = LocalRunner(cwd=tmp, env={**os.environ, "PATH": python_path})
    await py.learn_host(timeout=30)
    py_words = py.host_lock.words(Lock(), "sh")
    assert py_words is not None and py.host_lock.status is not None
    spawn = {
        "sh -c true": lambda: _spawn(["sh", "-c", COMMAND]),
        "perl prelude, then sh -c true": lambda: _spawn([*words, COMMAND]),
        "python3 prelude, then sh -c true": lambda: _spawn(
            [shutil.which("python3", path=python_path) or "python3", *py_words[1:], COMMAND]
        ),
    }
    times: dict[str, list[Timing]] = {name: [] for name in spawn}
    for case in spawn.values():
        case()
    for _ in range(repeat):
        for name, case in spawn.items():
            times[name].append(case())
    _report(f"the prelude alone, median of {repeat}", times)
    wrapped = Unspawned(cwd=tmp)
    wrapped_py = Unspawned(cwd=tmp, env={**os.environ, "PATH": python_path})
    for unspawned in (wrapped, wrapped_py):
        await unspawned.learn_host(timeout=30)
    local = {
        "LocalRunner.run, no lock": _run(plain, None),
        "LocalRunner.run, locked": _run(plain, Lock()),
        "LocalRunner.run, locked, `hostname;`": _run(plain, Lock(), "hostname;"),
        "LocalRunner.run, locked, `hostname`": _run(plain, Lock(), "hostname"),
        "no spawner: no lock (sh wrapper)": _run(wrapped, None),
        "no spawner: locked (perl prelude)": _run(wrapped, Lock()),
        "no spawner: locked (python3 prelude)": _run(wrapped_py, Lock()),
        "no spawner: locked, `hostname`": _run(wrapped, Lock(), "hostname"),
    }
    times = await _interleaved(local, repeat)
    _report(f"kosmos's local runner, median of {repeat}", times, cpu=False)
    for each in (plain, py, wrapped, wrapped_py):
        await each.close()
    await ssh(repeat, tmp)


async def ssh(repeat: int, tmp: Path) -> None:
    from kosmos.hosts.target import parse_target
    from tests.sshd import start_sshd, write_client_home

    try:
        server = start_sshd("lockcost")
    except Exception as e:  # no sshd here: the local figures stand alone
        print(f"(no SSH: {e})")
        return
    home = tmp / "home"
    home.mkdir()
    os.environ["HOME"] = str(home)
    os.environ.pop("SSH_AUTH_SOCK", None)
    write_client_home(home, server)
    runner = SSHRunner(parse_target("box"), connect_timeout=10)
    cgroup = HostsCPU(server.pid)
    try:
        await runner.connect()
        await runner.learn_host(timeout=30)
        cases = {
            "SSHRunner.run, no lock": _run(runner, None),
            "SSHRunner.run, locked (lock server)": _run(runner, Lock()),
            "SSHRunner.run, locked, `hostname;`": _run(runner, Lock(), "hostname;"),
            "SSHRunner.run, locked, `hostname`": _run(runner, Lock(), "hostname"),
        }
        # The remote processes are sshd's children, not this one's: wall time only.
        times = await _interleaved(cases, repeat)
        _report(f"kosmos's SSH runner, median of {repeat}", times, cpu=False)
        await host_side(runner, server, home, repeat, cgroup)
    finally:
        await runner.close()
        server.stop()
        cgroup.close()  # once the sshd has gone from it


async def host_side(
    runner: SSHRunner, server: Sshd, home: Path, repeat: int, cgroup: HostsCPU
) -> None:
    """The host's CPU per command of each kind, from the sshd's cgroup: blocks of them,
    each block timed whole (a session's last exit comes after its result), interleaved."""
    import asyncssh

    from kosmos.hosts.knowledge import KNOWLEDGE_PATHS

    if cgroup.seconds() is None:
        print("(the host's CPU: no cgroup v2 here)")
        return
    ssh_dir = home / ".ssh"
    bare = await asyncssh.connect(
        "127.0.0.1",
        server.port,
        username=server.user,
        client_keys=[str(ssh_dir / "id_ed25519")],
        known_hosts=str(ssh_dir / "known_hosts"),
        config=[],
    )

    async def floor() -> None:
        await bare.run("hostname", check=True)

    async def learn() -> None:  # what a run's first session asks, asked again
        runner.host_lock.status, runner.os = None, None
        await runner.read_first(KNOWLEDGE_PATHS, timeout=30)
        if runner.host_lock.status is None:
            sys.exit("the host was not learnt")

    cases: dict[str, Callable[[], Awaitable[object]]] = {
        "`hostname` as sshd runs it (bare asyncssh)": floor,
        "`hostname` in kosmos's wrapper, no lock": _run(runner, None, "hostname"),
        "`hostname` inside the lock (lock server)": _run(runner, Lock(), "hostname"),
        "learning the host: OS, lock, knowledge; serves": learn,
    }
    block = max(10, repeat // 5)
    per: dict[str, list[float]] = {name: [] for name in cases}
    try:
        for _ in range(5):
            for name, case in cases.items():
                before = cgroup.seconds() or 0.0
                for _ in range(block):
                    await case()
                await asyncio.sleep(0.3)  # the block's last sessions end
                per[name].append(((cgroup.seconds() or 0.0) - before) / block)
    finally:
        bare.close()
    print(f"the host's CPU per command (sshd and all it starts), median of 5 blocks of {block}")
    medians = [(name, statistics.median(values) * 1000) for name, values in per.items()]
    for i, (name, ms) in enumerate(medians):
        extra = f" ({ms - medians[0][1]:+.2f})" if i else ""
        print(f"  {name:46} {ms:6.2f} ms{extra}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="kosmos-lockcost-"))
    tmp.chmod(0o755)
    try:
        asyncio.run(local_and_ssh(args.repeat, tmp))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
