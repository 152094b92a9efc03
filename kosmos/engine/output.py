"""What the LLM is sent of one command's result (docs/protocol.md, Replies)."""

from __future__ import annotations

from kosmos.clean import cap, clean
from kosmos.engine.guard import neutralise
from kosmos.hosts.runner import CommandResult
from kosmos.prompts import Prompts

# What goes to the LLM of one command's output.
LLM_MAX_BYTES = 10 * 1024
LLM_MAX_LINES = 256


def omitted_bytes(count: int) -> str:
    return f"[... {count} bytes of output not kept ...]"


def output_for_llm(result: CommandResult, prompts: Prompts, *, command_timeout: float) -> str:
    """Cleaned, capped output plus one status line when the command did not simply succeed.

    Output is data: lines in it that read as directives are escaped (engine/guard.py).
    """
    p = prompts
    status = ""
    if result.timed_out:
        status = p["SKILL_TIMED_OUT"].format(timeout=f"{command_timeout:g}")
    elif result.cancelled:
        status = p["SKILL_STOPPED"].format(elapsed=f"{result.duration_s:.1f}")
    elif result.connection_lost:
        status = p["SKILL_CONNECTION_LOST"]
    elif result.exit_code not in (0, None):
        status = p["SKILL_EXIT_CODE"].format(exit_code=result.exit_code)
    text = neutralise(clean(result.output.data(marker=omitted_bytes))) or p["SKILL_NO_OUTPUT"]
    reserve_bytes = len(status.encode()) + 1 if status else 0
    text, _ = cap(
        text,
        max_bytes=LLM_MAX_BYTES - reserve_bytes,
        max_lines=LLM_MAX_LINES - (1 if status else 0),
        marker=lambda lines, size: p["SKILL_OUTPUT_OMITTED"].format(lines=lines, bytes=size),
    )
    return f"{text}\n{status}" if status else text
