"""The cyclic garbage collector, set for a process that drives many hosts.

A full collection scans every object the collector tracks, and a process that has imported
asyncssh, cryptography, httpx, pydantic (and Textual) holds some 170,000 of them: during a
500-host fleet each full collection held the loop it ran on for 100-400 ms (a frame of the
screen, every host's next step). `settle` takes what is alive once a command's imports are
done (modules, classes, the parsed settings) out of every later collection (`gc.freeze`;
reference counting still frees what is dropped), and runs young collections every 10,000
allocations rather than CPython's 700, so that fewer short-lived objects (a packet, an event)
survive into the generations scanned again.
"""

from __future__ import annotations

import gc

# Allocations between two young collections (CPython's default: 700).
YOUNG = 10_000


def settle() -> None:
    """Keep everything alive now out of later collections; young collections less often.
    Called when a process's long work starts (a run, a screen, a server, a fleet)."""
    gc.freeze()
    young, middle, old = gc.get_threshold()
    gc.set_threshold(max(young, YOUNG), middle, old)
