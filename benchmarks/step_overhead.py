"""kosmos's own time per step against a bare asyncio subprocess of the same command.

A scripted LLM on loopback answers every request at once with `[CMD] true`; kosmos runs the
session with a real transcript (fsync per event). Each step's time is measured from one LLM
request to the next, and split into the LLM round trip, the command and the rest (kosmos).

    python benchmarks/step_overhead.py [--steps 200]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
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
from tests.llmserver import ScriptedLLM  # noqa: E402

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
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
