"""An in-process asyncssh server on loopback that runs real shell commands, for protocol tests.

Each exec request runs under `sh -c` in its own session (as sshd does), with HOME and the
working directory set to the server's home folder. Tests can drop every connection, refuse
keys, let it forward TCP so that it serves as a ProxyJump host, hold logins back (a slow
server), or make it take sessions but never answer their requests to run a command.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Awaitable
from dataclasses import dataclass, field
from pathlib import Path

import asyncssh


@dataclass
class ServerState:
    home: Path
    authorized: list[asyncssh.SSHKey]
    connections: list[asyncssh.SSHServerConnection] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    forwards: list[tuple[str, int]] = field(default_factory=list)
    users: list[str] = field(default_factory=list)
    processes: list[asyncio.subprocess.Process] = field(default_factory=list)
    # While set, an exec request is taken and never answered; `stalled` counts them.
    stall_exec: bool = False
    stalled: int = 0
    # While an Event, a login waits until it is set (a slow server); `login_waiting` says one is.
    login_gate: asyncio.Event | None = None
    login_waiting: asyncio.Event = field(default_factory=asyncio.Event)


class _Server(asyncssh.SSHServer):
    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.conn: asyncssh.SSHServerConnection | None = None

    def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
        self.conn = conn
        self.state.connections.append(conn)
        _stall_exec_when_asked(conn, self.state)

    def begin_auth(self, username: str) -> bool | Awaitable[bool]:
        self.state.users.append(username)
        gate = self.state.login_gate
        return True if gate is None else self._wait_at(gate)

    async def _wait_at(self, gate: asyncio.Event) -> bool:
        self.state.login_waiting.set()
        await gate.wait()
        return True

    def public_key_auth_supported(self) -> bool:
        return True

    def validate_public_key(self, username: str, key: asyncssh.SSHKey) -> bool:
        return key in self.state.authorized

    def connection_requested(self, dest_host: str, dest_port: int, orig_host: str, orig_port: int):
        self.state.forwards.append((dest_host, dest_port))
        return True


def _stall_exec_when_asked(conn: asyncssh.SSHServerConnection, state: ServerState) -> None:
    """While `state.stall_exec` is set, leave every exec request on `conn` unanswered.

    asyncssh answers a channel request with its handler's result and holds the answer back
    while the handler returns None; this handler returns None and never answers. asyncssh
    offers no public hook for it, so each session channel gets it as it is made.
    """
    make_channel = conn.create_server_channel

    def create_server_channel(*args: object, **kwargs: object) -> asyncssh.SSHServerChannel:
        channel = make_channel(*args, **kwargs)  # type: ignore[arg-type]
        process_exec = channel._process_exec_request

        def exec_request(packet: object) -> bool | None:
            if state.stall_exec:
                state.stalled += 1
                return None
            return process_exec(packet)  # type: ignore[arg-type]

        channel._process_exec_request = exec_request  # type: ignore[method-assign]
        return channel

    conn.create_server_channel = create_server_channel  # type: ignore[method-assign]


async def _run_process(state: ServerState, process: asyncssh.SSHServerProcess) -> None:
    command = process.command or "exec sh -i"
    state.commands.append(command)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(state.home)}
    local = await asyncio.create_subprocess_exec(
        "sh",
        "-c",
        command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=state.home,
        env=env,
        start_new_session=True,
    )
    state.processes.append(local)
    assert local.stdin is not None and local.stdout is not None and local.stderr is not None
    stdin, stdout, stderr = local.stdin, local.stdout, local.stderr

    async def feed_stdin() -> None:
        with contextlib.suppress(asyncssh.Error, OSError):
            while data := await process.stdin.read(65536):
                stdin.write(data)
                await stdin.drain()
        stdin.close()

    async def pump(reader: asyncio.StreamReader, writer: asyncssh.SSHWriter) -> None:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()

    feeder = asyncio.ensure_future(feed_stdin())
    try:
        await asyncio.gather(pump(stdout, process.stdout), pump(stderr, process.stderr))
        code = await local.wait()
        if code >= 0:
            process.exit(code)
        else:
            process.exit_with_signal(signal.Signals(-code).name.removeprefix("SIG"))
    except (asyncssh.Error, OSError, asyncio.CancelledError):
        # As sshd does when the client goes: the command's stdin closes, and nothing else
        # (kosmos's wrapper ends the command then). What outlives that is killed, so that no
        # test leaves processes behind.
        with contextlib.suppress(OSError):
            stdin.close()
        try:
            await asyncio.wait_for(asyncio.shield(local.wait()), 5)
        except (TimeoutError, asyncio.CancelledError):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(local.pid, signal.SIGKILL)
            await local.wait()
        # Read what is left to its end, so that the pipes close now and not at some later
        # garbage collection (an unclosed pipe is a ResourceWarning there).
        for reader in (stdout, stderr):
            with contextlib.suppress(Exception):
                await asyncio.wait_for(reader.read(), 2)
    finally:
        feeder.cancel()


class InProcessSSHServer:
    """Start with `await server.start()`; `target` is what kosmos connects to."""

    def __init__(self, home: Path, host_key: asyncssh.SSHKey, client_key: asyncssh.SSHKey) -> None:
        self.state = ServerState(home=home, authorized=[client_key.convert_to_public()])
        self.host_key = host_key
        self.port = 0
        self._acceptor: asyncssh.SSHAcceptor | None = None

    async def start(self, port: int = 0) -> InProcessSSHServer:
        """Listen on `port` (0: a free one; the old port again after `stop`, as a reboot)."""
        state = self.state
        self._acceptor = await asyncssh.listen(
            "127.0.0.1",
            port,
            server_host_keys=[self.host_key],
            server_factory=lambda: _Server(state),
            process_factory=lambda p: _run_process(state, p),
            encoding=None,
            allow_scp=False,
            keepalive_interval=0,
        )
        self.port = self._acceptor.sockets[0].getsockname()[1]
        return self

    def drop_all(self) -> None:
        """Cut every open connection at once, as a crashed server or a broken network would."""
        for conn in self.state.connections:
            conn.abort()
        self.state.connections.clear()

    async def stop(self) -> None:
        # Whatever a test left running ends with the server, as with a rebooted host.
        for proc in self.state.processes:
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
        self.drop_all()
        if self._acceptor is not None:
            self._acceptor.close()
            await self._acceptor.wait_closed()


def write_client_home(
    home: Path,
    server: InProcessSSHServer,
    client_key: asyncssh.SSHKey,
    *,
    alias: str = "inproc",
    trust: bool = True,
    extra_config: str = "",
) -> Path:
    """A HOME whose ~/.ssh holds the client key, an alias for the server and (if `trust`) its key."""
    ssh_dir = home / ".ssh"
    ssh_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    client_key.write_private_key(str(ssh_dir / "id_ed25519"))
    client_key.write_public_key(str(ssh_dir / "id_ed25519.pub"))
    (ssh_dir / "id_ed25519").chmod(0o600)
    (ssh_dir / "config").write_text(
        f"Host {alias}\n  HostName 127.0.0.1\n  Port {server.port}\n  User tester\n" + extra_config
    )
    line = ""
    if trust:
        algorithm, data = server.host_key.export_public_key("openssh").decode().split()[:2]
        line = f"[127.0.0.1]:{server.port} {algorithm} {data}\n"
    (ssh_dir / "known_hosts").write_text(line)
    return ssh_dir


class FreezableProxy:
    """A TCP relay to a port on loopback that can go silent without closing, like a dead link."""

    def __init__(self, port: int) -> None:
        self.target_port = port
        self.port = 0
        self.frozen = asyncio.Event()
        self._server: asyncio.AbstractServer | None = None
        self._writers: list[asyncio.StreamWriter] = []

    async def start(self) -> FreezableProxy:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def freeze(self) -> None:
        self.frozen.set()

    def thaw(self) -> None:
        """New connections are relayed again; those frozen stay silent for good."""
        self.frozen.clear()

    def cut(self) -> None:
        """Drop both ends at once, as a failed link or a rebooted router would."""
        for writer in self._writers:
            writer.transport.abort()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        self._writers += [writer, up_writer]

        async def copy(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError):
                while data := await src.read(65536):
                    if self.frozen.is_set():
                        await asyncio.Event().wait()  # swallow everything from now on
                    dst.write(data)
                    await dst.drain()

        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(copy(reader, up_writer), copy(up_reader, writer))

    async def stop(self) -> None:
        for writer in self._writers:
            writer.close()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
