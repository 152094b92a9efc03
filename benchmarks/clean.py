"""Throughput of kosmos.clean.clean() against a one-regex ANSI strip, on ~50 MB of terminal output.

Usage: python benchmarks/clean.py [--mb 50] [--repeat 3] [--seed 7]

The input is generated deterministically (seeded) before any timing starts: coloured log
lines, apt/pip/curl/wget progress bars drawn with \\r and \\r ESC[K, long JSON-ish lines,
plain listings, runs of repeated lines, a little CRLF and a little invalid UTF-8.
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

try:
    from kosmos.clean import clean
except ModuleNotFoundError:  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from kosmos.clean import clean

BASELINE = re.compile(r"\x1B(?:[@-Z\\-_]|\[[0-?]*[ -/]*[@-~])")

ESC = "\x1b"
LEVELS = [
    ("DEBUG", "2"),
    ("INFO", "32"),
    ("INFO", "32"),
    ("INFO", "32"),
    ("WARNING", "33"),
    ("ERROR", "1;31"),
]
MODULES = ["sshd", "nginx", "kubelet", "app.worker", "app.http", "postgres", "systemd"]
WORDS = [
    "request",
    "served",
    "connection",
    "closed",
    "from",
    "port",
    "user",
    "session",
    "opened",
    "accepted",
    "publickey",
    "for",
    "upstream",
    "timed",
    "out",
    "while",
    "reading",
    "response",
    "header",
    "retrying",
    "backend",
    "pool",
    "healthy",
    "checkpoint",
    "complete",
    "wrote",
    "buffers",
    "cache",
    "miss",
    "key",
    "evicted",
    "job",
    "finished",
    "in",
    "ms",
]
FILES = ["src/app.py", "README.md", "kosmos/clean.py", "tests/test_api.py", "Dockerfile"]


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _log_line(rng: random.Random, i: int) -> str:
    level, colour = rng.choice(LEVELS)
    stamp = f"2024-05-{1 + i % 28:02d}T{i % 24:02d}:{i % 60:02d}:{(i * 7) % 60:02d}.{i % 1000:03d}Z"
    module = rng.choice(MODULES)
    return (
        f"{ESC}[2m{stamp}{ESC}[0m {ESC}[{colour}m{level:<7}{ESC}[0m "
        f"{ESC}[1m{module}{ESC}[22m: {_words(rng, rng.randint(4, 14))}"
    )


def _apt_bar(rng: random.Random) -> str:
    steps = rng.randint(5, 30)
    frames = []
    for k in range(steps + 1):
        pct = k * 100 // steps
        fill = pct * 60 // 100
        frames.append(
            f"{ESC}7{ESC}[24;0f{ESC}[42m{ESC}[30mProgress: [{pct:3d}%]{ESC}[49m{ESC}[39m "
            f"[{'#' * fill}{'.' * (60 - fill)}]{ESC}8"
        )
    return "\r".join(frames) + f"\r{ESC}[KSetting up libssl3:amd64 (3.0.2-0ubuntu1.15) ..."


def _pip_bar(rng: random.Random) -> str:
    total = rng.uniform(1, 80)
    steps = rng.randint(5, 40)
    frames = []
    for k in range(steps + 1):
        done = total * k / steps
        fill = 40 * k // steps
        frames.append(
            f"   {ESC}[38;2;249;38;114m{'━' * fill}{ESC}[0m"
            f"{ESC}[38;5;237m{'━' * (40 - fill)}{ESC}[0m"
            f" {ESC}[32m{done:.1f}/{total:.1f} MB{ESC}[0m {ESC}[31m4.2 MB/s{ESC}[0m eta "
            f"{ESC}[36m0:00:{steps - k:02d}{ESC}[0m"
        )
    return f"{ESC}[?25l" + f"\r{ESC}[K".join(frames) + f"{ESC}[?25h"


def _curl_bar(rng: random.Random) -> str:
    header = (
        "  % Total    % Received % Xferd  Average Speed   Time    Time     Time  Current\n"
        "                                 Dload  Upload   Total   Spent    Left  Speed\n"
    )
    steps = rng.randint(5, 30)
    frames = [
        f"\r{k * 100 // steps:3d}  120M  {k * 100 // steps:3d} {k * 4.0:5.1f}M    0     0  10.2M"
        f"      0  0:00:11  0:00:{k:02d}  0:00:{steps - k:02d} 10.9M"
        for k in range(steps + 1)
    ]
    return header + "".join(frames)


def _wget_bar(rng: random.Random) -> str:
    steps = rng.randint(5, 30)
    frames = []
    for k in range(steps + 1):
        pct = k * 100 // steps
        fill = pct * 30 // 100
        frames.append(
            f"linux-6.8.tar.xz    {pct:3d}%[{'=' * fill}>{' ' * (30 - fill)}]  {k * 4.5:6.2f}M"
            f"  10.2MB/s    eta {steps - k}s  "
        )
    return "\r".join(frames) + "\n"


def _long_line(rng: random.Random) -> str:
    fields = []
    size = 0
    target = rng.randint(2048, 4096)
    while size < target:
        field = f'"{rng.choice(WORDS)}_{rng.randint(0, 999)}": "{_words(rng, rng.randint(1, 6))}"'
        fields.append(field)
        size += len(field) + 2
    return "{" + ", ".join(fields) + "}"


def _plain_line(rng: random.Random, i: int) -> str:
    kind = rng.random()
    if kind < 0.4:
        size = rng.randint(0, 99999)
        return f"-rw-r--r-- 1 root root {size:>6} May {1 + i % 28:2d} 12:{i % 60:02d} file{i}.log"
    if kind < 0.6:
        return f" M {rng.choice(FILES)}"
    return f"[{i * 0.013:12.6f}] usb 1-1: {_words(rng, rng.randint(3, 9))}"


def generate(total_bytes: int, seed: int) -> bytes:
    """Deterministic terminal output of about `total_bytes` bytes."""
    rng = random.Random(seed)
    chunks: list[bytes] = []
    size = 0
    i = 0
    while size < total_bytes:
        i += 1
        roll = rng.random()
        # Shares of events, not bytes: progress bars and long lines are few but large.
        if roll < 0.45:
            text = _log_line(rng, i) + "\n"
        elif roll < 0.47:
            text = rng.choice([_apt_bar, _pip_bar, _curl_bar, _wget_bar])(rng) + "\n"
        elif roll < 0.49:
            text = _long_line(rng) + "\n"
        elif roll < 0.89:
            text = _plain_line(rng, i) + "\n"
        elif roll < 0.91:
            text = (_plain_line(rng, i) + "\n") * rng.randint(2, 12)
        elif roll < 0.92:  # a prompt per command, as in a terminal capture
            text = f"root@web-01:~# systemctl status nginx{' ' * rng.randint(0, 3)}\n"
        elif roll < 0.93:
            text = f"C:\\Users\\admin> dir\r\n {_words(rng, 5)}\r\n"
        elif roll < 0.97:
            text = "\n" * rng.randint(1, 3) + " " * rng.randint(0, 4) + "\n"
        else:
            text = _words(rng, 6) + "\n"
        data = text.encode()
        if rng.random() < 0.002:  # a little invalid UTF-8: a stray continuation, a lone lead
            data = data[:5] + b"\x9b\xc3" + data[5:]
        chunks.append(data)
        size += len(data)
    return b"".join(chunks)


def timed(cases: dict[str, Callable[[], object]], repeat: int) -> dict[str, list[float]]:
    """Seconds per run of each case; rounds interleave the cases so drift hits them alike."""
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(repeat):
        for name, fn in cases.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=50.0, help="input size in MB (default 50)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per case (default 3)")
    parser.add_argument("--seed", type=int, default=7, help="generator seed (default 7)")
    args = parser.parse_args()

    data = generate(int(args.mb * 1024 * 1024), args.seed)
    text = data.decode("utf-8", errors="replace")
    mb = len(data) / (1024 * 1024)
    print(
        f"input: {mb:.1f} MB, {text.count(chr(10)):,} lines, {text.count(ESC):,} escapes, "
        f"{text.count(chr(13)):,} CRs (seed {args.seed}); best and median of {args.repeat} runs"
    )

    # (input, case, baseline it is compared with)
    rows = [
        ("str", "baseline re.sub", None),
        ("str", "kosmos clean", "baseline re.sub"),
        ("bytes", "baseline decode + re.sub", None),
        ("bytes", "kosmos clean", "baseline decode + re.sub"),
    ]
    cases: dict[str, Callable[[], object]] = {
        "str baseline re.sub": lambda: BASELINE.sub("", text),
        "str kosmos clean": lambda: clean(text),
        "bytes baseline decode + re.sub": lambda: BASELINE.sub("", data.decode("utf-8", "replace")),
        "bytes kosmos clean": lambda: clean(data),
    }
    times = timed(cases, args.repeat)

    print(
        f"{'input':<6} {'case':<25} {'best s':>7} {'median s':>9} {'MB/s':>7} {'vs baseline':>12}"
    )
    for kind, case, base in rows:
        best, median = min(times[f"{kind} {case}"]), statistics.median(times[f"{kind} {case}"])
        ratio = min(times[f"{kind} {base}"]) / best if base else 1.0
        print(f"{kind:<6} {case:<25} {best:>7.3f} {median:>9.3f} {mb / best:>7.1f} {ratio:>11.2f}x")
    print("vs baseline: kosmos throughput / baseline throughput, from the best runs")

    out = clean(text)
    print(f"output: {len(out.encode()) / (1024 * 1024):.1f} MB, {out.count(chr(10)) + 1:,} lines")


if __name__ == "__main__":
    main()
