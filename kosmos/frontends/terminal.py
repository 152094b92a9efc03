"""What the line-mode front ends share at a terminal: a failure before any run started, and
driving a session under Ctrl-C and SIGTERM."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from typing import TYPE_CHECKING

from kosmos.engine.session import Session
from kosmos.errors import EXIT_INTERRUPTED, KosmosError
from kosmos.events import RunFinished
from kosmos.frontends.console import Console
from kosmos.frontends.render import JsonRenderer
from kosmos.safety import Redactor

if TYPE_CHECKING:
    from kosmos.engine.resume import Resumed


def fail_early(error: KosmosError, console: Console, redactor: Redactor, *, json: bool) -> int:
    """An error before the session started: one line on stderr (and a --json result line)."""
    message = redactor(str(error))
    console.error(f"kosmos: {message}")
    if json:
        JsonRenderer(console=console)(
            RunFinished(
                status=error.status,
                steps=0,
                message=message,
                exit_code=error.exit_code,
            )
        )
    return error.exit_code


async def drive(
    session: Session,
    resume: Resumed | None = None,
    *,
    console: Console,
    line_mode: bool,
) -> RunFinished:
    """Run the session; Ctrl-C stops the running command (line mode) or ends the run, and
    SIGTERM ends the run. The result is returned either way."""
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(session.run(resume))

    def on_sigint() -> None:
        if line_mode and session.command_running:
            session.stop_command()
            console.say(
                console.style("  stopping the command (Ctrl-C again ends the run)", "33"),
                stream=console.err,
            )
        else:
            task.cancel()

    installed = []
    for sig, handler in ((signal.SIGINT, on_sigint), (signal.SIGTERM, task.cancel)):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, handler)
            installed.append(sig)
    try:
        return await task
    except asyncio.CancelledError:
        if session.result is not None:
            return session.result
        return RunFinished(
            status="aborted", steps=0, message="interrupted", exit_code=EXIT_INTERRUPTED
        )
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
