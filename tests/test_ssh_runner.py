"""The SSH runner against an in-process asyncssh server that runs real shell commands."""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import asyncssh
import pytest

from kosmos.errors import HostError
from kosmos.hosts.connect import ConnectFailed
from kosmos.hosts.hostkeys import HostKeyChanged, HostKeyUnknown
from kosmos.hosts.knowledge import KnowledgeTimeout, load_knowledge
from kosmos.hosts.ssh import SSHRunner
from kosmos.hosts.target import parse_target
from tests.sshd import free_port
from tests.sshserver import InProcessSSHServer, write_client_home

Keys = tuple[asyncssh.SSHKey, asyncssh.SSHKey]


@dataclass
class Prompter:
    """A person at the HostPrompter seam, answering from lists."""

    trust: list[bool] = field(default_factory=list)
    secrets: list[str | None] = field(default_factory=list)
    asked_keys: list[tuple[str, str, str]] = field(default_factory=list)
    asked_secrets: list[str] = field(default_factory=list)

    async def confirm_host_key(self, host: str, key_type: str, fingerprint: str) -> bool:
        self.asked_keys.append((host, key_type, fingerprint))
        return self.trust.pop(0) if self.trust else False

    async def ask_secret(self, prompt: str) -> str | None:
        self.asked_secrets.append(prompt)
        return self.secrets.pop(0) if self.secrets else None


def runner_for(target: str = "inproc", **kw: object) -> SSHRunner:
    kw.setdefault("connect_timeout", 5)
    return SSHRunner(parse_target(target), **kw)  # type: ignore[arg-type]


@pytest.fixture
async def runner(
    ssh_home: Path, ssh_server: InProcessSSHServer, ssh_keys: Keys
) -> AsyncIterator[SSHRunner]:
    write_client_home(ssh_home, ssh_server, ssh_keys[1])
    r = runner_for()
    await r.connect()
    try:
        yield r
    finally:
        await r.close()


async def test_runs_a_command_and_reports_its_exit_status(runner: SSHRunner) -> None:
    chunks: list[str] = []
    result = await runner.run(
        "echo hello; echo oops >&2; exit 3", timeout=10, on_output=chunks.append
    )
    assert result.exit_code == 3
    assert result.output.text() == "hello\noops\n"
    assert "".join(chunks) == "hello\noops\n"
    assert result.bytes == len("hello\noops\n")
    assert result.duration_s > 0


async def test_reuses_one_connection_for_every_command(
    runner: SSHRunner, ssh_server: InProcessSSHServer
) -> None:
    for i in range(3):
        assert (await runner.run(f"echo {i}", timeout=10)).output.text() == f"{i}\n"
    assert len(ssh_server.state.connections) == 1


async def test_pager_variables_are_set_inside_the_command(runner: SSHRunner) -> None:
    result = await runner.run('echo "$PAGER/$GIT_PAGER/$MANPAGER/[$SYSTEMD_PAGER]"', timeout=10)
    assert result.output.text() == "cat/cat/cat/[]\n"


async def test_stdin_is_closed_so_reading_commands_end(runner: SSHRunner) -> None:
    result = await runner.run('cat; read x; echo "read=$?"', timeout=10)
    assert result.output.text() == "read=1\n"
    assert not result.timed_out


async def test_stdin_bytes_are_fed_then_closed(runner: SSHRunner) -> None:
    result = await runner.run("cat; echo end", timeout=10, stdin=b"s3cret\n")
    assert result.output.text() == "s3cret\nend\n"


async def test_ansi_and_invalid_utf8_arrive_as_bytes(runner: SSHRunner) -> None:
    chunks: list[str] = []
    result = await runner.run(
        r"printf '\033[31mred\033[0m \377\n'", timeout=10, on_output=chunks.append
    )
    assert result.output.data() == b"\x1b[31mred\x1b[0m \xff\n"
    assert "".join(chunks) == "\x1b[31mred\x1b[0m \ufffd\n"


def _server_pids(marker: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                args = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if marker in args and state != "Z":
                pids.append(int(entry.name))
    return pids


async def _gone(marker: str) -> list[int]:
    for _ in range(100):
        pids = _server_pids(marker)
        if not pids:
            return []
        await asyncio.sleep(0.05)
    return _server_pids(marker)


async def test_timeout_ends_the_whole_remote_tree_and_keeps_output(runner: SSHRunner) -> None:
    result = await runner.run("echo before; sleep 4701 & sleep 4702", timeout=0.5)
    assert result.timed_out and not result.cancelled
    assert result.output.text() == "before\n"
    assert result.exit_code is not None and result.exit_code > 128
    assert await _gone("sleep 470") == []


async def test_stop_ends_the_tree_as_a_cancel(runner: SSHRunner) -> None:
    stop = asyncio.Event()

    def seen(text: str) -> None:
        if "started" in text:
            stop.set()

    result = await runner.run(
        "echo started; sleep 4703 & sleep 4704", timeout=30, on_output=seen, stop=stop
    )
    assert result.cancelled and not result.timed_out
    assert await _gone("sleep 470") == []


async def test_cancelling_the_task_ends_the_tree(runner: SSHRunner) -> None:
    started = asyncio.Event()
    task = asyncio.ensure_future(
        runner.run("echo go; sleep 4705", timeout=30, on_output=lambda t: started.set())
    )
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await _gone("sleep 4705") == []


async def test_read_file_finds_home_and_relative_paths(
    runner: SSHRunner, ssh_server: InProcessSSHServer
) -> None:
    home = ssh_server.state.home
    (home / ".kosmos-panel").mkdir()
    (home / ".kosmos-panel" / "ai_system_promt.md").write_text("This host runs nginx.\n")
    assert await runner.read_file("./.kosmos-panel/ai_system_promt.md", timeout=5) == (
        "This host runs nginx.\n"
    )
    assert await runner.read_file("~/.kosmos-panel/ai_system_promt.md", timeout=5) == (
        "This host runs nginx.\n"
    )
    assert await runner.read_file("~/missing file.md", timeout=5) is None
    assert await runner.read_file("~/.kosmos-panel", timeout=5) is None
    knowledge = await load_knowledge(runner, timeout=5)
    assert knowledge is not None and knowledge.path == "./.kosmos-panel/ai_system_promt.md"


async def test_a_slow_knowledge_file_times_out(
    runner: SSHRunner, ssh_server: InProcessSSHServer
) -> None:
    folder = ssh_server.state.home / ".kosmos-panel"
    folder.mkdir()
    os.mkfifo(folder / "ai_system_promt.md")  # nobody writes: reading it never ends
    with pytest.raises(KnowledgeTimeout):
        await load_knowledge(runner, timeout=0.5)
    assert (await runner.run("echo still usable", timeout=5)).exit_code == 0


async def test_connection_lost_mid_command_is_reported_not_rerun(
    runner: SSHRunner, ssh_server: InProcessSSHServer
) -> None:
    def drop(text: str) -> None:
        if "started" in text:
            ssh_server.drop_all()

    result = await runner.run("echo started; sleep 4706", timeout=30, on_output=drop)
    assert result.connection_lost
    assert result.exit_code is None
    assert result.output.text() == "started\n"
    assert [c for c in ssh_server.state.commands if "sleep 4706" in c and "kill" not in c]
    assert len([c for c in ssh_server.state.commands if "sleep 4706" in c]) == 1


async def test_reconnects_once_between_commands_and_says_so(
    runner: SSHRunner, ssh_server: InProcessSSHServer
) -> None:
    notes: list[str] = []
    runner.notify = notes.append
    assert (await runner.run("echo one", timeout=5)).exit_code == 0
    ssh_server.drop_all()
    assert runner._link is not None
    await asyncio.wait_for(runner._link.client.closed.wait(), 5)
    result = await runner.run("echo two", timeout=5)
    assert result.output.text() == "two\n"
    assert len(notes) == 1 and "reconnected" in notes[0]


async def test_a_failed_reconnect_is_a_host_error(
    runner: SSHRunner, ssh_server: InProcessSSHServer
) -> None:
    await ssh_server.stop()
    assert runner._link is not None
    await asyncio.wait_for(runner._link.client.closed.wait(), 5)
    with pytest.raises(HostError, match="connection was lost .* reconnecting failed"):
        await runner.run("echo two", timeout=5)


# -- connecting -------------------------------------------------------------------------------


async def test_unknown_host_key_stops_before_anything_runs(
    ssh_home: Path, ssh_server: InProcessSSHServer, ssh_keys: Keys
) -> None:
    write_client_home(ssh_home, ssh_server, ssh_keys[1], trust=False)
    with pytest.raises(HostKeyUnknown) as info:
        await runner_for().connect()
    message = str(info.value)
    assert ssh_server.host_key.get_fingerprint("sha256") in message
    assert f"[127.0.0.1]:{ssh_server.port}" in message
    assert "ssh-keyscan" in message
    assert ssh_server.state.commands == []
    assert (ssh_home / ".ssh" / "known_hosts").read_text() == ""


async def test_a_trusted_new_key_is_added_to_known_hosts(
    ssh_home: Path, ssh_server: InProcessSSHServer, ssh_keys: Keys
) -> None:
    write_client_home(ssh_home, ssh_server, ssh_keys[1], trust=False)
    prompter = Prompter(trust=[True])
    runner = runner_for(prompter=prompter)
    try:
        await runner.connect()
        assert (await runner.run("echo in", timeout=5)).output.text() == "in\n"
    finally:
        await runner.close()
    fingerprint = ssh_server.host_key.get_fingerprint("sha256")
    assert prompter.asked_keys == [(f"[127.0.0.1]:{ssh_server.port}", "ssh-ed25519", fingerprint)]
    known = (ssh_home / ".ssh" / "known_hosts").read_text()
    assert known.startswith(f"[127.0.0.1]:{ssh_server.port} ssh-ed25519 ")
    # Trusted now: a second connection asks nothing.
    again = runner_for(prompter=Prompter())
    await again.connect()
    await again.close()


async def test_a_declined_key_is_not_added(
    ssh_home: Path, ssh_server: InProcessSSHServer, ssh_keys: Keys
) -> None:
    write_client_home(ssh_home, ssh_server, ssh_keys[1], trust=False)
    with pytest.raises(HostKeyUnknown, match="not trusted"):
        await runner_for(prompter=Prompter(trust=[False])).connect()
    assert (ssh_home / ".ssh" / "known_hosts").read_text() == ""
    assert ssh_server.state.commands == []


async def test_a_changed_key_is_refused_even_when_a_person_would_trust_it(
    ssh_home: Path, ssh_server: InProcessSSHServer, ssh_keys: Keys
) -> None:
    write_client_home(ssh_home, ssh_server, ssh_keys[1], trust=False)
    other = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode().split()
    (ssh_home / ".ssh" / "known_hosts").write_text(
        f"[127.0.0.1]:{ssh_server.port} {other[0]} {other[1]}\n"
    )
    prompter = Prompter(trust=[True])
    with pytest.raises(HostKeyChanged) as info:
        await runner_for(prompter=prompter).connect()
    assert "HAS CHANGED" in str(info.value)
    assert "ssh-keygen -R" in str(info.value)
    assert prompter.asked_keys == []
    assert ssh_server.state.commands == []


async def test_authentication_failure_names_the_user_and_what_to_check(
    ssh_home: Path, ssh_server: InProcessSSHServer
) -> None:
    stranger = asyncssh.generate_private_key("ssh-ed25519")
    write_client_home(ssh_home, ssh_server, stranger)
    with pytest.raises(ConnectFailed) as info:
        await runner_for().connect()
    assert info.value.reason == "auth"
    assert info.value.exit_code == 6
    assert "authentication failed for user tester" in str(info.value)


async def test_an_encrypted_key_asks_for_its_passphrase(
    ssh_home: Path, ssh_server: InProcessSSHServer, ssh_keys: Keys
) -> None:
    ssh_dir = write_client_home(ssh_home, ssh_server, ssh_keys[1])
    ssh_keys[1].write_private_key(str(ssh_dir / "id_ed25519"), passphrase="open sesame")
    prompter = Prompter(secrets=["wrong", "open sesame"])
    runner = runner_for(prompter=prompter)
    try:
        await runner.connect()
        assert (await runner.run("echo in", timeout=5)).exit_code == 0
    finally:
        await runner.close()
    assert len(prompter.asked_secrets) == 2
    assert str(ssh_dir / "id_ed25519") in prompter.asked_secrets[0]


async def test_an_encrypted_key_without_a_terminal_is_a_clear_error(
    ssh_home: Path, ssh_server: InProcessSSHServer, ssh_keys: Keys
) -> None:
    ssh_dir = write_client_home(ssh_home, ssh_server, ssh_keys[1])
    ssh_keys[1].write_private_key(str(ssh_dir / "id_ed25519"), passphrase="open sesame")
    with pytest.raises(ConnectFailed, match="is encrypted and no ssh-agent holds it; run `ssh-add"):
        await runner_for().connect()


async def test_refused_port(ssh_home: Path) -> None:
    with pytest.raises(ConnectFailed, match="connection refused at 127.0.0.1") as info:
        await runner_for(f"someone@127.0.0.1:{free_port()}").connect()
    assert info.value.reason == "refused"


async def test_unknown_host_name(ssh_home: Path) -> None:
    with pytest.raises(ConnectFailed, match="cannot resolve host name 'no-such-host.invalid'"):
        await runner_for("no-such-host.invalid").connect()


async def _tcp_server(handler) -> tuple[asyncio.AbstractServer, int]:  # noqa: ANN001
    server = await asyncio.start_server(handler, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


async def test_a_port_that_is_not_ssh(ssh_home: Path) -> None:
    async def http(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readline()
        writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        writer.close()

    server, port = await _tcp_server(http)
    async with server:
        with pytest.raises(ConnectFailed, match="does not speak SSH") as info:
            await runner_for(f"u@127.0.0.1:{port}").connect()
    assert info.value.reason == "not_ssh"


async def test_a_server_that_never_answers_times_out(ssh_home: Path) -> None:
    held: list[asyncio.StreamWriter] = []

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)

    server, port = await _tcp_server(silent)
    async with server:
        with pytest.raises(ConnectFailed, match=r"no answer from 127.0.0.1:\d+ within 0.5 s"):
            await runner_for(f"u@127.0.0.1:{port}", connect_timeout=0.5).connect()
        for writer in held:
            writer.close()


async def test_proxy_jump_goes_through_the_jump_host(
    ssh_home: Path, ssh_server: InProcessSSHServer, ssh_keys: Keys, tmp_path: Path
) -> None:
    host_key, client_key = ssh_keys
    (tmp_path / "target-home").mkdir()
    target = await InProcessSSHServer(tmp_path / "target-home", host_key, client_key).start()
    try:
        ssh_dir = write_client_home(
            ssh_home,
            ssh_server,
            client_key,
            alias="jump",
            extra_config=(
                f"Host behind\n  HostName 127.0.0.1\n  Port {target.port}\n  User tester\n"
                "  ProxyJump jump\n"
            ),
        )
        algorithm, data = host_key.export_public_key().decode().split()[:2]
        with (ssh_dir / "known_hosts").open("a") as f:
            f.write(f"[127.0.0.1]:{target.port} {algorithm} {data}\n")
        runner = runner_for("behind")
        try:
            result = await runner.run("echo through", timeout=5)
        finally:
            await runner.close()
        assert result.output.text() == "through\n"
        assert ssh_server.state.forwards == [("127.0.0.1", target.port)]
        assert ssh_server.state.commands == []
        assert any("echo through" in c for c in target.state.commands)
    finally:
        await target.stop()


async def test_an_unknown_jump_host_key_names_the_jump_host(
    ssh_home: Path, ssh_server: InProcessSSHServer, ssh_keys: Keys
) -> None:
    write_client_home(
        ssh_home,
        ssh_server,
        ssh_keys[1],
        alias="jump",
        trust=False,
        extra_config="Host behind\n  HostName 127.0.0.1\n  Port 9\n  ProxyJump jump\n",
    )
    prompter = Prompter(trust=[False])
    with pytest.raises(HostKeyUnknown):
        await runner_for("behind", prompter=prompter).connect()
    assert prompter.asked_keys[0][0] == f"[127.0.0.1]:{ssh_server.port}"
    assert ssh_server.state.forwards == []


def test_free_port_is_really_closed() -> None:
    port = free_port()
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        pass
