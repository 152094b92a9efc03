"""The link between the fleet screen and the fleet's thread: items cross pickled and in order,
a screen that hangs up ends the fleet, and nothing is sent once the fleet has ended."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from kosmos.tui.fleet_wire import Cancel, Link, RunAll


def test_a_hang_up_before_the_job_ends_the_fleet_unstarted() -> None:
    link = Link()
    got: list[Any] = []
    fleet = threading.Thread(target=lambda: got.append(link.job()))
    fleet.start()
    link.hang_up()
    fleet.join(5)
    assert not fleet.is_alive() and got == [Cancel()]
    assert link.send(RunAll("df -h", False)) is False


def test_items_reach_the_fleets_loop_pickled_and_in_order() -> None:
    link = Link()
    job = {"hosts": ["a", "b"]}
    assert link.send(job)
    assert link.send(RunAll("uptime", False))  # sent before the fleet listens: taken first
    taken: list[Any] = []
    listening = threading.Event()
    sent_batches: list[bytes] = []
    link.outbox = sent_batches.append

    async def fleet() -> Any:
        first = link.job()
        link.listen(asyncio.get_running_loop(), taken.append)
        listening.set()
        while Cancel() not in taken:
            await asyncio.sleep(0.01)
        link.to_screen(["ended"])
        return first

    result: list[Any] = []
    thread = threading.Thread(target=lambda: result.append(asyncio.run(fleet())))
    thread.start()
    assert listening.wait(5)
    assert link.send(RunAll("df -P /", False))
    link.hang_up()
    thread.join(5)
    link.close()
    # The job is a copy: the fleet never holds the screen's object.
    assert result == [job] and result[0] is not job
    assert taken == [RunAll("uptime", False), RunAll("df -P /", False), Cancel()]
    assert len(sent_batches) == 1 and isinstance(sent_batches[0], bytes)
    assert link.send(RunAll("w", False)) is False


def test_nothing_is_sent_to_a_fleet_that_has_ended() -> None:
    link = Link()
    loop = asyncio.new_event_loop()
    link.listen(loop, lambda item: None)
    loop.close()
    assert link.send(RunAll("uptime", False)) is False  # its loop has closed
    link.close()
    assert link.send(RunAll("uptime", False)) is False
    assert link.job() is None
