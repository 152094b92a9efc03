"""A 3-command skill on N hosts of the loopback sshd: kosmos against the tools used instead.

Each of N ~/.ssh/config aliases points at one OpenSSH sshd on loopback (started here, as root,
like the tests' fixture). A scripted LLM in its own process answers every request at once:
`[CMD] hostname`, `[CMD] uptime`, `[CMD] df -P /`, then `[DONE]`. Side by side, medians of
`--repeat` runs, every host at once (forks = N):

* kosmos, in-process: `FleetFrontend.run()` with transcripts (fsync per event), the live
  event log, per-host knowledge lookups and 4 LLM round trips per host;
* kosmos --canary: in-process, the LLM drives h000, the other hosts replay its run;
* kosmos, CLI: the same as `kosmos run` in a fresh process (Python start-up included);
* bare asyncssh: `gather` of one connection per host running the 3 commands in turn;
* ssh + xargs -P N: one `ssh` per host running the 3 commands in one session;
* ansible ad-hoc (`-m shell`, `--forks N`), when `ansible` is importable here or `--ansible`
  names its executable (e.g. from a venv of its own: `python -m venv /tmp/ansible-venv &&
  /tmp/ansible-venv/bin/pip install ansible-core`, then `--ansible /tmp/ansible-venv/bin/ansible`).

    sudo python benchmarks/fleet.py [--sizes 1,10,50] [--repeat 5] [--ansible PATH]
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


def write_home(home: Path, sshd: Sshd, n: int) -> Path:
    ssh = home / ".ssh"
    ssh.mkdir(mode=0o700, parents=True, exist_ok=True)
    key = ssh / "id_ed25519"
    key.write_bytes(sshd.client_key.read_bytes())
    key.chmod(0o600)
    config = ssh / "config"
    config.write_text(
        f"Host {' '.join(aliases(n))}\n  HostName 127.0.0.1\n  Port {sshd.port}\n"
        f"  User {sshd.user}\n  IdentityFile {key}\n  IdentitiesOnly yes\n"
        f"  UserKnownHostsFile {ssh / 'known_hosts'}\n  BatchMode yes\n"
    )
    (ssh / "known_hosts").write_text(sshd.known_hosts_line())
    return config


# -- the contenders ----------------------------------------------------------------------


async def kosmos_inprocess(
    n: int, home: Path, skills: Path, base_url: str, runs: Path, canary: str | None = None
) -> None:
    env = {"HOME": str(home), "AI_KOSMOS_MODEL_BASE_URL": base_url}
    settings = load_settings({}, env=env, cwd=skills, home=home)
    request = RunRequest(
        skill="three",
        hosts_pattern="h*",
        non_interactive=True,
        yes=True,
        forks=n,
        skills_dirs=(skills,),
        transcript=runs / f"run-{time.monotonic_ns()}",
        canary=canary,
    )
    frontend = FleetFrontend(request, settings, env=env, home=home)
    frontend.console = Console(out=io.StringIO(), err=io.StringIO(), color=False)
    code = await frontend.run()
    assert code == 0, frontend.console.out.getvalue()  # type: ignore[attr-defined]


def kosmos_cli(n: int, home: Path, skills: Path, base_url: str, runs: Path) -> None:
    env = {**os.environ, "HOME": str(home), "AI_KOSMOS_MODEL_BASE_URL": base_url}
    env["PYTHONPATH"] = str(ROOT)
    subprocess.run(
        [sys.executable, "-m", "kosmos", "run", "three", "--skills-dir", str(skills)]
        + ["--hosts", "h*", "--forks", str(n), "--non-interactive", "--yes"]
        + ["--transcript", str(runs / f"cli-{time.monotonic_ns()}")],
        env=env,
        check=True,
        capture_output=True,
    )


async def bare_asyncssh(n: int, config: Path) -> None:
    async def host(alias: str) -> None:
        async with asyncssh.connect(alias, config=[str(config)]) as conn:
            for command in COMMANDS:
                await conn.run(command, check=True)

    await asyncio.gather(*(host(a) for a in aliases(n)))


def ssh_xargs(n: int, config: Path) -> None:
    names = "\n".join(aliases(n)) + "\n"
    subprocess.run(
        ["xargs", "-P", str(n), "-I{}", "ssh", "-F", str(config), "{}", "; ".join(COMMANDS)],
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
    )
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip()
    finally:
        proc.terminate()
        proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,10,50")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--ansible", help="the ansible executable, e.g. from its own venv")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    sshd = start_sshd("bench")
    tmp = Path(tempfile.mkdtemp(prefix="kosmos-bench-fleet-"))
    os.environ.pop("SSH_AUTH_SOCK", None)
    try:
        skills = tmp / "skills"
        (skills / "three").mkdir(parents=True)
        (skills / "three" / "SKILL.md").write_text(SKILL)
        runs = tmp / "runs"
        ansible = find_ansible(args.ansible)
        rows: list[tuple[int, dict[str, float]]] = []
        with llm_server() as base_url:
            for n in sizes:
                home = tmp / f"home-{n}"
                config = write_home(home, sshd, n)
                os.environ["HOME"] = str(home)  # asyncssh reads ~/.ssh from $HOME
                contenders: dict[str, Callable[[], object]] = {
                    "bare asyncssh gather": lambda n=n, c=config: bare_asyncssh(n, c),
                    "kosmos (in-process)": lambda n=n, h=home: kosmos_inprocess(
                        n, h, skills, base_url, runs
                    ),
                    "kosmos --canary": lambda n=n, h=home: kosmos_inprocess(
                        n, h, skills, base_url, runs, "h000"
                    ),
                    "kosmos (CLI)": lambda n=n, h=home: kosmos_cli(n, h, skills, base_url, runs),
                    "ssh + xargs -P": lambda n=n, c=config: ssh_xargs(n, c),
                }
                if ansible:
                    contenders["ansible ad-hoc"] = lambda n=n, a=ansible: ansible_adhoc(
                        a, n, sshd, tmp
                    )
                figures = timed(contenders, args.repeat)
                rows.append((n, figures))
    finally:
        sshd.stop()
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(sshd.root, ignore_errors=True)
    print(
        f"3-command skill ({'; '.join(COMMANDS)}) on N loopback sshd hosts, forks = N, "
        f"median of {args.repeat} runs, seconds (x: vs bare asyncssh gather)"
    )
    if not ansible:
        print("ansible: not found, left out (see --ansible to include it)")
    names = list(rows[0][1])
    print(f"{'N':>4}  " + "  ".join(f"{name:>22}" for name in names))
    for n, figures in rows:
        ref = figures["bare asyncssh gather"]
        cells = [f"{figures[name]:8.3f}s ({figures[name] / ref:5.2f}x)" for name in names]
        print(f"{n:>4}  " + "  ".join(f"{c:>22}" for c in cells))


if __name__ == "__main__":
    main()
