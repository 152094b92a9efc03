"""`--shard K/N`: which hosts one of N parallel jobs takes, from each host's name alone.

A job decides by the name only, so a host never moves when others join the fleet, and every
job can decide without talking to the others. Names that differ in a number (web001 ... web120,
10.0.3.1 ... 10.0.3.250, node7.example.com) spread evenly: the name's numbers are read as one
value (in a prime base, so that a step in any of them walks through every shard in turn) and
added to a hash of the rest of the name. Names without a number are spread by the hash alone,
evenly only on average.
"""

from __future__ import annotations

import hashlib
import re

from kosmos.errors import UsageError

__all__ = ["Shard", "parse_shard"]

_NUMBER = re.compile(r"\d+")
# Prime, and far above any shard count: a step of one in any number of the name moves the
# value by a power of it, which is coprime to N and so cycles through every shard.
_BASE = 1_000_003


def _key(name: str) -> int:
    skeleton = _NUMBER.sub("#", name)
    value = 0
    for number in _NUMBER.findall(name):
        value = value * _BASE + int(number)
    digest = hashlib.sha256(skeleton.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") + value


class Shard:
    """Shard `index` (1-based) of `total`."""

    def __init__(self, index: int, total: int) -> None:
        self.index = index
        self.total = total

    def __str__(self) -> str:
        return f"{self.index}/{self.total}"

    def takes(self, name: str) -> bool:
        return _key(name) % self.total == self.index - 1


def parse_shard(text: str) -> Shard:
    """`K/N` with 1 <= K <= N; UsageError (exit 2) otherwise."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not m:
        raise UsageError(f"--shard {text!r}: give K/N, e.g. --shard 2/4 for the 2nd of 4 jobs")
    index, total = int(m.group(1)), int(m.group(2))
    if total < 1 or not 1 <= index <= total:
        raise UsageError(
            f"--shard {text}: K must be from 1 to N (N >= 1), as GitLab's CI_NODE_INDEX/"
            "CI_NODE_TOTAL"
        )
    return Shard(index, total)
