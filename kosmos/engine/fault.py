"""The one line a run ends with when a fault kosmos has no message for stops it."""

from __future__ import annotations

import traceback
from pathlib import Path

# What the run was doing in each state.
_DOING: dict[str, str] = {
    "idle": "waiting for the LLM",
    "waiting_cmd": "running a command",
    "waiting_user": "waiting for an answer",
    "done": "finishing",
}
_PACKAGE = Path(__file__).resolve().parent.parent


def preview(text: str, limit: int = 200) -> str:
    """`text` on one line, cut to `limit` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def unexpected_line(
    error: Exception, *, step: int, starting: bool, state: str, transcript: str | None
) -> str:
    """What failed, where in kosmos, and what to do: `step`, the last step the run got to;
    `starting`, whether it had yet to send its first step."""
    doing = "starting the run" if starting else _DOING[state]
    text = preview(str(error), 300) or "no details"
    where = ""
    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        path = Path(frame.filename).resolve()
        if path.is_relative_to(_PACKAGE):
            where = f" at {path.relative_to(_PACKAGE.parent)}:{frame.lineno}"
            break
    report = f"the transcript {transcript}" if transcript else "this line"
    return (
        f"step {max(step, 1)}: unexpected {type(error).__name__} while {doing}: "
        f"{text}{where}; the run stopped. Unless it names a fault of this machine or the "
        f"host, report it as a kosmos bug with {report}"
    )
