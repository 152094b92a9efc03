"""Reading files on an SSH host: knowledge files and remote skills, over the run's connection."""

from __future__ import annotations

import contextlib
import shlex
from collections.abc import Sequence

from kosmos.errors import HostError
from kosmos.hosts.lock import host_lock
from kosmos.hosts.runner import (
    BROKEN_LINK,
    NOT_A_FILE,
    READ_FILE_LIMIT,
    TOO_LARGE,
    CommandNotStarted,
    CommandResult,
    FileUnreadable,
    OutputBuffer,
    ReadTimeout,
    read_first_each,
    unreadable,
)

__all__ = ["RemoteReads"]

# read_file's exit statuses for "no such file", "a link that leads nowhere" and "the system
# refused the read": distinct from cat's own failures.
MISSING = 44
LINK_NOWHERE = 45
REFUSED = 46
SPECIAL = 47


def _complaint(output: bytes) -> str:
    """What `cat: FILE: Permission denied` says is wrong: the end of its last line."""
    lines = [line for line in output.decode(errors="replace").splitlines() if line.strip()]
    if not lines:
        return "no reason given"
    return lines[-1].rsplit(": ", 1)[-1].strip()


def _remote_path(path: str) -> str:
    """`~/x` as "$HOME"/'x' (so the shell expands only the home), anything else quoted."""
    if path == "~":
        return '"$HOME"'
    if path.startswith("~/"):
        return '"$HOME"/' + shlex.quote(path[2:])
    return shlex.quote(path)


class ReadLost(HostError):
    """The connection died during a read of kosmos's own."""


class RemoteReads:
    """read_file and read_first for SSHRunner: one remote command per read."""

    name: str
    # What `uname -s` says there, learnt with the first read; None until then.
    os: str | None = None

    async def _exec(
        self,
        command: str,
        *,
        timeout: float,
        buffer: OutputBuffer,
        limit: int | None = None,
        own: bool = False,
    ) -> CommandResult:
        raise NotImplementedError  # SSHRunner's

    async def learn_host(self, *, timeout: float) -> None:
        """Learn the host's OS and lock in one round trip, in the session that then serves."""
        with contextlib.suppress(TimeoutError):
            await self._learn(ask_os=self.os is None, timeout=timeout)

    async def _learn(self, *, ask_os: bool, timeout: float) -> None:
        """Learn the host's shell, OS and lock in the session that then serves its locked
        commands (hosts/ssh_serve.py); TimeoutError when it does not say in time."""
        raise NotImplementedError  # SSHRunner's

    async def _own(
        self, command: str, *, timeout: float, limit: int, paths: Sequence[str] | None = None
    ) -> CommandResult:
        """Run kosmos's own script: through the lock server where there is one, else in a
        session of its own. `paths`: it is read_first's script for them."""
        raise NotImplementedError  # SSHRunner's

    async def read_file(self, path: str, *, timeout: float) -> str | None:
        try:
            return await self._read_file(path, timeout=timeout)
        except ReadLost:
            # It only reads: after a cut it runs once more, on a new connection, as the next
            # command would (the reconnect is said through `notify`).
            return await self._read_file(path, timeout=timeout)

    async def _read_file(self, path: str, *, timeout: float) -> str | None:
        target = _remote_path(path)
        command = (
            f'f={target}; [ -L "$f" ] && [ ! -e "$f" ] && exit {LINK_NOWHERE}; '
            f'[ -e "$f" ] && [ ! -d "$f" ] || exit {MISSING}; [ -f "$f" ] || exit {SPECIAL}; '
            'exec cat -- "$f" 2>&1'
        )
        try:
            result = await self._own(command, timeout=timeout, limit=READ_FILE_LIMIT)
        except CommandNotStarted as e:
            raise TimeoutError(f"{self.name}: reading {path} took longer than {timeout:g} s") from e
        if result.output.total > READ_FILE_LIMIT:
            raise FileUnreadable(path, TOO_LARGE)
        if result.timed_out:
            raise TimeoutError(f"{self.name}: reading {path} took longer than {timeout:g} s")
        if result.connection_lost:
            raise ReadLost(f"{self.name}: the connection was lost while reading {path}")
        if result.exit_code == MISSING:
            return None
        if result.exit_code == LINK_NOWHERE:
            raise FileUnreadable(path, BROKEN_LINK)
        if result.exit_code == SPECIAL:
            raise FileUnreadable(path, NOT_A_FILE)
        if result.exit_code != 0:
            raise FileUnreadable(path, unreadable(_complaint(result.output.data())))
        return result.output.data().decode("utf-8", errors="replace")

    async def read_first(self, paths: Sequence[str], *, timeout: float) -> tuple[str, str] | None:
        """read_first once more, on a new connection, when the link died during it (the first
        knowledge read of a run, say), as a command after a cut reconnects once."""
        try:
            return await self._read_first(paths, timeout=timeout)
        except ReadLost:
            return await self._read_first(paths, timeout=timeout)

    async def _read_first(self, paths: Sequence[str], *, timeout: float) -> tuple[str, str] | None:
        """One command for all of `paths`: each read costs a round trip to the host.

        The script marks each path it tries (`try N`) and the one it prints (`hit N`), so a
        timeout or an unreadable file names its path. A file that is there but blank to `grep`
        is passed over as read_first_each does; a host without grep, and the rare file of
        Unicode-only blanks, get one read per path instead. grep's complaint about a file it
        cannot read (exit status 2) is the reason FileUnreadable gives.
        """
        if not paths:
            return None
        listed = " ".join(_remote_path(p) for p in paths)
        # The first read also asks for the kernel's name and what the kernel lock can be
        # there: one round trip for the three.
        ask_os = self.os is None
        kit = host_lock(self)
        if kit is not None and kit.status is None:
            try:
                await self._learn(ask_os=ask_os, timeout=timeout)
            except (TimeoutError, CommandNotStarted) as e:
                raise ReadTimeout(paths[0], timeout) from e
            ask_os = self.os is None
        ask_lock = kit is not None and kit.status is None
        if kit is not None and ask_lock:  # its uname names the kernel too
            ask = f"{kit.probe_script(os_line=ask_os)}; "
        else:
            ask = "printf 'os %s\\n' \"$(uname -s 2>/dev/null)\"; " if ask_os else ""
        command = (
            ask + "command -v grep >/dev/null 2>&1 || exit 1; "
            f"i=0; for f in {listed}; do printf 'try %s\\n' \"$i\"; "
            f'[ -L "$f" ] && [ ! -e "$f" ] && exit {LINK_NOWHERE}; '
            'if [ -e "$f" ] && [ ! -d "$f" ]; then grep -q \'[^[:space:]]\' "$f" 2>&1; r=$?; '
            '[ "$r" -eq 0 ] && { printf \'hit %s\\n\' "$i"; exec cat -- "$f"; }; '
            f'[ "$r" -eq 1 ] || exit {REFUSED}; fi; '
            f"i=$((i+1)); done; exit {MISSING}"
        )
        # Room for the `os`, `lock`, `try` and `hit` lines in front of the file.
        limit = READ_FILE_LIMIT + 16 * (len(paths) + 1) + 80 + 400
        try:
            result = await self._own(
                command, timeout=timeout, limit=limit, paths=None if ask else paths
            )
        except CommandNotStarted as e:
            raise ReadTimeout(paths[0], timeout) from e
        data = bytes(result.output.head)
        if ask_os and data.startswith(b"os "):
            line, _, data = data.partition(b"\n")
            kernel = line[3:].decode(errors="replace").strip()
            if kernel and not result.connection_lost:
                self.os = kernel
        if ask_lock and kit is not None and data.startswith(b"lock "):
            line, _, data = data.partition(b"\n")
            if not result.connection_lost:
                kit.learn(line.decode(errors="replace"))
        tried, hit, text = 0, None, b""
        while data:
            line, _, rest = data.partition(b"\n")
            word, _, number = line.partition(b" ")
            if word not in (b"try", b"hit") or not number.isdigit():
                break
            if word == b"try":
                tried = int(number)
            else:
                hit, text = int(number), rest
                break
            data = rest
        if hit is not None and hit < len(paths):
            lines = len(result.output.head) - len(text)
            if result.output.total - lines > READ_FILE_LIMIT:
                raise FileUnreadable(paths[hit], TOO_LARGE)
        if result.timed_out:
            raise ReadTimeout(paths[min(tried, len(paths) - 1)], timeout)
        if result.connection_lost:
            raise ReadLost(f"{self.name}: the connection was lost while reading {paths[tried]}")
        if hit is None and tried < len(paths):
            if result.exit_code == LINK_NOWHERE:
                raise FileUnreadable(paths[tried], BROKEN_LINK)
            if result.exit_code == REFUSED:
                raise FileUnreadable(paths[tried], unreadable(_complaint(data)))
        if hit is None or result.exit_code != 0 or hit >= len(paths):
            return None if result.exit_code == MISSING else await self._read_each(paths, timeout)
        decoded = text.decode("utf-8", errors="replace")
        if decoded.strip():
            return paths[hit], decoded
        return await self._read_each(paths[hit + 1 :], timeout)

    async def _read_each(self, paths: Sequence[str], timeout: float) -> tuple[str, str] | None:
        return await read_first_each(self, paths, timeout=timeout)
