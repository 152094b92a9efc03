"""The kernel lock around a command that runs without a person's yes, on the host itself.

A short prelude in what the host already has (perl, else python3: prelude/lock.pl, lock.py)
sets no_new_privs, enters a Landlock domain and installs a seccomp filter, then execs the shell
that runs the command (on `local`, the spawner takes the same steps between fork and exec:
hosts/spawner.py). Inside it:

* no file is written, created, removed, renamed, linked or truncated anywhere but /dev/null
  (Landlock: every access right of the kernel's ABI is handled, and only read and execute are
  allowed beneath `/`); no mount changes (Landlock);
* from ABI 4, no TCP port is bound and TCP connects only to the host's allowed ports (80 and
  443 unless the config says otherwise: http and https are the only network reads the policy
  knows); from ABI 6, no signal reaches a process outside the lock and no abstract unix socket
  outside it is reached;
* seccomp (lock_filter.py) refuses what Landlock does not hold: mode, owner, times and extended
  attributes, file flags (chattr), io_uring, root's system calls (reboot, modules, clocks,
  hostname, swap, BPF), network-device ioctls, SysV and POSIX IPC writes, raw and packet
  sockets, and unix and netlink sockets unless the lock allows them (`Lock.sockets`).

What the host offers is learnt once per host (`HostLock.probe_script`, run in the same round
trip as the knowledge file and the OS); a command never runs with less of the lock than was
learnt: the prelude ends with status 126 before the command when a step fails.
"""

from __future__ import annotations

import functools
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kosmos.errors import HostError
from kosmos.hosts import lock_rules as rules
from kosmos.hosts.lock_filter import build_filter
from kosmos.hosts.runner import Lock

__all__ = [
    "DEFAULT_PORTS",
    "HostLock",
    "LockConfig",
    "LockStatus",
    "host_lock",
    "learn_lock",
]

# TCP ports a locked command may connect to unless the host's config names others: the ports
# of the http and https URLs that the policy counts as reads.
DEFAULT_PORTS = (80, 443)
# How long learning what a host offers may take, where no other timeout applies.
LEARN_TIMEOUT = 10.0
PRELUDES = Path(__file__).resolve().parent / "prelude"
PROBE_MARK = "lock "

# What an errno from landlock_create_ruleset's version query means for the operator.
_NO_LANDLOCK = {
    "Function not implemented": "the kernel has no Landlock (Linux 5.13 or later has it)",
    "Operation not supported": "Landlock is built in but off (add landlock to the lsm= boot "
    "option)",
    "Operation not permitted": "the host refuses the Landlock calls (a container's seccomp "
    "profile?)",
}


@dataclass(frozen=True)
class LockConfig:
    """A host's lock settings from config: `required` (nothing runs unasked where the lock
    cannot be had) and the TCP ports a locked command may connect to."""

    required: bool = False
    ports: tuple[int, ...] = DEFAULT_PORTS


@dataclass(frozen=True)
class LockStatus:
    """What a host offers: the Landlock ABI (0: none), seccomp, and how the prelude runs."""

    abi: int = 0
    seccomp: bool = False
    interpreter: str | None = None
    arch: str | None = None
    # Why the lock is not held, or (when held) why seccomp is not.
    why: str | None = None

    @property
    def held(self) -> bool:
        """Commands can run inside a Landlock domain that writes nothing but /dev/null."""
        return self.abi > 0 and self.interpreter is not None and self.arch is not None

    @property
    def full(self) -> bool:
        """Every part the lock has holds: network rules, scopes and the seccomp filter."""
        return self.held and self.seccomp and self.abi >= rules.SCOPE_ABI

    def describe(self) -> str:
        """`held (Landlock ABI 7, seccomp)`, or `not held: why`: one line for the operator."""
        if not self.held:
            return f"not held: {self.why or 'unknown'}"
        parts = [f"Landlock ABI {self.abi}"]
        parts.append("seccomp" if self.seccomp else f"no seccomp: {self.why or 'refused'}")
        older = [
            f"no {what} before ABI {abi}"
            for what, abi in (("TCP rules", rules.NET_ABI), ("scopes", rules.SCOPE_ABI))
            if self.abi < abi
        ]
        return f"held ({', '.join(parts)}{'; ' + ', '.join(older) if older else ''})"

    def gaps(self) -> list[str]:
        """What this host's lock does not hold that a full one does."""
        if not self.held:
            return ["everything"]
        gaps = []
        if self.abi < rules.NET_ABI:
            gaps.append("TCP bind and connect (Landlock ABI 4)")
        if self.abi < rules.SCOPE_ABI:
            gaps.append("signals and abstract unix sockets (Landlock ABI 6)")
        if not self.seccomp:
            gaps.append("mode, owner, times, xattrs and unix/netlink sockets (seccomp)")
        return gaps


def _probe_fields(line: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for item in line.strip().split(";"):
        key, sep, value = item.partition("=")
        if sep and key:
            found.setdefault(key.strip(), value.strip())
    return found


def parse_probe(line: str) -> LockStatus:
    """The status a probe's `lock ...` line reports (the mark already taken off)."""
    got = _probe_fields(line)
    arch = got.get("arch") or None
    if "uname" in got:
        kernel, _, machine = got["uname"].partition(" ")
        why = (
            f"not Linux ({kernel or 'uname said nothing'})"
            if kernel != "Linux"
            else f"the lock is built for x86_64 and aarch64, not {machine or 'this arch'}"
        )
        return LockStatus(why=why)
    via = got.get("via")
    if via in (None, "none"):
        return LockStatus(arch=arch, why="neither perl nor python3 is on the host's PATH")
    abi = int(got["abi"]) if got.get("abi", "").isdigit() else 0
    if abi <= 0:
        why = got.get("why", "")
        reason = _NO_LANDLOCK.get(why, f"Landlock is not available ({why or 'no answer'})")
        return LockStatus(interpreter=via, arch=arch, why=reason)
    for step in ("nnp", "landlock"):
        if got.get(step) != "ok":
            name = "no_new_privs" if step == "nnp" else "the Landlock ruleset"
            return LockStatus(
                abi=0,
                interpreter=via,
                arch=arch,
                why=f"{name} was refused ({got.get(step) or 'no answer'})",
            )
    seccomp = got.get("seccomp") == "ok"
    refused = None if seccomp else f"refused ({got.get('seccomp') or 'no answer'})"
    return LockStatus(abi=abi, seccomp=seccomp, interpreter=via, arch=arch, why=refused)


def _rights(names: tuple[str, ...], abi: int) -> int:
    return sum(
        bit for name, (bit, since) in rules.FS_RIGHTS.items() if name in names and since <= abi
    )


@dataclass
class HostLock:
    """One host's lock: its config, what the host offers (learnt once) and the words that run a
    command inside it."""

    config: LockConfig = field(default_factory=LockConfig)
    status: LockStatus | None = None
    _specs: dict[tuple[bool, bool], str] = field(default_factory=dict, repr=False)

    def prelude(self, interpreter: str) -> str:
        """The prelude's source for `interpreter` (perl or python3)."""
        return _source("lock.pl" if interpreter == "perl" else "lock.py")

    def probe_script(self, *, os_line: bool = False, serve: bool = False) -> str:
        """A sh script that prints one `lock ...` line: the interpreter, the arch, the ABI,
        and whether each step of a lock held (it locks only itself, then exits). `os_line`:
        an `os ...` line first, the kernel's name (what `uname -s` says, from the same reading).
        `serve`: where the prelude is perl's, perl goes on to serve once it has probed
        (hosts/ssh_serve.py)."""
        return _probe_script(os_line, serve)

    def learn(self, output: str) -> LockStatus | None:
        """Take the status from a probe's output (other lines are passed over); None when the
        output has no probe line."""
        for line in output.splitlines():
            if line.startswith(PROBE_MARK):
                self.status = parse_probe(line[len(PROBE_MARK) :])
                return self.status
        return None

    def spec(self, lock: Lock) -> str:
        """The prelude's SPEC for a command under `lock` on this host (held)."""
        status = self.status
        assert status is not None and status.held and status.arch is not None
        key = (lock.sockets, lock.network)
        if key in self._specs:
            return self._specs[key]
        abi = min(status.abi, rules.KNOWN_ABI)
        handled = _rights(tuple(rules.FS_RIGHTS), abi)
        net = rules.NET_BIND_TCP | rules.NET_CONNECT_TCP if abi >= rules.NET_ABI else 0
        scoped = rules.SCOPE_ABSTRACT_UNIX | rules.SCOPE_SIGNAL if abi >= rules.SCOPE_ABI else 0
        size = next(size for since, size in rules.RULESET_SIZES if abi >= since)
        items = [
            f"prctl={rules.SYSCALLS[status.arch]['prctl']}",
            f"ruleset={size}:{handled}:{net}:{scoped}",
            f"path={_rights(rules.READ_RIGHTS, abi)}:/",
            f"path={_rights(rules.DEV_NULL_RIGHTS, abi)}:/dev/null",
        ]
        if net and lock.network:
            items += [f"port={rules.NET_CONNECT_TCP}:{port}" for port in self.config.ports]
        if status.seccomp:
            truncate = abi < rules.FS_RIGHTS["truncate"][1]
            code = build_filter(status.arch, sockets=lock.sockets, truncate=truncate)
            items.append(f"filter={code.hex()}")
        self._specs[key] = " ".join(items)
        return self._specs[key]

    @property
    def watches(self) -> bool:
        """The prelude can also be the wrapper around the command (`words(watch=...)`): perl's
        does; python3's, which starts ten times slower, runs inside the shell script's."""
        return self.status is not None and self.status.held and self.status.interpreter == "perl"

    def serve_words(self) -> list[str]:
        """What starts the lock server (perl's prelude with `serve=1`, hosts/ssh_serve.py)."""
        assert self.watches
        return [*_argv("perl"), "serve=1"]

    def words(
        self, lock: Lock | None, shell: str, *, watch: Sequence[str] = ()
    ) -> list[str] | None:
        """What runs a command inside the lock: the prelude's argv up to the command text
        (`... SHELL -c`), or None when it runs without (no lock asked, or none here).

        `watch`: the prelude's wrapper items (`watch=1 ...`, hosts/wrapper.py), given only
        where it `watches`: then these words are the whole command line, the wrapper included.
        """
        if lock is None or self.status is None or not self.status.held:
            return None
        interpreter = self.status.interpreter
        assert interpreter is not None
        assert not watch or self.watches
        spec = " ".join([*watch, self.spec(lock)])
        return [*_argv(interpreter), spec, shell, "-c"]


@functools.cache
def _source(name: str) -> str:
    # Read once per process: every host and command of a fleet sends the same text.
    return (PRELUDES / name).read_text()


def _argv(interpreter: str) -> list[str]:
    if interpreter == "perl":
        return ["perl", "-e", _source("lock.pl"), "--"]
    return ["python3", "-I", "-S", "-c", _source("lock.py")]


def _probe_spec(arch: str) -> str:
    # A ruleset any ABI takes (execute, allowed beneath /: nothing is refused) and the
    # filter commands get: the probe learns whether each can be set, then exits.
    execute = rules.FS_RIGHTS["execute"][0]
    filt = build_filter(arch, sockets=False, truncate=False).hex()
    prctl = rules.SYSCALLS[arch]["prctl"]
    return f"prctl={prctl} ruleset=8:{execute}:0:0 path={execute}:/ filter={filt} probe=1"


@functools.cache
def _probe_script(os_line: bool, serve: bool) -> str:
    # The same for every host: built once per process (a fleet's every host runs it).
    cases = []
    for name, arch in (("x86_64|amd64", "x86_64"), ("aarch64|arm64", "aarch64")):
        patterns = "|".join(f"'Linux {m}'" for m in name.split("|"))
        cases.append(f"{patterns}) a={arch}; s={shlex.quote(_probe_spec(arch))};;")
    perl = " ".join(shlex.quote(w) for w in _argv("perl"))
    python = " ".join(shlex.quote(w) for w in _argv("python3"))
    # The kernel's name and arch: from /proc where Linux has both files (6.1 and later), read
    # by the shell itself, which spares the host a subshell and an exec (1.4 ms of the 17 ms
    # of CPU a learning session costs it); from `uname -sm` elsewhere (older kernels, BSDs).
    return (
        "u=; { read -r o </proc/sys/kernel/ostype && read -r m </proc/sys/kernel/arch "
        '&& u="$o $m"; } 2>/dev/null; [ -n "$u" ] || u=$(uname -sm 2>/dev/null); a=; '
        + ("printf 'os %s\\n' \"${u%% *}\"; " if os_line else "")
        + "case $u in "
        + " ".join(cases)
        + " esac; "
        + 'if [ -z "$a" ]; then printf \'lock uname=%s\\n\' "$u"; '
        + "elif command -v perl >/dev/null 2>&1; then printf 'lock arch=%s;via=perl;' \"$a\"; "
        + (f'exec {perl} serve=1 "$s"; ' if serve else f'{perl} "$s" 2>/dev/null || echo; ')
        + "elif command -v python3 >/dev/null 2>&1; then "
        + "printf 'lock arch=%s;via=python3;' \"$a\"; "
        + f'{python} "$s" 2>/dev/null || echo; '
        + "else printf 'lock arch=%s;via=none\\n' \"$a\"; fi"
    )


def host_lock(runner: object) -> HostLock | None:
    """The runner's HostLock, or None for a runner that cannot lock."""
    found = getattr(runner, "host_lock", None)
    return found if isinstance(found, HostLock) else None


async def learn_lock(runner: object, *, timeout: float) -> LockStatus:
    """What `runner`'s host offers, asked once (a runner that already knows does not ask)."""
    kit = host_lock(runner)
    if kit is None:
        return LockStatus(why="this kind of host cannot be locked")
    if kit.status is None:
        learn = getattr(runner, "learn_host", None)
        if learn is not None:
            try:
                await learn(timeout=timeout)
            except (HostError, OSError, TimeoutError) as e:
                return LockStatus(why=f"the host did not say ({e})")
    return kit.status or LockStatus(why="the host did not say")
