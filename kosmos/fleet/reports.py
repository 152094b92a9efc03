"""Each host's report is its own, and the fleet's report groups them.

A host replaying a canary follows its plan (the commands) up to the canary's last reply: the
`[DONE]` whose text is the canary's report, concluded from the canary's outputs. A host whose
conversation so far is the canary's byte for byte (the system prompt with its knowledge, every
output the LLM was sent) takes that reply, which is then truthfully made from identical
outputs; any other host asks the LLM for its own, with the canary's replies and its own
outputs. Hosts whose conversations are identical share that one request (`Reports`), so a
fleet costs the canary's conversation plus one request per distinct set of outputs.

The fleet report groups the hosts by their report's text (and status): one line per outcome,
the largest group first.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Protocol

import msgspec
from msgspec import Struct

from kosmos.events import Message
from kosmos.llm.provider import Reply

# What a host's report says it was made from: its own outputs, or another host's name.
OWN = "own"


class Conversation:
    """A running digest of the messages a session sent the LLM, request by request."""

    def __init__(self) -> None:
        self._hash = hashlib.sha256()

    def add(self, messages: Iterable[Message]) -> None:
        for message in messages:
            self._hash.update(msgspec.json.encode(message))
            self._hash.update(b"\n")

    def digest(self) -> str:
        return self._hash.copy().hexdigest()


class Reports:
    """The final replies made so far for a fleet, by conversation digest, and for which host.

    The first host with a conversation asks the LLM; the others with the same one wait for
    that reply and take it. A request that failed is made again by the next host that needs it.
    """

    def __init__(self) -> None:
        self._made: dict[str, tuple[Reply, str]] = {}
        self._pending: dict[str, asyncio.Future[None]] = {}
        self.requests = 0

    def seed(self, key: str, reply: Reply, host: str) -> None:
        self._made.setdefault(key, (reply, host))

    async def get(
        self, key: str, host: str, make: Callable[[], Awaitable[Reply]]
    ) -> tuple[Reply, str]:
        """The reply for this conversation and the host it was made for; `make` asks the LLM."""
        while True:
            if key in self._made:
                return self._made[key]
            pending = self._pending.get(key)
            if pending is None:
                break
            await asyncio.wait([pending])
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pending[key] = future
        try:
            self.requests += 1
            reply = await make()
            self._made[key] = (reply, host)
            return reply, host
        finally:
            del self._pending[key]
            future.set_result(None)


# -- the fleet report ------------------------------------------------------------------------


class ReportGroup(Struct, frozen=True, kw_only=True):
    """Hosts that ended alike: the same status and the same report, word for word."""

    status: str
    report: str
    hosts: list[str]
    # Per host in `hosts`: what its report was made from (`own`, or another host's name).
    report_from: list[str]


class FleetReport(Struct, frozen=True, kw_only=True):
    """The fleet's report: one group per outcome, the largest first; `text`, one line each."""

    text: str
    groups: list[ReportGroup]


class Reported(Protocol):
    """A host's end as the fleet report reads it (a `HostSummary`)."""

    @property
    def host(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def message(self) -> str: ...
    @property
    def report_from(self) -> str: ...


def fleet_report(hosts: Sequence[Reported]) -> FleetReport:
    """The hosts grouped by status and report text: done first, then the largest group."""
    grouped: dict[tuple[str, str], list[Reported]] = {}
    for h in hosts:
        grouped.setdefault((h.status, h.message), []).append(h)
    ordered = sorted(grouped.items(), key=lambda item: (item[0][0] != "done", -len(item[1])))
    groups = [
        ReportGroup(
            status=status,
            report=message,
            hosts=[h.host for h in members],
            report_from=[h.report_from for h in members],
        )
        for (status, message), members in ordered
    ]
    return FleetReport(text="\n".join(group_line(g) for g in groups), groups=groups)


def group_line(group: ReportGroup, *, width: int = 200, names_width: int = 120) -> str:
    """`3 hosts (web1, web2, web3): done: the report`, on one line."""
    n = len(group.hosts)
    flat = " ".join(group.report.split())
    said = flat if len(flat) <= width else flat[: width - 1] + "…"
    what = f"{group.status}: {said}" if said else group.status
    return f"{n} host{'s' if n != 1 else ''} ({names(group.hosts, names_width)}): {what}"


def names(hosts: Sequence[str], width: int = 120) -> str:
    """Host names, comma-separated, as many as fit in about `width` characters; the rest
    counted (`web1, web2 and 48 more`)."""
    shown: list[str] = []
    size = 0
    for i, name in enumerate(hosts):
        left = len(hosts) - i - 1
        tail = len(f" and {left} more") if left else 0
        if shown and size + 2 + len(name) + tail > width:
            return f"{', '.join(shown)} and {len(hosts) - len(shown)} more"
        shown.append(name)
        size += len(name) + (2 if len(shown) > 1 else 0)
    return ", ".join(shown)
