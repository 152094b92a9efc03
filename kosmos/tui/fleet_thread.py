"""A fleet's own event loop in a thread of its own, and the one-way road from it to the screen.

The screen draws in Textual's loop; a fleet's SSH sessions, LLM requests and transcripts run in
this one, so that a host's next step never waits for a frame to be drawn, and a key never waits
for a hundred key exchanges. What crosses between the two is small and explicit: the fleet puts
its events and requests, in order, into an `Outbox` that the screen drains in batches; the
screen's answers reach the fleet through `FleetThread.call` and `FleetThread.submit`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

# How long closing the screen waits for a cancelled fleet to close its hosts and transcripts.
STOP_WAIT_S = 15.0


class Outbox:
    """Items from the fleet's thread to the screen's, in order; `wake` is called (from the
    fleet's thread) once for each batch, when the first item of a batch arrives."""

    def __init__(self, wake: Callable[[], None]) -> None:
        self._wake = wake
        self._items: list[Any] = []
        self._lock = threading.Lock()

    def put(self, item: Any) -> None:
        with self._lock:
            first = not self._items
            self._items.append(item)
        if first:
            self._wake()

    def drain(self) -> list[Any]:
        """Everything put since the last drain (the next put wakes the screen again)."""
        with self._lock:
            items, self._items = self._items, []
        return items


class FleetThread:
    """Runs one coroutine (the fleet) in a loop of its own, in a daemon thread."""

    def __init__(self, name: str = "kosmos-fleet") -> None:
        self._asyncio = asyncio.Runner(loop_factory=asyncio.new_event_loop)
        # The loop exists now, so that calls can be queued before the thread runs it.
        self.loop = self._asyncio.get_loop()
        self._thread: threading.Thread | None = None
        self._name = name
        self._task: asyncio.Task[Any] | None = None
        self._ended = threading.Event()

    def start(
        self,
        main: Callable[[], Coroutine[Any, Any, Any]],
        ended: Callable[[BaseException | None], None],
    ) -> None:
        """Run `main()` in the thread; `ended` hears, from that thread, how it ended."""

        def run() -> None:
            error: BaseException | None = None
            try:
                # A context of its own: nothing of the screen's (Textual's active app) leaks in.
                self._asyncio.run(self._main(main), context=contextvars.Context())
            except BaseException as e:
                error = e
            finally:
                with contextlib.suppress(Exception):
                    self._asyncio.close()
                self._ended.set()
                ended(error)

        self._thread = threading.Thread(target=run, name=self._name, daemon=True)
        self._thread.start()

    async def _main(self, main: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
        self._task = asyncio.current_task()
        return await main()

    @property
    def running(self) -> bool:
        return self._thread is not None and not self._ended.is_set()

    def call(self, fn: Callable[..., Any], *args: Any) -> bool:
        """Call `fn(*args)` in the fleet's loop, soon; False once the loop has closed."""
        if self._ended.is_set():
            return False
        try:
            self.loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:  # closed between the check and the call
            return False
        return True

    def submit(self, fn: Callable[[], T]) -> concurrent.futures.Future[T]:
        """`fn()` in the fleet's loop; its result (or error) in the future returned."""
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(fn())
            except BaseException as e:
                future.set_exception(e)

        if not self.call(run):
            future.set_exception(RuntimeError("the fleet has ended"))
        return future

    def cancel(self) -> None:
        """Ask the fleet to end: every host's run ends as aborted, its command stopped."""

        def cancel() -> None:
            if self._task is not None:
                self._task.cancel()

        self.call(cancel)

    async def stop(self, timeout: float = STOP_WAIT_S) -> bool:
        """Cancel the fleet and wait (without blocking the caller's loop) until its thread has
        ended; False if it had not within `timeout` seconds."""
        if self._thread is None:
            return True
        self.cancel()
        return await asyncio.to_thread(self._ended.wait, timeout)
