"""`within`: a connect timeout counts the host's own silence, not a busy controller."""

from __future__ import annotations

import asyncio
import time

import pytest

from kosmos.hosts.patience import within


async def test_silence_uses_the_timeout_up() -> None:
    never = asyncio.get_running_loop().create_future()
    with pytest.raises(TimeoutError):
        await within(never, 0.3, tick=0.05)
    assert never.cancelled()


async def _answer_after(seconds: float) -> str:
    await asyncio.sleep(seconds)
    return "answered"


async def _hog(until: float) -> None:
    """A controller busy with other hosts: it holds the loop for 0.3 s at a time."""
    while time.monotonic() < until:
        time.sleep(0.3)  # the loop held, on purpose
        await asyncio.sleep(0)  # and let go for one pass


async def test_a_busy_loop_does_not_use_the_timeout_up() -> None:
    # The answer comes 1.2 s of wall time later, while the loop is mostly busy elsewhere:
    # `within` counts at most one tick per late wake-up, so 0.8 s is enough; a wall-clock
    # timeout of the same 0.8 s is not.
    hog = asyncio.ensure_future(_hog(time.monotonic() + 1.5))
    try:
        assert await within(_answer_after(1.2), 0.8, tick=0.1) == "answered"
    finally:
        await hog
    hog = asyncio.ensure_future(_hog(time.monotonic() + 1.5))
    try:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(_answer_after(1.2), 0.8)
    finally:
        await hog
