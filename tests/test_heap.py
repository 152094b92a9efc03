"""The collector's settings for a long run: what is alive at the start stays out of later
collections, and garbage made afterwards is still collected."""

from __future__ import annotations

import subprocess
import sys

PROBE = r"""
import gc, weakref
from kosmos.heap import YOUNG, settle

class Node:
    pass

gc.set_threshold(700, 10, 10)
settle()
frozen = gc.get_freeze_count()
print(frozen > 1000, gc.get_threshold() == (YOUNG, 10, 10))

# A cycle made after settle() is garbage a full collection still finds.
a, b = Node(), Node()
a.other, b.other = b, a
gone = weakref.ref(a)
del a, b
gc.collect()
print(gone() is None, gc.get_freeze_count() == frozen)

# A larger young threshold set before is kept.
gc.set_threshold(50_000, 10, 10)
settle()
print(gc.get_threshold()[0] == 50_000)
"""


def test_settle_freezes_what_is_alive_and_later_garbage_is_still_collected() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["True"] * 5
