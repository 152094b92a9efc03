"""A timeout that counts the time the event loop gave a task, not the time it was busy elsewhere.

A fleet's controller connects to many hosts in one event loop. When it is busy (a hundred
key exchanges at once), a connection's own packets wait their turn, and a plain wall-clock
timeout would report a healthy host as unreachable because kosmos was slow. `within` counts a
wake-up that came late as a single tick: the time counted is the time the loop had for the
task, so only the host's own silence uses the timeout up.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import TypeVar

__all__ = ["within"]

T = TypeVar("T")
TICK = 0.25


async def within(awaitable: Awaitable[T], seconds: float, *, tick: float = TICK) -> T:
    """Await `awaitable`; raise TimeoutError once it has had `seconds` of the loop's time."""
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(awaitable)
    counted = 0.0
    last = loop.time()
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=min(tick, seconds - counted))
            if done:
                return task.result()
            now = loop.time()
            # On time, a tick counts in full; late, because the loop was busy, as one tick.
            counted += min(now - last, tick)
            last = now
            if counted >= seconds:
                raise TimeoutError(f"no answer within {seconds:g} s")
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
