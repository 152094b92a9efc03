"""Strict host-key checking: known_hosts lookups, trusting a new key, refusing a changed one."""

from __future__ import annotations

import contextlib
import os
import shlex
from pathlib import Path

import asyncssh

from kosmos.errors import HostError

DEFAULT_PORT = 22
GLOBAL_KNOWN_HOSTS = Path("/etc/ssh/ssh_known_hosts")


def host_pattern(host: str, port: int | None) -> str:
    """How known_hosts names a host: `host`, or `[host]:port` off port 22 (as OpenSSH writes)."""
    if port in (None, DEFAULT_PORT):
        return host
    return f"[{host}]:{port}"


def fingerprint(key: asyncssh.SSHKey) -> str:
    return key.get_fingerprint("sha256")


def key_type(key: asyncssh.SSHKey) -> str:
    return key.get_algorithm()


class HostKeyUnknown(HostError):
    """No known_hosts entry for the host, and nobody (or the operator) trusted the key."""

    def __init__(self, host: str, port: int | None, key: asyncssh.SSHKey, declined: bool) -> None:
        self.host, self.port, self.key, self.declined = host, port, key, declined
        super().__init__(str(self))

    def __str__(self) -> str:
        name = host_pattern(self.host, self.port)
        what = f"{key_type(self.key)} {fingerprint(self.key)}"
        if self.declined:
            return f"{name}: host key {what} not trusted; nothing was run"
        port = f"-p {self.port} " if self.port not in (None, DEFAULT_PORT) else ""
        return (
            f"{name}: unknown host key {what}; nothing was run. If the fingerprint is right, "
            f"trust it with `ssh {port}{self.host}` once, or "
            f"`ssh-keyscan {port}{self.host} >> ~/.ssh/known_hosts`, "
            # `kosmos hosts --check` never asks: name the command that does.
            "or run `kosmos run` in a terminal to be asked"
        )


class HostKeyChanged(HostError):
    """The host presented a key other than the one known_hosts holds: always refused."""

    def __init__(self, host: str, port: int | None, key: asyncssh.SSHKey, where: str) -> None:
        self.host, self.port, self.key, self.where = host, port, key, where
        super().__init__(str(self))

    def __str__(self) -> str:
        name = host_pattern(self.host, self.port)
        return (
            f"WARNING: the host key of {name} HAS CHANGED (it now offers {key_type(self.key)} "
            f"{fingerprint(self.key)}; {self.where} holds another). Someone may be intercepting "
            "the connection; kosmos refuses to connect and ran nothing. If the change is "
            f"expected, remove the old key with `ssh-keygen -R {shlex.quote(name)}` and "
            "connect again"
        )


class KnownHosts:
    """The known_hosts files of one connection: the user's file (written to) and the system's."""

    def __init__(self, user_file: Path, extra: tuple[Path, ...] = (GLOBAL_KNOWN_HOSTS,)) -> None:
        self.user_file = user_file
        self.files = [user_file, *extra]

    def load(self) -> asyncssh.SSHKnownHosts:
        """Every readable file's entries (re-read on each connect: trusting a key changes them)."""
        text = ""
        for path in self.files:
            with contextlib.suppress(OSError):
                text += path.read_text(encoding="utf-8", errors="replace") + "\n"
        return asyncssh.import_known_hosts(text)

    def known_keys(self, host: str, addr: str | None, port: int | None) -> list[asyncssh.SSHKey]:
        """The keys known_hosts trusts for this host (empty when the host is unknown)."""
        lookup_port = None if port in (None, DEFAULT_PORT) else port
        trusted = asyncssh.match_known_hosts(self.load(), host, addr or "", lookup_port)
        return list(trusted[0])

    def add(self, host: str, port: int | None, key: asyncssh.SSHKey) -> None:
        """Append `host key` to the user's known_hosts, creating ~/.ssh (0700) if needed."""
        self.user_file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        algorithm, data = key.export_public_key("openssh").decode().split()[:2]
        line = f"{host_pattern(host, port)} {algorithm} {data}\n"
        existing = b""
        with contextlib.suppress(OSError):
            existing = self.user_file.read_bytes()
        fd = os.open(self.user_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as f:
            if existing and not existing.endswith(b"\n"):
                f.write("\n")
            f.write(line)
