"""The fleet's thread, seen from the screen: started early, given its job, heard in batches.

The screen draws in Textual's loop; a fleet's SSH sessions, LLM requests and transcripts run in
a loop of their own, on a thread of their own (`fleet_runs.serve`), so that a host's next step
never waits on a frame, nor a key on a host. The two share nothing but a socket pair: what
crosses it is pickled (`fleet_wire`), so neither side ever holds an object the other changes.
A thread here reads what the fleet sends into an `Outbox` that the screen drains in batches;
the screen's answers go back with `send`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pickle
import socket
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from kosmos.tui.fleet_wire import Cancel, FleetJob, shut

# How long closing the screen waits for a cancelled fleet to close its hosts and transcripts.
STOP_WAIT_S = 15.0


class Outbox:
    """What the fleet sent, in order, for the screen's loop; `wake` is called (from the reading
    thread) once for each batch, when the first item of a batch arrives. The fleet's messages
    are kept as the bytes read and unpickled by `drain`, in the screen's thread: the reading
    thread only waits on the pipe, and never holds the interpreter's lock for long."""

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
    """The fleet's thread has closed its end of the pipe (after its `Ended`, or without one:
    then it failed, and `error` is its traceback)."""

    error: str = ""

    @property
    def reason(self) -> str:
        """The traceback's last line (the exception), or ""."""
        lines = [line.strip() for line in self.error.splitlines() if line.strip()]
        return lines[-1] if lines else ""


class FleetThread:
    """A fleet's thread: started when made (its imports done before the start key), then
    running one `FleetJob` whose items reach `outbox`."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair()
        self._conn = Connection(ours.detach())
        self._lock = threading.Lock()
        self._reader: threading.Thread | None = None
        self._error = ""
        self._thread = threading.Thread(
            target=self._serve, args=(Connection(theirs.detach()),), name="kosmos-fleet"
        )
        self._thread.daemon = True  # a fleet that will not end does not keep the app alive
        self._thread.start()

    @property
    def native_id(self) -> int | None:
        """The kernel's id of the fleet's thread."""
        return self._thread.native_id

    def _serve(self, conn: Connection) -> None:
        _yield_to_the_screen()
        try:
            from kosmos.tui.fleet_runs import serve

            serve(conn)
        except BaseException:
            self._error = traceback.format_exc()
        finally:
            with contextlib.suppress(OSError):
                conn.close()

    def start(self, job: FleetJob, outbox: Outbox) -> None:
        """Run `job`; everything the fleet sends goes to `outbox`: its end (an `Ended`), then
        `Gone` when its thread has closed the pipe."""

        def read() -> None:
            try:
                while True:
                    try:
                        outbox.put(self._conn.recv_bytes())
                    except Exception:  # ended at either end
                        break
            finally:
                self._thread.join(1.0)
                self._close()
                outbox.put(Gone(self._error))

        self.send(job)
        self._reader = threading.Thread(target=read, name="kosmos-fleet-read", daemon=True)
        self._reader.start()

    @property
    def running(self) -> bool:
        """Started, and its thread has not ended."""
        return self._reader is not None and self._thread.is_alive()

    def send(self, item: Any) -> bool:
        """Send `item` to the fleet; False once its thread has gone."""
        with self._lock:
            try:
                self._conn.send(item)
            except (OSError, ValueError):
                return False
        return True

    async def stop(self, timeout: float = STOP_WAIT_S) -> bool:
        """End the fleet (every host's run aborted, its transcript closed) and its thread,
        without blocking the caller's loop; False if it had not ended within `timeout`."""
        if self.running:
            self.send(Cancel())
        else:
            self.hang_up()
        await asyncio.to_thread(self._thread.join, timeout)
        self.hang_up()
        if self._reader is None:  # nobody reads the screen's end: close it here
            self._close()
        return not self._thread.is_alive()

    def hang_up(self) -> None:
        """End the screen's end of the pipe: the fleet ends as cancelled, and the reading
        thread with it (which closes that end)."""
        with self._lock:
            shut(self._conn)

    def _close(self) -> None:
        with self._lock, contextlib.suppress(OSError):
            self._conn.close()


def _yield_to_the_screen() -> None:
    """Run the calling thread as a batch thread (SCHED_BATCH): its wake-ups, one for each SSH
    packet of a hundred hosts, no longer preempt the screen's thread while it draws, and the
    screen's own wake-up (a key) still preempts this one. The commands it starts on this
    machine inherit it: they have no terminal either."""
    with contextlib.suppress(AttributeError, OSError):  # not Linux
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
