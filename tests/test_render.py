"""What line mode prints for the events of a run."""

from __future__ import annotations

import io

from kosmos.events import RunFinished
from kosmos.frontends.console import Console
from kosmos.frontends.render import TextRenderer


def summary(steps: int, commands: int) -> str:
    out, err = io.StringIO(), io.StringIO()
    render = TextRenderer(Console(out=out, err=err, color=False))
    render(
        RunFinished(status="done", steps=steps, message="ok", exit_code=0, commands_run=commands)
    )
    return out.getvalue().splitlines()[0]


def test_the_summary_counts_in_words_that_agree() -> None:
    assert summary(1, 1).startswith("■ done · 1 step · 1 command · ")
    assert summary(2, 0).startswith("■ done · 2 steps · 0 commands · ")
