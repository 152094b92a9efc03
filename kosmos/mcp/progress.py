"""MCP progress notifications from a run's events: one per step's directive, result and end."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from kosmos.engine.guard import visible
from kosmos.events import CommandFinished, Directive, Event, RunFinished

Report = Callable[[float, float | None, str | None], Awaitable[None]]

# Longest directive text a progress line carries; the transcript keeps all of it.
SHOWN_CHARS = 200
# How long the notifications still queued at the end may take to go out.
FLUSH_TIMEOUT_S = 5.0


def describe(event: Event) -> str | None:
    """The progress line for `event`, or None for events that are not a step's news."""
    who = f"{event.host}: " if event.host else ""
    match event:
        case Directive():
            text = " ".join(event.text.split())
            if len(text) > SHOWN_CHARS:
                text = text[: SHOWN_CHARS - 1] + "…"
            return visible(f"{who}step {event.step}: {event.kind} {text}".rstrip())
        case CommandFinished():
            code = "ended" if event.exit_code is None else f"exit {event.exit_code}"
            return visible(f"{who}step {event.step}: {code} in {event.duration_s:.1f} s")
        case RunFinished():
            return visible(f"{who}{event.status}: {event.message}")
    return None


class Progress:
    """Sends each step's news to the client in order, from a task of its own (events are
    emitted synchronously; notifications are awaited)."""

    def __init__(self, report: Report) -> None:
        self.report = report
        self.sent = 0
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None

    def show(self, event: Event) -> None:
        line = describe(event)
        if line is not None:
            self._queue.put_nowait(line)

    async def _send(self) -> None:
        while True:
            line = await self._queue.get()
            self.sent += 1
            try:
                await self.report(self.sent, None, line)
            except Exception:  # a client that stopped listening ends no run
                pass
            finally:
                self._queue.task_done()

    async def __aenter__(self) -> Progress:
        self._task = asyncio.ensure_future(self._send())
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        if exc[0] is None:
            # The result goes after every step's news.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(FLUSH_TIMEOUT_S):
                    await self._queue.join()
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._task
