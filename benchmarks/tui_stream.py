"""A fast, big command output streamed through the TUI's run view, against the same run headless.

The command prints `--mb` MB (default 10) of 100-character lines as fast as `head | tr | fold`
can. Headless: the session runs with a script operator and no UI (the reference). TUI: the same
skill in `kosmos tui` (Textual's headless driver, the same widgets and compositor as in a
terminal); while the output streams, a key is posted every 20 ms and the time until its binding
runs is recorded. Printed: the stream's duration in both, their ratio, key handling latency
percentiles, the lines the output log kept and the process's peak RSS growth.

    python benchmarks/tui_stream.py [--mb 10] [--runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from textual import events  # noqa: E402
from textual.binding import Binding  # noqa: E402

from kosmos.events import CommandFinished  # noqa: E402
from kosmos.transcript import read_transcript  # noqa: E402
from kosmos.tui.app import KosmosApp  # noqa: E402
from tests.helpers import ScriptOperator, make_skill, run_session  # noqa: E402
from tests.llmserver import ScriptedLLM  # noqa: E402
from tests.tuihelpers import awaiting_step, finished, make_app, until  # noqa: E402


def command(mb: int) -> str:
    return f"head -c {mb * 1_000_000} /dev/zero | tr '\\0' x | fold -w 100"


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def headless(llm: ScriptedLLM, mb: int) -> float:
    llm.script(f"[CMD] {command(mb)}", "[DONE] ok")
    operator = ScriptOperator()
    run = await run_session(llm.base_url, make_skill(), operator=operator, keep_output=False)
    (done,) = run.of(CommandFinished)
    assert done.bytes >= mb * 1_000_000, done.bytes
    return done.duration_s


class ProbeApp(KosmosApp):
    """The app with one extra binding whose action notes when it ran."""

    BINDINGS = [Binding("f12", "probe", "probe", show=False, priority=True)]

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.handled: list[float] = []

    def action_probe(self) -> None:
        self.handled.append(time.perf_counter())


async def tui(llm: ScriptedLLM, mb: int, home: Path) -> dict[str, float]:
    llm.script(f"[CMD] {command(mb)}", "[DONE] ok")
    base = make_app(llm.base_url, home, params={"unit": "bench"})
    app = ProbeApp(base.config)
    latencies: list[float] = []
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("ctrl+r")
        await until(pilot, awaiting_step(app, 1), "the command awaiting approval", limit=30)
        view = app.main.front_view()
        assert view is not None
        step = view.cmd_steps[1]

        def streaming() -> bool:
            return step.state in ("awaiting", "running", "proposed")

        async def probe() -> None:
            # Keys go in while the command streams; each waits for its binding to run.
            while streaming():
                count = len(app.handled)
                sent = time.perf_counter()
                app.post_message(events.Key("f12", None))
                while len(app.handled) == count:
                    await asyncio.sleep(0.0005)
                if view.controller is not None and view.controller.command_running:
                    latencies.append(app.handled[-1] - sent)
                await asyncio.sleep(0.02)

        prober = asyncio.ensure_future(probe())
        started = time.perf_counter()
        await pilot.press("enter")
        while streaming():
            await asyncio.sleep(0.005)
        ui_done = time.perf_counter() - started
        await prober
        await until(pilot, finished(app), "the run's end", limit=60)
        log_lines = step.query_one("#output").line_count
        path = view.controller.transcript_path
    (done,) = [e for e in read_transcript(path) if isinstance(e, CommandFinished)]
    latencies.sort()
    return {
        "stream_s": done.duration_s,
        "ui_done_s": ui_done,
        "keys": len(latencies),
        "p50_ms": statistics.median(latencies) * 1000,
        "p95_ms": latencies[int(len(latencies) * 0.95) - 1] * 1000,
        "max_ms": latencies[-1] * 1000,
        "log_lines": log_lines,
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=10, help="output size in MB (default 10)")
    parser.add_argument("--runs", type=int, default=3, help="runs of each (default 3)")
    args = parser.parse_args()
    llm = ScriptedLLM().start()
    rss0 = peak_rss_mb()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            ref = [await headless(llm, args.mb) for _ in range(args.runs)]
            rss_headless = peak_rss_mb()
            results = []
            for i in range(args.runs):
                home = Path(tmp) / f"home{i}"
                home.mkdir()
                results.append(await tui(llm, args.mb, home))
            rss_tui = peak_rss_mb()
    finally:
        llm.stop()
    best_ref = min(ref)
    print(f"output: {args.mb} MB in 100-character lines; {args.runs} runs each; best run shown")
    print(f"headless (reference): stream {best_ref:.2f} s")
    best = min(results, key=lambda r: r["stream_s"])
    print(
        f"tui: stream {best['stream_s']:.2f} s (ratio {best['stream_s'] / best_ref:.2f}), "
        f"until the step shows its exit {best['ui_done_s']:.2f} s "
        f"(ratio {best['ui_done_s'] / best_ref:.2f})"
    )
    worst_p95 = max(r["p95_ms"] for r in results)
    worst_max = max(r["max_ms"] for r in results)
    print(
        f"key handling while streaming: {sum(int(r['keys']) for r in results)} keys, "
        f"p50 {statistics.median(r['p50_ms'] for r in results):.1f} ms, "
        f"worst p95 {worst_p95:.1f} ms, worst max {worst_max:.1f} ms (aim: under 100 ms)"
    )
    print(f"output log kept {int(best['log_lines'])} lines")
    print(
        f"peak RSS: {rss0:.0f} MB at start, {rss_headless:.0f} MB after headless, "
        f"{rss_tui:.0f} MB after the TUI runs"
    )


if __name__ == "__main__":
    asyncio.run(main())
