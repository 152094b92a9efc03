"""Which kernel lock a command that runs without a person's yes gets, or why it cannot run so.

The approval gate asks this once it has decided that a command runs unasked: under `read-only`
(and the operator's `a`), a read runs inside the lock, with unix and netlink sockets left open
for a read through a local service. Under `locked`, every command runs inside the lock with
those sockets shut, a command judged a write with no TCP port either; what the lock cannot
hold needs a person. A person's yes, and `auto`, run a command without the lock.
"""

from __future__ import annotations

from dataclasses import dataclass

from kosmos.engine.sudo import calls_sudo
from kosmos.hosts.lock import HostLock, LockStatus
from kosmos.hosts.runner import Lock
from kosmos.safety import Verdict


@dataclass(frozen=True)
class Held:
    """The lock a command runs in (None: without one, the host has none), or why it needs a
    person instead (`why`, one clause for the operator and the LLM)."""

    lock: Lock | None = None
    why: str | None = None


def _status(kit: HostLock | None) -> LockStatus:
    if kit is None:
        return LockStatus(why="this kind of host cannot be locked")
    return kit.status or LockStatus(why="not learnt yet")


def unasked(
    kit: HostLock | None,
    command: str,
    risk: Verdict,
    *,
    service: bool,
    locked_policy: bool,
    approved: bool = False,
) -> Held:
    """The lock for `command`, judged `risk`, that runs unasked on the host `kit` locks.

    `approved`: a replay or a fleet's standing approval let it run (a yes given for another
    host or another day); a write so approved runs as approved, outside the lock, except
    under the locked policy.
    """
    if locked_policy and risk == "dangerous":
        return Held(why="it is dangerous, and under the locked policy that needs a person")
    status = _status(kit)
    required = kit is not None and kit.config.required
    if approved and not locked_policy and risk != "read_only":
        if required and not status.held:
            return Held(why=f"this host requires the kernel lock, which is {status.describe()}")
        return Held()
    if not status.held:
        if locked_policy:
            return Held(why=f"the policy is locked and the kernel lock is {status.describe()}")
        if required:
            return Held(why=f"this host requires the kernel lock, which is {status.describe()}")
        return Held(Lock(sockets=service))
    if calls_sudo(command):
        return Held(why="it calls sudo, which cannot gain root inside the kernel lock")
    if not locked_policy:
        return Held(Lock(sockets=service))
    if service:
        return Held(
            why="it reads through a local service's socket, which the kernel lock cannot hold"
        )
    if risk != "read_only" and not status.full:
        return Held(why=f"this host's kernel lock does not hold {'; '.join(status.gaps())}")
    return Held(Lock(sockets=False, network=risk == "read_only"))
