"""A verdict on a command line, and the walk's interface as rule modules see it."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:
    from kosmos.safety.shell import Dialect, Word

__all__ = [
    "Assessment",
    "Context",
    "SecretReason",
    "Verdict",
    "dangerous",
    "ro",
    "secret",
    "worse",
    "worse_of",
    "write",
]


Verdict = Literal["read_only", "write", "dangerous"]


RANK = {"read_only": 0, "write": 1, "dangerous": 2}


@dataclass(frozen=True)
class Assessment:
    """The verdict on one command line and a one-line reason for the operator and the LLM."""

    verdict: Verdict
    reason: str
    # A read through a local service's unix or netlink socket (`systemctl status`, `ss`,
    # `docker ps`): the kernel lock must leave such sockets open for it to work. On a whole
    # line, only when no other program in it could open one (`catalogue.NO_SOCKETS`).
    service: bool = False
    # It reads secret material (a key file, a process's environment, a secret-named variable):
    # the kernel lock, which stops writes, cannot keep that from the LLM, so it is asked for
    # under every policy but auto.
    secret: bool = False


def ro(names: str, *, service: bool = False) -> Assessment:
    # Internally a read-only finding carries the command names; `Walk.result` words it.
    return Assessment("read_only", names, service)


def write(reason: str) -> Assessment:
    return Assessment("write", reason)


def dangerous(reason: str) -> Assessment:
    return Assessment("dangerous", reason)


class SecretReason(str):
    """A rule's reason that says the command prints secrets (`kubectl get secret -o yaml`):
    a read of secret material, not a write (`read_only_rule` makes it one)."""


def secret(reason: str) -> Assessment:
    """A read of secret material: a write to the policy, which no lock lets run unasked."""
    return Assessment("write", str(reason), secret=True)


def _keep_secret(found: Assessment, a: Assessment, b: Assessment) -> Assessment:
    if (a.secret or b.secret) and not found.secret:
        return replace(found, secret=True)
    return found


def worse(a: Assessment, b: Assessment) -> Assessment:
    if RANK[b.verdict] > RANK[a.verdict]:
        return _keep_secret(b, a, b)
    if a.verdict == b.verdict == "read_only":
        return ro(f"{a.reason}, {b.reason}", service=a.service or b.service)
    return _keep_secret(a, a, b)


def worse_of(a: Assessment, b: Assessment) -> Assessment:
    if RANK[b.verdict] > RANK[a.verdict]:
        return _keep_secret(b, a, b)
    if a.verdict == b.verdict == "read_only" and b.service and not a.service:
        return ro(a.reason, service=True)
    return _keep_secret(a, a, b)


class Context(Protocol):
    """What handlers of commands that run other commands need from the walk."""

    dialect: Dialect
    cwd: str | None
    depth: int
    # Shell functions defined so far: True when surely defined, False when only maybe.
    functions: dict[str, bool]

    def argv(self, words: list[Word], *, functions: bool = False) -> tuple[Assessment, list[Word]]:
        """Assess one argv; the finding and the argv that finally runs (past wrappers).
        `functions`: the first word may name a shell function (a plain call, not `env X`)."""
        ...

    def nested(self, text: str, label: str, dialect: Dialect | None) -> Assessment:
        """Assess a script that a command runs from a string, read in `dialect` (None: a
        shell not known, so as bash and as sh)."""
        ...

    def script_word(self, word: Word, label: str, dialect: Dialect | None) -> Assessment:
        """Assess the script in one word (`sh -c WORD`), read in `dialect`."""
        ...
