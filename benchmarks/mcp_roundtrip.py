"""A `run_command` round trip through MCP, beside the same command through `kosmos run` and
through the core `run_command`, on the same host (local, and Debian's sshd on loopback).

- MCP: `kosmos mcp` on stdio, started once; each round trip is one `tools/call run_command`
  from the SDK's own client to the structured result (a connection to the host per call);
- core: `kosmos.runs.direct.run_command` in this process (the same road, no MCP);
- kosmos run: a one-step skill (`[CMD] echo ok`, then `[DONE]`) from the scripted LLM, a
  whole `python -m kosmos run` process each time (start-up, two LLM round trips, the step).
All under the read-only policy, so `echo ok` runs unasked inside the kernel lock everywhere.
Needs root (the sshd fixture).

    python benchmarks/mcp_roundtrip.py [--calls 30] [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402
from msgspec.structs import replace  # noqa: E402

from kosmos.config import load_settings  # noqa: E402
from kosmos.frontends.headless import HeadlessOperator  # noqa: E402
from kosmos.runs.assembly import RunChoices  # noqa: E402
from kosmos.runs.direct import run_command  # noqa: E402
from tests.llmserver import Recorded, ScriptedLLM  # noqa: E402
from tests.mcpkit import server_env, skills_dir  # noqa: E402
from tests.sshd import start_sshd, write_client_home  # noqa: E402

COMMAND = "echo ok"


def _step(request: Recorded) -> str:
    said = [m for m in request.messages if m.get("role") == "assistant"]
    return f"[CMD] {COMMAND}" if not said else "[DONE] ok"


async def through_mcp(host: str, n: int, env: dict[str, str], root: Path) -> list[float]:
    args = ["-m", "kosmos", "mcp", "--policy", "read-only", "--transcript-dir", str(root / "r")]
    params = StdioServerParameters(command=sys.executable, args=args, env=env, cwd=str(root))
    times = []
    async with Client(params) as client:
        await client.call_tool("run_command", {"host": host, "command": COMMAND})  # warm
        for _ in range(n):
            t = time.perf_counter()
            result = await client.call_tool("run_command", {"host": host, "command": COMMAND})
            times.append(time.perf_counter() - t)
            assert not result.is_error and result.structured_content["exit_code"] == 0
    return times


async def through_core(host: str, n: int, env: dict[str, str], root: Path) -> list[float]:
    settings = load_settings(env=env, cwd=root, home=Path(env["HOME"]))
    settings = replace(settings, transcript_dir=root / "core")
    choices = RunChoices(policy="read-only", non_interactive=True)
    times = []
    for _ in range(n + 1):
        t = time.perf_counter()
        outcome = await run_command(
            host, COMMAND, settings=settings, operator=HeadlessOperator(), env=env, choices=choices
        )
        times.append(time.perf_counter() - t)
        assert outcome.exit_code == 0
    return times[1:]


def through_run(
    host: str, n: int, env: dict[str, str], root: Path, llm: ScriptedLLM
) -> list[float]:
    llm.default = _step
    times = []
    for i in range(n):
        t = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "kosmos", "run", "probe", "--host", host, "--non-interactive"]
            + ["--policy", "read-only", "--skills-dir", str(root / "skills")]
            + ["--transcript", str(root / f"run-{host}-{i}.jsonl")],
            env=env,
            cwd=root,
            check=True,
            stdin=subprocess.DEVNULL,
            capture_output=True,
        )
        times.append(time.perf_counter() - t)
    return times


def row(name: str, times: list[float]) -> str:
    ms = [x * 1000 for x in times]
    return (
        f"  {name:<34} median {statistics.median(ms):8.1f} ms   min {min(ms):8.1f} ms   n={len(ms)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="kosmos-mcp-bench-"))
    sshd = start_sshd("bench-mcp")
    llm = ScriptedLLM().start()
    try:
        home = root / "home"
        home.mkdir()
        write_client_home(home, sshd)
        skills_dir(root)
        env = server_env(home, llm)
        os.environ["HOME"] = str(home)  # the in-process SSH client reads ~/.ssh from it
        for host in ("local", "box"):
            print(f"{COMMAND!r} on {host}:")
            mcp = asyncio.run(through_mcp(host, args.calls, env, root))
            core = asyncio.run(through_core(host, args.calls, env, root))
            run = through_run(host, args.runs, env, root, llm)
            print(row("MCP tools/call run_command", mcp))
            print(row("core run_command (in process)", core))
            print(row("kosmos run, one-step skill", run))
            extra = (statistics.median(mcp) - statistics.median(core)) * 1000
            print(f"  MCP's own cost over the core: {extra:.1f} ms")
    finally:
        llm.stop()
        sshd.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
