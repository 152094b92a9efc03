"""What each of kosmos's stand-ins for another package's private parts saves, beside the plain
path, in fresh interpreters (whole processes, alternating, medians of wall time and CPU).

- `httpx._main`: httpx's own command-line client (click, rich, pygments) is not imported.
- `pydantic.plugin._loader`: pydantic looks for no plugins (no importlib.metadata, no scan of
  every installed distribution's metadata).
- `ctypes.util.find_library` while asyncssh is imported: ldconfig's cache alone, no gcc or ld.

Each stand-in is kept only while this shows its gain on a quiet machine (see kosmos/__init__.py
and kosmos/hosts/sshlib.py); each falls back to the plain path if its upstream changes.

    python benchmarks/private_patches.py [--repeat 20]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

MODEL = "class M(pydantic.BaseModel):\n    x: int\nM(x=1)\n"

# (name, kosmos's way, the plain way): the plain way imports kosmos too, then drops the one
# stand-in, so that each pair differs by that stand-in alone.
PAIRS = (
    (
        "httpx._main",
        "import kosmos, httpx",
        "import sys, kosmos\nsys.modules.pop('httpx._main')\nimport httpx",
    ),
    (
        "pydantic.plugin._loader",
        "import kosmos, pydantic\n" + MODEL,
        "import sys, kosmos\nsys.modules.pop('pydantic.plugin._loader')\nimport pydantic\n" + MODEL,
    ),
    (
        "find_library (asyncssh)",
        "import kosmos.hosts.sshlib",
        "import kosmos, warnings\nwarnings.simplefilter('ignore')\nimport asyncssh",
    ),
)


def measure(code: str, env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process and its children) of one fresh interpreter."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    print(f"load average: {os.getloadavg()[0]:.2f}; {args.repeat} rounds, medians")
    print(
        f"{'stand-in':26} {'kosmos wall':>12} {'plain wall':>11} {'kosmos CPU':>11} "
        f"{'plain CPU':>10} {'CPU saved':>10}"
    )
    for name, ours, plain in PAIRS:
        for code in (ours, plain):  # warm the page cache and the bytecode
            measure(code, env)
        mine: list[tuple[float, float]] = []
        theirs: list[tuple[float, float]] = []
        for _ in range(args.repeat):
            mine.append(measure(ours, env))
            theirs.append(measure(plain, env))
        wall_a, cpu_a = (statistics.median(x) for x in zip(*mine, strict=True))
        wall_b, cpu_b = (statistics.median(x) for x in zip(*theirs, strict=True))
        print(
            f"{name:26} {wall_a * 1000:10.1f}ms {wall_b * 1000:9.1f}ms {cpu_a * 1000:9.1f}ms "
            f"{cpu_b * 1000:8.1f}ms {(cpu_b - cpu_a) * 1000:8.1f}ms"
        )


if __name__ == "__main__":
    main()
