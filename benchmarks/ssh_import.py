"""asyncssh's import as kosmos does it (`kosmos.hosts.sshlib`) beside `import asyncssh` as it comes.

Every kosmos process that talks SSH (a run on a host, a fleet, the TUI's screen and its fleet,
the MCP server) imports asyncssh first. At its import, asyncssh looks for liboqs and nettle;
for a library that ldconfig's cache lacks, Python runs gcc and ld to ask the linker. kosmos
asks the cache alone (see kosmos/hosts/sshlib.py). Fresh interpreters, alternating, medians;
also the compiler processes each one started (gcc, cc, collect2, ld), counted with strace
where it is installed.

    python benchmarks/ssh_import.py [--repeat 20]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CONTENDERS = {
    "import asyncssh (as it comes)": "import asyncssh",
    "kosmos.hosts.sshlib (kosmos's import)": "import kosmos.hosts.sshlib",
}
COMPILER = re.compile(r'execve\("[^"]*/(gcc|cc|collect2|ld)"')


def timed(code: str, env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    return time.perf_counter() - started


def compilers(code: str, env: dict[str, str]) -> int | None:
    """How many compiler or linker processes `code` started (None without strace)."""
    if not shutil.which("strace"):
        return None
    with tempfile.NamedTemporaryFile(mode="r") as log:
        subprocess.run(
            ["strace", "-f", "-qq", "-e", "trace=execve", "-o", log.name]
            + [sys.executable, "-c", code],
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        return sum(1 for line in log if COMPILER.search(line) and "ENOENT" not in line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("LD_LIBRARY_PATH", None)
    times: dict[str, list[float]] = {name: [] for name in CONTENDERS}
    for code in CONTENDERS.values():  # warm-up: page cache, bytecode
        timed(code, env)
    for _ in range(args.repeat):
        for name, code in CONTENDERS.items():
            times[name].append(timed(code, env))
    print(f"fresh interpreters, medians of {args.repeat}, alternating")
    reference = statistics.median(times[next(iter(CONTENDERS))])
    for name, code in CONTENDERS.items():
        median = statistics.median(times[name])
        started = compilers(code, env)
        procs = "" if started is None else f", {started} compiler/linker processes"
        print(f"  {name:40} {median * 1000:6.0f} ms ({median / reference:.2f}x){procs}")


if __name__ == "__main__":
    main()
