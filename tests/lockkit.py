"""Helpers for the kernel lock's tests: scratch directories, their state, PATHs without a
program, and listeners that record whether anything reached them."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import socket
import stat
import subprocess
import threading
from pathlib import Path

from tests.helpers import need

PROGRAM_DIRS = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")

SCRATCH = {"F": "canary F\n", "G": "canary G\n", "D/inner": "inner\n"}


def make_scratch(root: Path, owner: int | None = None) -> Path:
    """A directory of canary files and a git repository, owned by `owner` (a uid)."""
    need("git", "git")
    root.mkdir(parents=True)
    for rel, text in SCRATCH.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    repo = root / "repo"
    repo.mkdir()
    subprocess.run(
        ["git", "init", "-q", str(repo)],
        check=True,
        env={"PATH": "/usr/bin:/bin", "HOME": str(root)},
    )
    if owner is not None:
        for dirpath, dirnames, filenames in os.walk(root):
            for name in [*dirnames, *filenames, "."]:
                os.chown(Path(dirpath, name), owner, owner, follow_symlinks=False)
    return root


def state(root: Path) -> dict[str, tuple[object, ...]]:
    """Every path under `root` with what a write, chmod, chown, touch, xattr or chattr changes:
    each of those moves the ctime, and contents are hashed."""
    seen: dict[str, tuple[object, ...]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames, "."]:
            path = Path(dirpath, name)
            st = path.lstat()
            if stat.S_ISREG(st.st_mode):
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
            elif stat.S_ISLNK(st.st_mode):
                digest = os.readlink(path)
            else:
                digest = ""
            seen[str(path.relative_to(root))] = (
                st.st_mode,
                st.st_uid,
                st.st_gid,
                st.st_size,
                st.st_mtime_ns,
                st.st_ctime_ns,
                digest,
            )
    return seen


def bin_without(root: Path, *names: str) -> Path:
    """A directory of links to every program on this machine except those whose names start
    with one of `names`: a PATH for a host that lacks them."""
    out = root / ("bin-without-" + "-".join(names))
    if out.exists():
        return out
    out.mkdir(parents=True)
    done: set[str] = set()
    for directory in PROGRAM_DIRS:
        with contextlib.suppress(FileNotFoundError):
            for entry in os.scandir(directory):
                if entry.name in done or entry.name.startswith(names):
                    continue
                done.add(entry.name)
                (out / entry.name).symlink_to(entry.path)
    out.chmod(0o755)
    return out


class Listener:
    """A TCP or unix stream listener on a thread; `hits` counts the connections it accepted
    and `data` keeps the bytes they sent."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.hits = 0
        self.data = b""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @classmethod
    def tcp(cls) -> Listener:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        return cls(sock)

    @classmethod
    def unix(cls, address: str | bytes) -> Listener:
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(address)
        if isinstance(address, str):
            os.chmod(address, 0o777)
        return cls(sock)

    @property
    def port(self) -> int:
        return self.sock.getsockname()[1]

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            self.hits += 1
            with conn:
                conn.settimeout(0.5)
                with contextlib.suppress(OSError):
                    request = conn.recv(4096)
                    self.data += request
                    if request.startswith(b"GET"):
                        conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 6\r\n\r\nhello\n")

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.sock.close()


def remove(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
