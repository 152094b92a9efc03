"""The fleet's thread, seen from the screen: started early, given its job, heard in batches.

The screen draws in Textual's loop; a fleet's SSH sessions, LLM requests and transcripts run in
a loop of their own, on a thread of their own (`fleet_runs.serve`), so that a host's next step
never waits on a frame, nor a key on a host. The two share nothing but a `fleet_wire.Link`:
what crosses it is pickled, so neither side ever holds an object the other changes. The fleet's
batches wait in an `Outbox` that the screen drains; the screen's answers go back with `send`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pickle
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kosmos.tui.fleet_wire import FleetJob, Link

# How long closing the screen waits for a cancelled fleet to close its hosts and transcripts.
STOP_WAIT_S = 15.0


class Outbox:
    """What the fleet sent, in order, for the screen's loop; `wake` is called (from the fleet's
    thread) once for each batch, when the first item of a batch arrives. The fleet's batches
    are kept as pickled bytes and unpickled by `drain`, in the screen's thread."""

    def __init__(self, wake: Callable[[], None]) -> None:
        self._wake = wake
        self._items: list[Any] = []
        self._lock = threading.Lock()

    def put(self, item: Any) -> None:
        """An item, or (as bytes) a pickled list of items."""
        with self._lock:
            first = not self._items
            self._items.append(item)
        if first:
            self._wake()

    def drain(self) -> list[Any]:
        """Everything put since the last drain (the next put wakes the screen again)."""
        with self._lock:
            items, self._items = self._items, []
        drained: list[Any] = []
        for item in items:
            if isinstance(item, bytes):
                drained += pickle.loads(item)
            else:
                drained.append(item)
        return drained


@dataclass(frozen=True)
class Gone:
    """The fleet's thread has ended (after its `Ended`, or without one: then it failed, and
    `error` is its traceback)."""

    error: str = ""

    @property
    def reason(self) -> str:
        """The traceback's last line (the exception), or ""."""
        lines = [line.strip() for line in self.error.splitlines() if line.strip()]
        return lines[-1] if lines else ""


class FleetThread:
    """A fleet's thread: started when made (its imports done before the start key), then
    running one `FleetJob` whose items reach an `Outbox`."""

    def __init__(self) -> None:
        self._link = Link()
        self._lock = threading.Lock()
        self._outbox: Outbox | None = None
        self._ended = False
        self._error = ""
        self._thread = threading.Thread(target=self._serve, name="kosmos-fleet")
        self._thread.daemon = True  # a fleet that will not end does not keep the app alive
        self._thread.start()

    @property
    def native_id(self) -> int | None:
        """The kernel's id of the fleet's thread."""
        return self._thread.native_id

    def _serve(self) -> None:
        _yield_to_the_screen()
        try:
            from kosmos.tui.fleet_runs import serve

            serve(self._link)
        except BaseException:
            self._error = traceback.format_exc()
        finally:
            with self._lock:
                self._ended = True
                outbox = self._outbox
            if outbox is not None:
                outbox.put(Gone(self._error))

    def start(self, job: FleetJob, outbox: Outbox) -> None:
        """Run `job`; everything the fleet sends goes to `outbox`: its end (an `Ended`), then
        `Gone` when its thread ends."""
        self._link.outbox = outbox.put
        with self._lock:
            self._outbox = outbox
            ended = self._ended
        if ended:  # it failed before it was given the job
            outbox.put(Gone(self._error))
        else:
            self._link.send(job)

    @property
    def running(self) -> bool:
        """Started, and not ended."""
        with self._lock:
            return self._outbox is not None and not self._ended

    def send(self, item: Any) -> bool:
        """Send `item` to the fleet; False once it has ended."""
        return self._link.send(item)

    async def stop(self, timeout: float = STOP_WAIT_S) -> bool:
        """End the fleet (every host's run aborted, its transcript closed) and its thread,
        without blocking the caller's loop; False if it had not ended within `timeout`."""
        self.hang_up()
        await asyncio.to_thread(self._thread.join, timeout)
        return not self._thread.is_alive()

    def hang_up(self) -> None:
        """The screen has gone: the fleet ends as cancelled (a fleet never started, at once)."""
        self._link.hang_up()


def _yield_to_the_screen() -> None:
    """Run the calling thread as a batch thread (SCHED_BATCH): its wake-ups, one for each SSH
    packet of a hundred hosts, no longer preempt the screen's thread while it draws, and the
    screen's own wake-up (a key) still preempts this one. The commands it starts on this
    machine inherit it: they have no terminal either."""
    with contextlib.suppress(AttributeError, OSError):  # not Linux
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
