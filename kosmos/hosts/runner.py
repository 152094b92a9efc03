"""The Runner seam: run a command on a host with streamed, bounded output."""

from __future__ import annotations

import asyncio
import codecs
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from kosmos.errors import HostError, UsageError

# Set for every command, locally and over SSH: no pager may block a run, and `git status`
# must not take the index lock to refresh it (a read-only command writes nothing).
COMMAND_ENV = {
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "SYSTEMD_PAGER": "",
    "MANPAGER": "cat",
    "GIT_OPTIONAL_LOCKS": "0",
}

# What the transcript keeps of one command's output: the head and the tail, 1 MiB in all.
TRANSCRIPT_HEAD = 512 * 1024
TRANSCRIPT_TAIL = 512 * 1024

# The most of one file read_file and read_first take (knowledge, SKILL.md files are far smaller).
# A larger file is refused, not cut: the first 4 MiB of a skill or of a host's notes would be
# another text, and no LLM takes that much as a system prompt anyway.
READ_FILE_LIMIT = 4 * 1024 * 1024
TOO_LARGE = (
    f"larger than {READ_FILE_LIMIT // (1024 * 1024)} MiB, the most kosmos reads of a file; "
    "shorten it"
)

# Why a file that is there cannot be used (FileUnreadable.reason), each with what to do.
BROKEN_LINK = (
    "a symbolic link that leads nowhere (its target is missing, or it loops); fix or remove it"
)
# A FIFO would block the read for good, a device (/dev/zero) never end it.
NOT_A_FILE = "not a regular file (a FIFO, socket or device); kosmos reads only files"


def unreadable(why: str) -> str:
    """The reason for a file the system refused to read; `why` is its complaint."""
    hint = "; check its owner and mode" if "permission" in why.lower() else ""
    return f"cannot be read ({why}){hint}"


OnOutput = Callable[[str], None]

# The shell a host runs commands under, as the approval policy reads it: `bash` where bash
# exists, else a POSIX `sh` (dash, BusyBox ash).
Shell = Literal["bash", "sh"]


@dataclass(frozen=True)
class Lock:
    """The kernel lock around a command that runs without a person's yes (hosts/lock.py).

    `sockets`: the command may open unix and netlink sockets, because the policy judged it a
    read through a local service (`systemctl status`, `ss`) that the lock cannot tell from a
    write through the same socket. `network`: the command may connect to the host's allowed
    TCP ports (False for a command judged a write: it reaches no port at all).
    """

    sockets: bool = False
    network: bool = True


class ReadTimeout(TimeoutError):
    """Reading `path` took longer than the timeout."""

    def __init__(self, path: str, timeout: float) -> None:
        super().__init__(f"reading {path} took longer than {timeout:g} s")
        self.path = path


class FileUnreadable(UsageError):
    """`path` is there but kosmos cannot use it; `reason` says why and what to do."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class OutputBuffer:
    """Keeps the first `head` and last `tail` bytes of a stream of any size, and counts it all."""

    def __init__(self, head: int = TRANSCRIPT_HEAD, tail: int = TRANSCRIPT_TAIL) -> None:
        self.head_limit = head
        self.tail_limit = tail
        self.head = bytearray()
        self._tail: deque[bytes] = deque()
        self._tail_size = 0
        self.total = 0

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if not data or self.tail_limit <= 0:
            return  # past the head, a buffer without a tail only counts
        self._tail.append(data)
        self._tail_size += len(data)
        while self._tail_size - len(self._tail[0]) >= self.tail_limit:
            self._tail_size -= len(self._tail.popleft())

    @property
    def omitted(self) -> int:
        """Bytes between head and tail that were not kept."""
        return max(0, self.total - len(self.head) - min(self._tail_size, self.tail_limit))

    def tail(self) -> bytes:
        data = b"".join(self._tail)
        return data[-self.tail_limit :] if len(data) > self.tail_limit else data

    def data(self, marker: Callable[[int], str] | None = None) -> bytes:
        """The kept bytes, with a marker line where bytes were left out."""
        tail = self.tail()
        if not tail and not self.omitted:
            return bytes(self.head)
        middle = b""
        if self.omitted:
            note = marker(self.omitted) if marker else f"[... {self.omitted} bytes omitted ...]"
            middle = b"\n" + note.encode() + b"\n"
        return bytes(self.head) + middle + tail

    def text(self, marker: Callable[[int], str] | None = None) -> str:
        """The kept output as text (bad UTF-8 replaced), with a marker where bytes were left out."""
        return self.data(marker).decode("utf-8", errors="replace")


class StreamDecoder:
    """Decodes a byte stream into text chunks without splitting a UTF-8 character."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def decode(self, data: bytes, final: bool = False) -> str:
        return self._decoder.decode(data, final)


@dataclass
class CommandResult:
    """What became of one command."""

    command: str
    exit_code: int | None
    duration_s: float
    output: OutputBuffer
    timed_out: bool = False
    cancelled: bool = False
    connection_lost: bool = False
    signal: int | None = None
    # It ran inside the kernel lock (hosts/lock.py).
    locked: bool = False

    @property
    def bytes(self) -> int:
        return self.output.total


class HostPrompter(Protocol):
    """How a runner asks a person while connecting; front ends implement it.

    Headless runs pass None: an unknown host key or a needed passphrase is then an error.
    """

    async def confirm_host_key(self, host: str, key_type: str, fingerprint: str) -> bool:
        """An unknown host key: True trusts it (and it is added to known_hosts)."""
        ...

    async def ask_secret(self, prompt: str) -> str | None:
        """A password or key passphrase, typed masked; None when the person declines."""
        ...


class Runner(Protocol):
    """One host. `local` runs on this machine; SSH runners keep one connection per host."""

    name: str

    @property
    def dialect(self) -> Shell | None:
        """The shell commands run under; None until the host has said (the policy then reads
        a command as bash and as sh)."""
        ...

    async def connect(self) -> None:
        """Open the connection (no-op for local); raises HostError with what to check."""
        ...

    async def run(
        self,
        command: str,
        *,
        timeout: float,
        on_output: OnOutput | None = None,
        stop: asyncio.Event | None = None,
        stdin: bytes | None = None,
        lock: Lock | None = None,
    ) -> CommandResult:
        """Run `command` under `bash -c` (`sh -c` where there is no bash, as `dialect` says);
        stream decoded output to `on_output`.

        The command's stdin is /dev/null, or carries exactly the one line `stdin` and is then
        closed (a password for `sudo -S`; never logged). `lock`: run it inside the kernel
        lock (it runs without a person's yes) where the host has one (hosts/lock.py; a host
        without runs it as any command, and `CommandResult.locked` says which); None runs it as
        any shell command. If kosmos
        dies while the command runs, the command's whole process group ends (hosts/wrapper.py).

        HostError means the command never started (no connection): the engine may offer Retry.
        On timeout, or when `stop` is set by the operator, the whole process tree is ended and
        the partial output kept (`timed_out` / `cancelled`). If the calling task is cancelled,
        the tree is ended too and CancelledError propagates.
        """
        ...

    async def read_file(self, path: str, *, timeout: float) -> str | None:
        """A file's text (`~` and relative paths as a login shell sees them); None if absent.

        A file that is there but cannot be used raises FileUnreadable: larger than
        READ_FILE_LIMIT (TOO_LARGE, and no more of it is read), a link that leads nowhere
        (BROKEN_LINK), or one the system refuses to read (no permission).
        """
        ...

    async def read_first(self, paths: Sequence[str], *, timeout: float) -> tuple[str, str] | None:
        """(path, text) of the first of `paths` that holds more than whitespace, or None.

        Raises ReadTimeout naming the path being read when `timeout` runs out, and
        FileUnreadable naming the path when it is the first found but cannot be used.
        """
        ...

    async def close(self) -> None: ...


class FileReader(Protocol):
    """What `read_first_each` needs of a runner."""

    async def read_file(self, path: str, *, timeout: float) -> str | None: ...


async def read_first_each(
    runner: FileReader, paths: Sequence[str], *, timeout: float
) -> tuple[str, str] | None:
    """`Runner.read_first` for runners where a file read is cheap: one `read_file` per path."""
    for path in paths:
        try:
            text = await runner.read_file(path, timeout=timeout)
        except TimeoutError as e:
            raise ReadTimeout(path, timeout) from e
        if text is not None and text.strip():
            return path, text
    return None


class CommandNotStarted(HostError):
    """The server took the request to run a command but did not start it within its timeout.

    Whether it ran is unknown; the connection is closed (a half-open channel cannot be), and
    the next command reconnects.
    """
