"""A 3-command skill on N hosts of the loopback sshd: kosmos against the tools used instead.

Each of N ~/.ssh/config aliases points at one OpenSSH sshd on loopback (started here, as root,
like the tests' fixture). A scripted LLM in its own process answers every request at once:
`[CMD] hostname`, `[CMD] uptime`, `[CMD] df -P /`, then `[DONE]`. Side by side, medians of
`--repeat` runs, every host at once (forks = N):

* kosmos, in-process: `FleetFrontend.run()` with transcripts (fsync per event), the live
  event log, per-host knowledge lookups and 4 LLM round trips per host;
* kosmos --canary: in-process, the LLM drives h000, the other hosts replay its run;
* kosmos, CLI: the same as `kosmos run` in a fresh process (Python start-up included);
* bare asyncssh: `gather` of one connection per host running the 3 commands in turn, its
  settings given outright (no ssh_config read: the floor);
* ssh + xargs -P N: one `ssh` per host running the 3 commands in one session;
* ansible ad-hoc (`-m shell`, `--forks N`), when `ansible` is importable here or `--ansible`
  names its executable (e.g. from a venv of its own: `python -m venv /tmp/ansible-venv &&
  /tmp/ansible-venv/bin/pip install ansible-core`, then `--ansible /tmp/ansible-venv/bin/ansible`).

With `--forks F` every contender keeps at most F hosts at once (kosmos `--forks F`, a
semaphore around bare asyncssh, `xargs -P F`); `--config many` writes one `Host` block per
alias (a real fleet's config: HostName, Port, User each) instead of one `Host` line naming
them all. For the large sizes, `--only` picks contenders, and the CLI run also reports the
controller's peak memory (its maximum resident set). `shards` runs `--shards` processes of
`kosmos run --shard K/S --canary-from T` at once against one `cli-canary-from` process (T is
a run recorded on h000 first), each `--forks` wide. `--check` adds `kosmos hosts --check`
against a bare asyncssh connect-all with the same bound (100).

    sudo python benchmarks/fleet.py [--sizes 1,10,50] [--repeat 5] [--ansible PATH]
    sudo python benchmarks/fleet.py --sizes 1000 --forks 100 --config many --repeat 1 \
        --only bare,canary,cli --check
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import asyncssh  # noqa: E402

from kosmos.config import load_settings  # noqa: E402
from kosmos.frontends.console import Console  # noqa: E402
from kosmos.frontends.fleet import FleetFrontend  # noqa: E402
from kosmos.frontends.run import RunRequest  # noqa: E402
from tests.sshd import Sshd, start_sshd  # noqa: E402

COMMANDS = ("hostname", "uptime", "df -P /")
SKILL = "---\nname: three\ndescription: three commands\n---\nRun three commands.\n"
LLM_SERVER = """
import sys
from tests.fleethelpers import scripted
from tests.llmserver import ScriptedLLM
llm = ScriptedLLM()
llm.default = scripted([*("[CMD] " + c for c in sys.argv[1:]), "[DONE] ok"])
print(llm.base_url, flush=True)
llm._server.serve_forever()
"""


def aliases(n: int) -> list[str]:
    return [f"h{i:03d}" for i in range(n)]


def write_home(home: Path, sshd: Sshd, n: int, many: bool = False) -> Path:
    ssh = home / ".ssh"
    ssh.mkdir(mode=0o700, parents=True, exist_ok=True)
    key = ssh / "id_ed25519"
    key.write_bytes(sshd.client_key.read_bytes())
    key.chmod(0o600)
    config = ssh / "config"
    common = (
        f"  IdentityFile {key}\n  IdentitiesOnly yes\n"
        f"  UserKnownHostsFile {ssh / 'known_hosts'}\n  BatchMode yes\n"
    )
    if many:  # one block per host, as a real fleet's config has
        blocks = [
            f"Host {a}\n  HostName 127.0.0.1\n  Port {sshd.port}\n  User {sshd.user}\n"
            for a in aliases(n)
        ]
        config.write_text("".join(blocks) + "Host *\n" + common)
    else:
        config.write_text(
            f"Host {' '.join(aliases(n))}\n  HostName 127.0.0.1\n  Port {sshd.port}\n"
            f"  User {sshd.user}\n" + common
        )
    (ssh / "known_hosts").write_text(sshd.known_hosts_line())
    return config


# -- the contenders ----------------------------------------------------------------------


async def kosmos_inprocess(
    n: int,
    home: Path,
    skills: Path,
    base_url: str,
    runs: Path,
    canary: str | None = None,
    forks: int | None = None,
) -> None:
    env = {"HOME": str(home), "AI_KOSMOS_MODEL_BASE_URL": base_url}
    settings = load_settings({}, env=env, cwd=skills, home=home)
    request = RunRequest(
        skill="three",
        hosts_pattern="h*",
        non_interactive=True,
        yes=True,
        forks=forks or n,
        skills_dirs=(skills,),
        transcript=runs / f"run-{time.monotonic_ns()}",
        canary=canary,
    )
    frontend = FleetFrontend(request, settings, env=env, home=home)
    frontend.console = Console(out=io.StringIO(), err=io.StringIO(), color=False)
    code = await frontend.run()
    assert code == 0, frontend.console.out.getvalue()  # type: ignore[attr-defined]


PEAK_RSS_MB: list[float] = []


def _run_measured(argv: list[str], env: dict[str, str]) -> None:
    """Run a process to its end and note its peak resident memory (ru_maxrss, in KiB)."""
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(argv[2:5])} failed ({proc.returncode}): {err.decode()[-2000:]}")
    PEAK_RSS_MB.append(usage.ru_maxrss / 1024)


def kosmos_cli(
    n: int,
    home: Path,
    skills: Path,
    base_url: str,
    runs: Path,
    forks: int | None = None,
    canary: str | None = None,
) -> None:
    env = {**os.environ, "HOME": str(home), "AI_KOSMOS_MODEL_BASE_URL": base_url}
    env["PYTHONPATH"] = str(ROOT)
    _run_measured(
        [sys.executable, "-m", "kosmos", "run", "three", "--skills-dir", str(skills)]
        + ["--hosts", "h*", "--forks", str(forks or n), "--non-interactive", "--yes"]
        + (["--canary", canary] if canary else [])
        + ["--transcript", str(runs / f"cli-{time.monotonic_ns()}")],
        env,
    )


def _bare_connect(config: Path) -> asyncssh.SSHClientConnection:
    """The floor: a connection with its settings given outright, no ssh_config read at all
    (asyncssh would read and split the whole file again for every host)."""
    ssh = config.parent
    port = int(next(line.split()[1] for line in config.read_text().splitlines() if "Port" in line))
    user = next(line.split()[1] for line in config.read_text().splitlines() if "User " in line)
    return asyncssh.connect(
        "127.0.0.1",
        port,
        username=user,
        client_keys=[str(ssh / "id_ed25519")],
        known_hosts=str(ssh / "known_hosts"),
        config=[],
    )


async def bare_asyncssh(n: int, config: Path, forks: int | None = None) -> None:
    slots = asyncio.Semaphore(forks or n)

    async def host(alias: str) -> None:
        async with slots, _bare_connect(config) as conn:
            for command in COMMANDS:
                await conn.run(command, check=True)

    await asyncio.gather(*(host(a) for a in aliases(n)))


async def bare_connect_all(n: int, config: Path, forks: int) -> None:
    """What `kosmos hosts --check` does, bare: connect, ask the OS, close; `forks` at once."""
    slots = asyncio.Semaphore(forks)

    async def host(alias: str) -> None:
        async with slots, _bare_connect(config) as conn:
            await conn.run("uname -sr", check=True)

    await asyncio.gather(*(host(a) for a in aliases(n)))


def record_canary(home: Path, skills: Path, base_url: str, runs: Path) -> Path:
    """One run of the skill on h000: the transcript the shard jobs replay (--canary-from)."""
    transcript = runs / f"canary-{time.monotonic_ns()}.jsonl"  # --transcript appends
    env = {**os.environ, "HOME": str(home), "AI_KOSMOS_MODEL_BASE_URL": base_url}
    env["PYTHONPATH"] = str(ROOT)
    subprocess.run(
        [sys.executable, "-m", "kosmos", "run", "three", "--skills-dir", str(skills)]
        + ["--host", "h000", "--non-interactive", "--yes", "--transcript", str(transcript)],
        env=env,
        check=True,
        capture_output=True,
    )
    return transcript


def kosmos_shards(
    home: Path, skills: Path, base_url: str, runs: Path, forks: int, canary: Path, jobs: int
) -> None:
    """`jobs` shard processes at once (`--shard K/jobs --canary-from`), `forks` wide between
    them: one sshd serves them all here, where real shard jobs would reach hosts of their own."""
    env = {**os.environ, "HOME": str(home), "AI_KOSMOS_MODEL_BASE_URL": base_url}
    env["PYTHONPATH"] = str(ROOT)
    stamp = time.monotonic_ns()
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "kosmos", "run", "three", "--skills-dir", str(skills)]
            + ["--hosts", "h*", "--forks", str(max(1, forks // jobs))]
            + ["--non-interactive", "--yes", "--canary-from", str(canary), "--shard", f"{k}/{jobs}"]
            + ["--transcript", str(runs / f"shard-{stamp}-{k}")],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for k in range(1, jobs + 1)
    ]
    errors = [p.communicate()[1] for p in procs]
    if any(p.returncode for p in procs):
        codes = [p.returncode for p in procs]
        sys.exit(f"a shard failed: exit codes {codes}: {errors[0].decode()[-1500:]}")


def kosmos_canary_from(
    home: Path, skills: Path, base_url: str, runs: Path, forks: int, canary: Path
) -> None:
    env = {**os.environ, "HOME": str(home), "AI_KOSMOS_MODEL_BASE_URL": base_url}
    env["PYTHONPATH"] = str(ROOT)
    _run_measured(
        [sys.executable, "-m", "kosmos", "run", "three", "--skills-dir", str(skills)]
        + ["--hosts", "h*", "--forks", str(forks), "--non-interactive", "--yes"]
        + ["--canary-from", str(canary)]
        + ["--transcript", str(runs / f"from-{time.monotonic_ns()}")],
        env,
    )


def kosmos_hosts_check(home: Path) -> None:
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": str(ROOT)}
    _run_measured([sys.executable, "-m", "kosmos", "hosts", "--check"], env)


def ssh_xargs(n: int, config: Path, forks: int | None = None) -> None:
    names = "\n".join(aliases(n)) + "\n"
    subprocess.run(
        ["xargs", "-P", str(forks or n), "-I{}", "ssh", "-F", str(config), "{}"]
        + ["; ".join(COMMANDS)],
        input=names.encode(),
        check=True,
        capture_output=True,
    )


def ansible_adhoc(ansible: str, n: int, sshd: Sshd, tmp: Path) -> None:
    inventory = tmp / "inventory.ini"
    inventory.write_text(
        "".join(
            f"{a} ansible_host=127.0.0.1 ansible_port={sshd.port} ansible_user={sshd.user}\n"
            for a in aliases(n)
        )
    )
    env = {
        **os.environ,
        "ANSIBLE_HOST_KEY_CHECKING": "False",
        "ANSIBLE_PRIVATE_KEY_FILE": str(sshd.client_key),
        "LC_ALL": "C.UTF-8",  # ansible refuses to start without a UTF-8 locale
    }
    subprocess.run(
        [ansible, "all", "-i", str(inventory), "-m", "shell", "-a", "; ".join(COMMANDS)]
        + ["--forks", str(n)],
        env=env,
        check=True,
        capture_output=True,
    )


def find_ansible(given: str | None) -> str | None:
    """The `ansible` executable: the one given, or the one of an importable ansible."""
    if given:
        if not os.access(given, os.X_OK):
            sys.exit(f"--ansible {given}: not an executable; give the path of `ansible`")
        return given
    try:
        import ansible  # noqa: F401
    except ImportError:
        return None
    return shutil.which("ansible")


# -- measuring ---------------------------------------------------------------------------


def timed(runs: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    """Median seconds of each contender; one round runs each once, so load changes hit all."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeat):
        for name, run in runs.items():
            t = time.perf_counter()
            result = run()
            if isinstance(result, Awaitable):
                asyncio.run(result)  # type: ignore[arg-type]
            times[name].append(time.perf_counter() - t)
    return {name: statistics.median(values) for name, values in times.items()}


@contextlib.contextmanager
def llm_server() -> object:
    proc = subprocess.Popen(
        [sys.executable, "-c", LLM_SERVER, *COMMANDS],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        # A session of its own: the stand-in for a remote endpoint does not share the
        # scheduler's group (autogroup) of the process that started it, kosmos's side.
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip()
    finally:
        proc.terminate()
        proc.wait()


CONTENDERS = (
    "bare",
    "inprocess",
    "canary",
    "cli",
    "cli-canary",
    "cli-canary-from",
    "shards",
    "xargs",
    "ansible",
)


def _contenders(
    n: int, home: Path, config: Path, skills: Path, base_url: str, runs: Path, forks: int
) -> dict[str, tuple[str, Callable[[], object]]]:
    """Each contender's label and the call that runs it once."""
    local = (n, home, skills, base_url, runs)
    return {
        "bare": ("bare asyncssh gather", partial(bare_asyncssh, n, config, forks)),
        "inprocess": ("kosmos (in-process)", partial(kosmos_inprocess, *local, None, forks)),
        "canary": ("kosmos --canary", partial(kosmos_inprocess, *local, "h000", forks)),
        "cli": ("kosmos (CLI)", partial(kosmos_cli, *local, forks)),
        "cli-canary": ("kosmos CLI --canary", partial(kosmos_cli, *local, forks, "h000")),
        "xargs": ("ssh + xargs -P", partial(ssh_xargs, n, config, forks)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,10,50")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--forks", type=int, help="hosts at once (default: all of them)")
    parser.add_argument("--config", choices=("one", "many"), default="one")
    parser.add_argument(
        "--only", help=f"comma-separated contenders of {', '.join(CONTENDERS)} (default: all)"
    )
    parser.add_argument("--check", action="store_true", help="also time `kosmos hosts --check`")
    parser.add_argument(
        "--shards", type=int, default=4, help="shard processes of the `shards` contender (4)"
    )
    parser.add_argument("--ansible", help="the ansible executable, e.g. from its own venv")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    only = set(args.only.split(",")) if args.only else set(CONTENDERS)
    sshd = start_sshd("bench")
    tmp = Path(tempfile.mkdtemp(prefix="kosmos-bench-fleet-"))
    os.environ.pop("SSH_AUTH_SOCK", None)
    forks = args.forks
    try:
        skills = tmp / "skills"
        (skills / "three").mkdir(parents=True)
        (skills / "three" / "SKILL.md").write_text(SKILL)
        runs = tmp / "runs"
        ansible = find_ansible(args.ansible) if "ansible" in only else None
        rows: list[tuple[int, dict[str, float]]] = []
        peaks: dict[int, float] = {}
        with llm_server() as base_url:
            for n in sizes:
                home = tmp / f"home-{n}"
                config = write_home(home, sshd, n, many=args.config == "many")
                os.environ["HOME"] = str(home)  # asyncssh reads ~/.ssh from $HOME
                every = _contenders(n, home, config, skills, base_url, runs, forks or n)
                if {"shards", "cli-canary-from"} & only:
                    canary = record_canary(home, skills, base_url, runs)
                    wide = forks or n
                    every["cli-canary-from"] = (
                        "CLI --canary-from",
                        partial(kosmos_canary_from, home, skills, base_url, runs, wide, canary),
                    )
                    every["shards"] = (
                        f"{args.shards} shard jobs",
                        partial(
                            kosmos_shards, home, skills, base_url, runs, wide, canary, args.shards
                        ),
                    )
                if ansible:
                    every["ansible"] = (
                        "ansible ad-hoc",
                        partial(ansible_adhoc, ansible, n, sshd, tmp),
                    )
                contenders = {label: run for key, (label, run) in every.items() if key in only}
                contenders.setdefault("bare asyncssh gather", every["bare"][1])
                PEAK_RSS_MB.clear()
                figures = timed(contenders, args.repeat)
                if PEAK_RSS_MB:
                    peaks[n] = max(PEAK_RSS_MB)
                if args.check:
                    PEAK_RSS_MB.clear()
                    checks = timed(
                        {
                            "bare asyncssh connect-all": partial(bare_connect_all, n, config, 100),
                            "kosmos hosts --check": partial(kosmos_hosts_check, home),
                        },
                        args.repeat,
                    )
                    bare = checks["bare asyncssh connect-all"]
                    mine = checks["kosmos hosts --check"]
                    print(
                        f"N={n}: kosmos hosts --check {mine:.3f}s, bare asyncssh connect-all "
                        f"{bare:.3f}s ({mine / bare:.2f}x), 100 at once"
                    )
                rows.append((n, figures))
    finally:
        sshd.stop()
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(sshd.root, ignore_errors=True)
    bound = f"forks = {forks}" if forks else "forks = N"
    print(
        f"3-command skill ({'; '.join(COMMANDS)}) on N loopback sshd hosts, {bound}, "
        f"config: {'one block per host' if args.config == 'many' else 'one Host line'}, "
        f"median of {args.repeat} runs, seconds (x: vs bare asyncssh gather)"
    )
    if "ansible" in only and not ansible:
        print("ansible: not found, left out (see --ansible to include it)")
    names = list(rows[0][1])
    print(f"{'N':>5}  " + "  ".join(f"{name:>22}" for name in names))
    for n, figures in rows:
        ref = figures["bare asyncssh gather"]
        cells = [f"{figures[name]:8.3f}s ({figures[name] / ref:5.2f}x)" for name in names]
        print(f"{n:>5}  " + "  ".join(f"{c:>22}" for c in cells))
    for n, peak in peaks.items():
        print(f"N={n}: the kosmos CLI's peak memory (max RSS) {peak:.0f} MB")


if __name__ == "__main__":
    main()
