"""kosmos's own time per step against a bare asyncio subprocess of the same command.

A scripted LLM on loopback answers every request at once with `[CMD] true`; kosmos runs the
session with a real transcript (fsync per event). Each step's time is measured from one LLM
request to the next, and split into the LLM round trip, the command and the rest (kosmos).

With `--process`, whole processes instead, side by side in one run (alternating, medians of
`--repeat` after one warm-up run each, bytecode cached as an install has it): `kosmos run` of
an N-step skill on `local`, and over SSH to a loopback sshd (as root: it starts one, as the
tests do), each against a floor built from the same libraries in
one process: httpx to the same scripted LLM, then the command by an asyncio subprocess
(locally) or an asyncssh connection (over SSH), with the same conversation, nothing else.

    python benchmarks/step_overhead.py [--steps 200]
    python benchmarks/step_overhead.py --process [--steps 20] [--repeat 7] [--policy read-only]

`--policy read-only` runs kosmos's steps unasked inside the kernel lock (`true` is a read);
the default, `--yes`, runs them without it.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kosmos.config import Settings  # noqa: E402
from kosmos.engine.session import Session, SessionOptions  # noqa: E402
from kosmos.events import CommandFinished, CommandStarted, Event, LLMReply, LLMRequest  # noqa: E402
from kosmos.hosts.local import LocalRunner  # noqa: E402
from kosmos.llm.factory import make_provider  # noqa: E402
from kosmos.prompts import Prompts  # noqa: E402
from kosmos.transcript import Transcript  # noqa: E402
from tests.helpers import ScriptOperator, make_skill  # noqa: E402
from tests.llmserver import Recorded, ScriptedLLM  # noqa: E402

COMMAND = "true"


async def bare(n: int) -> list[float]:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        proc = await asyncio.create_subprocess_exec(
            "sh", "-c", COMMAND, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE
        )
        await proc.communicate()
        times.append(time.perf_counter() - t)
    return times


async def kosmos(n: int, llm: ScriptedLLM, transcript: Path) -> dict[str, list[float]]:
    llm.script(*[f"[CMD] {COMMAND}"] * n, "[DONE] ok")
    marks: list[tuple[str, float]] = []
    writer = Transcript(transcript)

    def emit(event: Event) -> None:
        writer.write(event)
        if isinstance(event, LLMRequest | LLMReply | CommandStarted | CommandFinished):
            marks.append((event.type, time.perf_counter()))

    provider = make_provider(Settings(base_url=llm.base_url))
    session = Session(
        make_skill(),
        params={},
        runner=LocalRunner(),
        provider=provider,
        operator=ScriptOperator(),
        prompts=Prompts.load(),
        emit=emit,
        options=SessionOptions(max_steps=n + 5, history_mode="last_n", history_max=10),
    )
    await session.run()
    await provider.aclose()
    writer.close()
    requests = [t for kind, t in marks if kind == "llm_request"]
    replies = [t for kind, t in marks if kind == "llm_reply"]
    starts = [t for kind, t in marks if kind == "command_started"]
    ends = [t for kind, t in marks if kind == "command_finished"]
    step = [b - a for a, b in zip(requests, requests[1:], strict=False)]
    llm_rt = [b - a for a, b in zip(requests, replies, strict=False)][: len(step)]
    cmd = [b - a for a, b in zip(starts, ends, strict=False)][: len(step)]
    own = [s - lt - c for s, lt, c in zip(step, llm_rt, cmd, strict=False)]
    return {"step": step, "llm": llm_rt, "command": cmd, "kosmos": own}


def ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:8.2f}"


# The floor: one process, the same requests to the same LLM, the commands and nothing else.
FLOOR = r"""
import asyncio, sys, httpx
url, steps, where = sys.argv[1], int(sys.argv[2]), sys.argv[3]

async def main():
    messages = [{"role": "system", "content": "floor"}, {"role": "user", "content": "go"}]
    run = None
    if where != "local":
        import asyncssh
        host, port, user, key, known = where.split(",")
        conn = await asyncssh.connect(host, int(port), username=user, client_keys=[key],
                                      known_hosts=known, config=[])
        async def run(command):
            return (await conn.run(command)).stdout
    else:
        async def run(command):
            proc = await asyncio.create_subprocess_exec(
                "sh", "-c", command, stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
            return (await proc.communicate())[0].decode()
    async with httpx.AsyncClient(timeout=30) as client:
        for step in range(steps + 1):
            body = {"model": "m", "messages": messages}
            reply = (await client.post(url + "/chat/completions", json=body)).json()
            text = reply["choices"][0]["message"]["content"]
            messages.append({"role": "assistant", "content": text})
            if not text.startswith("[CMD]"):
                break
            output = await run(text[6:])
            messages.append({"role": "user", "content": "Command output:\n" + output})
    if where != "local":
        conn.close()

asyncio.run(main())
"""


def _steps_llm(steps: int) -> ScriptedLLM:
    """A scripted LLM that answers by the conversation's length: N commands, then [DONE]."""
    llm = ScriptedLLM()

    def reply(record: Recorded) -> str:
        users = sum(1 for m in record.messages if m["role"] == "user")
        return f"[CMD] {COMMAND}" if users <= steps else "[DONE] ok"

    llm.default = reply
    return llm.start()


def _timed(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    t = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv[:6])}... failed: {done.stderr.decode()[-1500:]}")
    return time.perf_counter() - t


def _phases(llm: ScriptedLLM, argv: list[str], env: dict[str, str], cwd: Path) -> list[float]:
    """One whole run, split by the LLM's request times (wall clock, as the server stamps
    them): [start to the first request, the first step (to the second request), each later
    step on average, the whole run]."""
    llm.requests.clear()
    started = time.time()
    whole = _timed(argv, env, cwd)
    at = [r.at for r in llm.requests]
    return [at[0] - started, at[1] - at[0], (at[-1] - at[1]) / (len(at) - 2), whole]


def processes(steps: int, repeat: int, policy: str | None = None) -> None:
    import os

    from tests.sshd import start_sshd, write_client_home

    llm = _steps_llm(steps)
    tmp = Path(tempfile.mkdtemp(prefix="kosmos-steps-"))
    skills = tmp / "skills" / "steps"
    skills.mkdir(parents=True)
    (skills / "SKILL.md").write_text("---\nname: steps\ndescription: d\n---\nRun.\n")
    home = tmp / "home"
    home.mkdir()
    env = {
        **os.environ,
        "HOME": str(home),
        "AI_KOSMOS_MODEL_BASE_URL": llm.base_url,
        "PYTHONPATH": str(ROOT),
    }
    env.pop("SSH_AUTH_SOCK", None)
    # As installed: bytecode cached (pip compiles what it installs; a checkout compiles once).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "kosmos")], check=True)
    sshd = None
    try:
        sshd = start_sshd("steps")
        ssh = write_client_home(home, sshd)
        where = f"127.0.0.1,{sshd.port},{sshd.user},{ssh / 'id_ed25519'},{ssh / 'known_hosts'}"
    except Exception as e:  # no sshd here: time the local run only
        print(f"(no SSH: {e})")
        where = ""
    kosmos_run = [
        sys.executable,
        "-m",
        "kosmos",
        "run",
        "steps",
        "--skills-dir",
        str(skills.parent),
    ]
    kosmos_run += ["--non-interactive", "--max-steps", str(steps + 5)]
    kosmos_run += ["--policy", policy] if policy else ["--yes"]
    runs = {
        "floor, local (httpx + asyncio subprocess)": [
            sys.executable, "-c", FLOOR, llm.base_url, str(steps), "local"
        ],
        "kosmos run --host local": [*kosmos_run, "--host", "local"],
    }  # fmt: skip
    if where:
        runs["floor, SSH (httpx + asyncssh)"] = [
            sys.executable, "-c", FLOOR, llm.base_url, str(steps), where
        ]  # fmt: skip
        runs["kosmos run --host box (SSH)"] = [*kosmos_run, "--host", "box"]
    times: dict[str, list[list[float]]] = {name: [] for name in runs}
    try:
        for argv in runs.values():  # warm-up: page cache, bytecode, sshd's first connection
            _timed(argv, env, tmp)
        for _ in range(repeat):
            for name, argv in runs.items():
                times[name].append(_phases(llm, argv, env, tmp))
    finally:
        llm.stop()
        if sshd is not None:
            sshd.stop()
    how = f"--policy {policy}" if policy else "--yes"
    print(f"{steps}-step skill (`{COMMAND}` each step, {how}), whole processes, median of {repeat}")
    print("  (then, from the LLM's request times: start to the first request, the first step,")
    print("  each later step)")

    def median(name: str, phase: int) -> float:
        return statistics.median(run[phase] for run in times[name]) * 1000

    names = list(runs)
    for floor, mine in zip(names[::2], names[1::2], strict=True):
        f, k = median(floor, 3), median(mine, 3)
        lines = ((floor, f"{f:8.0f} ms"), (mine, f"{k:8.0f} ms  ({k / f:.2f}x the floor)"))
        for name, line in lines:
            split = f"{median(name, 0):.0f} / {median(name, 1):.1f} / {median(name, 2):.1f} ms"
            print(f"  {name:44} {line}\n  {'':44} {split}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int)
    parser.add_argument("--process", action="store_true", help="time whole processes")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--policy", help="with --process: kosmos run --policy POLICY, not --yes")
    args = parser.parse_args()
    if args.process:
        processes(args.steps or 20, args.repeat, args.policy)
        return
    args.steps = args.steps or 200
    llm = ScriptedLLM().start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            base = asyncio.run(bare(args.steps))
            parts = asyncio.run(kosmos(args.steps, llm, Path(tmp) / "t.jsonl"))
    finally:
        llm.stop()
    ref = statistics.median(base)
    print(f"command `{COMMAND}`, {args.steps} steps, medians in ms")
    print(f"{'what':34} {'ms':>8}  {'vs bare':>8}")
    print(f"{'bare asyncio subprocess':34} {ms(base)}  {1.0:7.2f}x")
    print(
        f"{'kosmos step (LLM + command + own)':34} {ms(parts['step'])}  "
        f"{statistics.median(parts['step']) / ref:7.2f}x"
    )
    print(f"{'  of which LLM round trip':34} {ms(parts['llm'])}")
    print(
        f"{'  of which command':34} {ms(parts['command'])}  "
        f"{statistics.median(parts['command']) / ref:7.2f}x"
    )
    print(f"{'  of which kosmos itself':34} {ms(parts['kosmos'])}")


if __name__ == "__main__":
    main()
