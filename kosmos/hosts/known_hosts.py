"""known_hosts files as OpenSSH reads and writes them.

asyncssh parses the entries and matches them (hashed names, patterns, markers); kosmos feeds
it one line at a time, so that a line OpenSSH would skip is skipped with a warning naming
file:line instead of failing the whole file, and it appends the entries kosmos adds, hashed
when HashKnownHosts asks for it.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import asyncssh

from kosmos.errors import HostError

MARKERS = ("@cert-authority", "@revoked")
# OpenSSH's hashed host names: |1|base64(salt)|base64(HMAC-SHA1(salt, name)), a 20-byte salt.
HASH_MAGIC = "|1|"
SALT_BYTES = 20


class KnownHostsUnreadable(HostError):
    """A known_hosts file that is there but cannot be read: no key is judged without it."""

    def __init__(self, path: Path, why: str) -> None:
        self.path = path
        super().__init__(
            f"cannot read known_hosts file {path} ({why}); fix its owner and mode or move it "
            "aside: kosmos judges host keys only with every known_hosts file it is told to use"
        )


def read_known_hosts(path: Path, warn: Callable[[str], None]) -> asyncssh.SSHKnownHosts:
    """The entries of one file; a missing file has none, an unreadable one is an error."""
    from kosmos.hosts.sshlib import asyncssh

    entries = asyncssh.SSHKnownHosts()
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except (FileNotFoundError, NotADirectoryError):
        return entries
    except OSError as e:
        raise KnownHostsUnreadable(path, e.strerror or type(e).__name__) from None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        problem = _problem(line)
        if problem is None:
            try:
                entries.load(line)
            except ValueError:
                problem = "its hashed host name cannot be read"
        if problem is not None:
            # ssh skips such a line too (`ssh -v` says "parse error in hostkeys file").
            warn(f"{path}:{number}: skipped, not a known_hosts entry: {problem}")
    return entries


class KnownHostsCache:
    """One run's known_hosts files, each read (and each bad line warned about) once, again
    only when the file changes: a fleet's thousand connects share one read of each file."""

    def __init__(self) -> None:
        self._read: dict[Path, tuple[tuple[int, int, int] | None, asyncssh.SSHKnownHosts]] = {}

    def read(self, path: Path, warn: Callable[[str], None]) -> asyncssh.SSHKnownHosts:
        try:
            st = path.stat()
            stamp: tuple[int, int, int] | None = (st.st_mtime_ns, st.st_size, st.st_ino)
        except OSError:
            stamp = None  # missing, or an error read_known_hosts reports
        cached = self._read.get(path)
        if cached is not None and stamp is not None and cached[0] == stamp:
            return cached[1]
        entries = read_known_hosts(path, warn)
        self._read[path] = (stamp, entries)
        return entries


def _problem(line: str) -> str | None:
    """Why OpenSSH would skip this line, or None. asyncssh passes over a key it cannot read
    without a word; this says so."""
    from kosmos.hosts.sshlib import asyncssh

    marker = line.split(None, 1)[0] if line.startswith("@") else None
    if marker is not None and marker not in MARKERS:
        return f"unknown marker {marker}"
    fields = line.split(None, 2 if marker else 1)
    if len(fields) < (3 if marker else 2):
        return "no key after the host names"
    try:
        asyncssh.import_public_key(fields[-1])
    except (asyncssh.KeyImportError, ValueError):
        return "its key cannot be read"
    return None


def hash_host(name: str, salt: bytes | None = None) -> str:
    """`name` as a hashed known_hosts entry names it (what `ssh-keygen -H` writes)."""
    salt = salt if salt is not None else os.urandom(SALT_BYTES)
    digest = hmac.new(salt, name.encode(), hashlib.sha1).digest()
    return f"{HASH_MAGIC}{base64.b64encode(salt).decode()}|{base64.b64encode(digest).decode()}"


def append_entry(
    path: Path, name: str, key: asyncssh.SSHKey, *, hashed: bool, ssh_dir: Path
) -> None:
    """Append `name key` to `path` (mode 600 if new); raises OSError when it cannot.

    Like ssh, it creates ~/.ssh (0700) when the file belongs there, and no other folder.
    """
    if path.parent == ssh_dir:
        ssh_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    algorithm, data = key.export_public_key("openssh").decode().split()[:2]
    line = f"{hash_host(name) if hashed else name} {algorithm} {data}\n"
    existing = b""
    with contextlib.suppress(OSError):
        existing = path.read_bytes()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8") as f:
        if existing and not existing.endswith(b"\n"):
            f.write("\n")
        f.write(line)
