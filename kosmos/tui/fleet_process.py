"""The fleet's process, seen from the screen's: started early, given its job, heard in batches.

The screen draws in Textual's loop; a fleet's SSH sessions, LLM requests and transcripts run in
a process of its own (`fleet_runs.serve`), so that neither waits on the other, not even for
the interpreter's lock. A thread here reads what the fleet sends (`fleet_wire`) into an
`Outbox` that the screen drains in batches; the screen's answers go back with `send`.
"""

from __future__ import annotations

import asyncio
import contextlib
import pickle
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from kosmos.tui.fleet_wire import Cancel, FleetJob

# How long closing the screen waits for a cancelled fleet to close its hosts and transcripts.
STOP_WAIT_S = 15.0
# The most of the fleet's process's own output (a traceback) that `Gone` carries: its end.
KEPT_STDERR = 64 * 1024


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
    """The fleet's process has closed its end of the pipe (after its `Ended`, or without one:
    then it failed, with `exit_code`); `stderr` is what it wrote there (a traceback, if it
    failed), which cannot go to the terminal the screen draws on."""

    exit_code: int | None
    stderr: str = ""

    @property
    def reason(self) -> str:
        """Its last line of output (the exception of a traceback), or ""."""
        lines = [line.strip() for line in self.stderr.splitlines() if line.strip()]
        return lines[-1] if lines else ""


class FleetProcess:
    """A fleet's process: spawned when made (its imports done before the start key), then
    running one `FleetJob` whose items reach `outbox`."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair()
        self._conn = Connection(ours.detach())
        fd = theirs.fileno()
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (read and closed by the reader)
        # A session of its own, so that the terminal's keys and hang-ups are the screen's
        # alone: if the screen's process goes, the fleet hears its end of the pipe close.
        self._process = subprocess.Popen(
            [sys.executable, "-c", f"from kosmos.tui.fleet_runs import main; main({fd})"],
            pass_fds=(fd,),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._stderr,
            start_new_session=True,
        )
        theirs.close()
        self._lock = threading.Lock()
        self._reader: threading.Thread | None = None
        # The same module path as here (a test's host opener included), set in the process
        # rather than its environment, which the commands it runs on `local` inherit.
        self.send(list(sys.path))

    def start(self, job: FleetJob, outbox: Outbox) -> None:
        """Run `job`; everything the fleet sends goes to `outbox`: its end (an `Ended`), then
        `Gone` when its process has closed the pipe."""

        def read() -> None:
            try:
                while True:
                    try:
                        outbox.put(self._conn.recv_bytes())
                    except Exception:  # closed at either end (or closed here while reading)
                        break
            finally:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self._process.wait(1.0)
                outbox.put(Gone(self._process.returncode, self._output()))

        self.send(job)
        self._reader = threading.Thread(target=read, name="kosmos-fleet-read", daemon=True)
        self._reader.start()

    def _output(self) -> str:
        """The end of what the process wrote on its stderr (the file is closed after)."""
        with contextlib.suppress(OSError, ValueError), self._stderr as f:
            size = f.seek(0, 2)
            f.seek(max(size - KEPT_STDERR, 0))
            return f.read().decode(errors="replace")
        return ""

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def running(self) -> bool:
        """Started, and its process has not ended."""
        return self._reader is not None and self._process.poll() is None

    def send(self, item: Any) -> bool:
        """Send `item` to the fleet; False once its process has gone."""
        with self._lock:
            try:
                self._conn.send(item)
            except (OSError, ValueError):
                return False
        return True

    async def stop(self, timeout: float = STOP_WAIT_S) -> bool:
        """End the fleet (every host's run aborted, its transcript closed) and its process,
        without blocking the caller's loop; False if it had not ended within `timeout`."""
        if self.running:
            self.send(Cancel())
        else:
            self.hang_up()
        with contextlib.suppress(subprocess.TimeoutExpired):
            await asyncio.to_thread(self._process.wait, timeout)
        ended = self._process.returncode is not None
        if not ended:
            self._process.kill()
            await asyncio.to_thread(self._process.wait)
        self.hang_up()
        if self._reader is None:  # never started: nobody reads its output
            self._stderr.close()
        return ended

    def hang_up(self) -> None:
        """Close the screen's end of the pipe, as the screen's process ending would: the fleet
        ends as cancelled."""
        with self._lock, contextlib.suppress(OSError):
            self._conn.close()
