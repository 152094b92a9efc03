"""kosmos's end of the local spawner (prelude/spawn.py): one process, started once, that starts
this machine's commands that run inside the kernel lock, and keeps nothing of them behind, even
when kosmos is killed.

Without it, each locked command on `local` started perl, which compiled the lock's prelude,
forked a watcher twice and exec'd the shell: some 4 ms of a command. The spawner forks, enters
the lock in the child and execs the shell; it watches every command's group from outside the
lock. (A command without the lock gains nothing from it: the wrapper script it starts in costs
what the spawner's round trip and fork do.)
"""

from __future__ import annotations

import asyncio
import contextlib
import marshal
import os
import signal
import socket
import subprocess
import sys
import threading
import weakref
from pathlib import Path
from typing import Any

from kosmos.errors import HostError

__all__ = ["Spawned", "Spawner", "spawner_works"]

PROGRAM = Path(__file__).resolve().parent / "prelude" / "spawn.py"
GONE = "the process that starts kosmos's local commands ended; the command was stopped"


def spawner_works() -> bool:
    """This machine can run the spawner: Linux, with pidfds (which the lock's kernel has)."""
    return sys.platform == "linux" and hasattr(os, "pidfd_open") and PROGRAM.is_file()


class Spawned:
    """One command the spawner started: its process group and, in time, its exit code."""

    def __init__(self, spawner: Spawner, pid: int) -> None:
        self.spawner = spawner
        self.pid = pid
        self.exited: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    def signal(self, sig: int) -> None:
        """Signal the command's whole process group."""
        self.spawner.send({"op": "kill", "pid": self.pid, "sig": int(sig)})

    def end(self) -> None:
        """The command is over: what is left of its group is ended and its process reaped."""
        self.spawner.send({"op": "end", "pid": self.pid})
        self.spawner.running.pop(self.pid, None)


class Spawner:
    """The client of one spawner process, bound to the event loop it was started in."""

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-S", str(PROGRAM), str(theirs.fileno())],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                # It needs nothing from kosmos's environment, which may hold a key.
                env={},
                # Out of kosmos's process group: a Ctrl-C or a kill of kosmos's group reaches
                # kosmos, and the spawner ends what it started once kosmos is gone.
                start_new_session=True,
            )
        except OSError:
            ours.close()
            raise
        finally:
            theirs.close()
        self.sock = ours
        ours.setblocking(False)
        self.ids = 0
        self.starting: dict[int, asyncio.Future[Spawned]] = {}
        self.running: dict[int, Spawned] = {}
        self.closed = False
        self.loop.add_reader(ours.fileno(), self._readable)
        # A runner dropped without close() still ends its spawner (which then exits).
        self._finalizer = weakref.finalize(self, _release, ours, self.proc)

    @property
    def usable(self) -> bool:
        """Still serving this event loop."""
        if self.closed or self.loop.is_closed():
            return False
        try:
            return asyncio.get_running_loop() is self.loop
        except RuntimeError:
            return False

    async def spawn(
        self,
        argv: list[str],
        *,
        env: dict[str, str],
        cwd: Path | None,
        spec: str | None,
        stdin: int,
        output: int,
        plain: bool = False,
    ) -> Spawned:
        """Start `argv` (its first word a path) in a session of its own, inside the lock SPEC
        describes, with `stdin` and `output` (both stdout and stderr). `plain`: argv's last
        word is plain words (hosts/wrapper.py), which the spawner may exec itself."""
        self.ids += 1
        started: asyncio.Future[Spawned] = self.loop.create_future()
        self.starting[self.ids] = started
        message = {
            "op": "run",
            "id": self.ids,
            "argv": argv,
            "env": env,
            "cwd": str(cwd) if cwd is not None else None,
            "spec": spec,
            "plain": plain,
        }
        self.send(message, fds=[stdin, output])
        return await started

    def send(self, message: dict[str, Any], fds: list[int] | None = None) -> None:
        if self.closed:
            raise HostError(GONE)
        data = marshal.dumps(message)
        try:
            # Small messages to a process that reads at once: the socket's buffer takes them.
            if fds:
                socket.send_fds(self.sock, [data], fds)
            else:
                self.sock.send(data)
        except OSError as e:
            self._gone()
            raise HostError(f"{GONE} ({e.strerror or e})") from None

    def _readable(self) -> None:
        while True:
            try:
                data = self.sock.recv(1 << 16)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                self._gone()
                return
            message = marshal.loads(data)
            op = message.get("op")
            if op == "started":
                # Known before any other message is read: its exit may come in the same read.
                spawned = Spawned(self, int(message["pid"]))
                self.running[spawned.pid] = spawned
                future = self.starting.pop(message["id"], None)
                if future is not None and not future.done():
                    future.set_result(spawned)
                else:  # its caller was cancelled: end it at once
                    spawned.end()
            elif op == "failed":
                future = self.starting.pop(message["id"], None)
                if future is not None and not future.done():
                    future.set_exception(HostError(f"cannot start the command: {message['error']}"))
            elif op == "exited":
                ended = self.running.get(int(message["pid"]))
                if ended is not None and not ended.exited.done():
                    ended.exited.set_result(int(message["code"]))

    def _gone(self) -> None:
        """The spawner ended unasked: what it started is ended here, and waits no more."""
        running = list(self.running.values())
        self.close()
        for spawned in running:
            # Its group is kosmos's to end now; the spawner can no longer.
            with contextlib.suppress(OSError):
                os.killpg(spawned.pid, signal.SIGKILL)

    def close(self) -> None:
        """End the spawner: what it still runs is ended (TERM, a second, KILL), then it exits."""
        if self.closed:
            return
        self.closed = True
        with contextlib.suppress(Exception):
            self.loop.remove_reader(self.sock.fileno())
        for future in self.starting.values():
            _fail(future)
        for spawned in self.running.values():
            _fail(spawned.exited)
        self.starting.clear()
        self.running.clear()
        self._finalizer()


def _fail(future: asyncio.Future[Any]) -> None:
    if not future.done():
        future.set_exception(HostError(GONE))
        future.exception()  # retrieved: nobody may be left to wait for it


def _release(sock: socket.socket, proc: subprocess.Popen[bytes]) -> None:
    """Close kosmos's end, which tells the spawner to end; it is reaped once it has."""
    sock.close()
    if proc.poll() is None:
        threading.Thread(target=proc.wait, name="kosmos-spawner-reaper", daemon=True).start()
