"""A host's run view built from its story: the time to mount its decided command steps.

A fleet host's run view is built when the host is shown (the asking host's, after each `A`),
from the events it has had: each command step it mounts is one that was decided long ago, and
ran: its state says how it ended and its output area holds what it printed (two lines, like
`df -P /`). This mounts `--steps` such steps (default 10) into a scrolling box under Textual's
headless driver at 200x50, with kosmos's stylesheet, and times it to the frame that follows,
in a process of its own per contender, alternating, medians of `--repeat` after two warm-up
rounds:

* floor: one `Static` per step showing the command as the step shows it and its output under
  it (the least a step could be);
* after: kosmos's `CmdStep`, from this checkout;
* before (with `--before DIR`): the same from another checkout, e.g. `git worktree add
  /tmp/before main~1`.

Printed: the milliseconds per view of N steps (and x the floor), and the widgets one step
mounts (its scrollbars included).

    python benchmarks/tui_steps.py [--steps 10] [--repeat 9] [--before DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Run in a process of its own, with the checkout to time first on sys.path.
MOUNT = r"""
import asyncio, sys, time
from pathlib import Path
from textual.app import App
from textual.containers import VerticalScroll
from textual.widgets import Static
from rich.console import Group
from rich.text import Text
import kosmos.tui.app
from kosmos.events import CommandFinished
from kosmos.tui.widgets.command import CmdStep, command_syntax

kind, steps, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])


class Box(App):
    CSS = (Path(kosmos.tui.app.__file__).parent / "kosmos.tcss").read_text()

    def compose(self):
        yield VerticalScroll(id="box")


OUTPUT = "Filesystem 1024-blocks Used Available Capacity Mounted on\n/dev/vda 10218772 4 9678...\n"


def make(step):
    command = f"systemctl status unit-{step} --no-pager"
    if kind == "floor":
        return Static(Group(command_syntax(command), Text(OUTPUT.rstrip())), classes="step")
    return CmdStep(step, command)


def ran(step):
    # What a host's view does with a step's later events: it ran, printed, and ended.
    if kind == "floor":
        return
    step.started()
    step.write(OUTPUT)
    step.finished(
        CommandFinished(
            step=step.step, command=step.command, exit_code=0, duration_s=0.1,
            bytes=len(OUTPUT), output=OUTPUT, sent_to_llm=OUTPUT,
        )
    )


async def main():
    app = Box()
    times, widgets = [], 0
    async with app.run_test(size=(200, 50)) as pilot:
        box = app.query_one("#box")
        for _ in range(rounds):
            made = [make(i) for i in range(1, steps + 1)]
            started = time.perf_counter()
            await box.mount_all(made)
            for step in made:
                ran(step)
            await pilot.pause()
            times.append(time.perf_counter() - started)
            nodes = list(made[0].walk_children(with_self=True))
            # With the scrollbars shown (a widget each, and their corner where both are).
            bars = [(n.show_vertical_scrollbar, n.show_horizontal_scrollbar) for n in nodes]
            widgets = len(nodes) + sum(v + h + (v and h) for v, h in bars)
            await box.remove_children()

    print(min(times[2:]) if len(times) > 2 else times[-1], widgets)


asyncio.run(main())
"""


def timed(kind: str, root: Path, steps: int) -> tuple[float, int]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run(
        [sys.executable, "-c", MOUNT, kind, str(steps), "5"],
        env=env,
        cwd=root,  # `-c` puts the working directory first on sys.path
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        sys.exit(f"{kind} ({root}) failed: {done.stderr[-1500:]}")
    seconds, widgets = done.stdout.split()
    return float(seconds), int(widgets)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--before", type=Path, help="another checkout to time beside this one")
    args = parser.parse_args()
    contenders = {"floor": ("floor", ROOT), "after": ("steps", ROOT)}
    if args.before:
        contenders["before"] = ("steps", args.before.resolve())
    runs: dict[str, list[float]] = {name: [] for name in contenders}
    widgets: dict[str, int] = {}
    for _ in range(args.repeat):
        for name, (kind, root) in contenders.items():
            seconds, count = timed(kind, root, args.steps)
            runs[name].append(seconds)
            widgets[name] = count
    floor = statistics.median(runs["floor"])
    print(
        f"{args.steps} decided command steps mounted, to the next frame; medians of "
        f"{args.repeat} processes (each the best of 3 rounds after 2 warm-up rounds)"
    )
    for name, times in runs.items():
        median = statistics.median(times)
        print(
            f"  {name:7} {median * 1000:7.1f} ms  ({median / floor:.2f}x the floor)  "
            f"{widgets[name]} widget(s) a step"
        )


if __name__ == "__main__":
    main()
