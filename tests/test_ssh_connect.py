"""Connecting like `ssh` does, against in-process asyncssh servers: host keys, keys, failures."""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import struct
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import asyncssh
import pytest

from kosmos.hosts.connect import ConnectFailed, SSHConfigError
from kosmos.hosts.hostkeys import HostKeyChanged, HostKeyUnknown
from kosmos.hosts.passphrases import Passphrases
from kosmos.hosts.ssh import SSHRunner
from kosmos.hosts.target import parse_target
from tests.conftest import run_cli
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
    assert message.endswith("or run `kosmos run` in a terminal to be asked")
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
    # The question names the host as the operator typed it, with the address beside it.
    asked = (f"inproc (127.0.0.1:{ssh_server.port})", "ssh-ed25519", fingerprint)
    assert prompter.asked_keys == [asked]
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
    assert str(info.value).endswith("try: ssh -v inproc")


async def test_the_suggested_ssh_line_is_one_ssh_accepts(
    ssh_home: Path, ssh_server: InProcessSSHServer
) -> None:
    # `ssh user@host:port` is not how ssh takes a port: the hint must use -p.
    write_client_home(ssh_home, ssh_server, asyncssh.generate_private_key("ssh-ed25519"))
    with pytest.raises(ConnectFailed) as info:
        await runner_for(f"tester@127.0.0.1:{ssh_server.port}").connect()
    assert str(info.value).endswith(f"try: ssh -v -p {ssh_server.port} tester@127.0.0.1")


async def test_an_encrypted_key_asks_for_its_passphrase(
    ssh_home: Path, ssh_server: InProcessSSHServer, ssh_keys: Keys
) -> None:
    ssh_dir = write_client_home(ssh_home, ssh_server, ssh_keys[1])
    ssh_keys[1].write_private_key(
        str(ssh_dir / "id_ed25519"), passphrase="open sesame", rounds=2, ignore_few_rounds=True
    )
    prompter = Prompter(secrets=["wrong", "open sesame"])
    runner = runner_for(prompter=prompter)
    try:
        await runner.connect()
        assert (await runner.run("echo in", timeout=5)).exit_code == 0
    finally:
        await runner.close()
    assert len(prompter.asked_secrets) == 2
    assert str(ssh_dir / "id_ed25519") in prompter.asked_secrets[0]


async def test_a_typed_passphrase_unlocks_the_key_again_on_reconnect(
    ssh_home: Path, ssh_server: InProcessSSHServer, ssh_keys: Keys
) -> None:
    ssh_dir = write_client_home(ssh_home, ssh_server, ssh_keys[1])
    ssh_keys[1].write_private_key(
        str(ssh_dir / "id_ed25519"), passphrase="open sesame", rounds=2, ignore_few_rounds=True
    )
    prompter = Prompter(secrets=["open sesame"])
    passphrases = Passphrases()
    runner = runner_for(prompter=prompter, passphrases=passphrases)
    try:
        await runner.connect()
        await runner.close()
        # A command after the close connects anew: the key opens without a question.
        assert (await runner.run("echo again", timeout=5)).output.text() == "again\n"
    finally:
        await runner.close()
    assert len(prompter.asked_secrets) == 1
    assert "open sesame" not in repr(passphrases)
    # Another runner of the same run (a host connected again) shares what was typed.
    other = runner_for(prompter=Prompter(), passphrases=passphrases)
    try:
        await other.connect()
    finally:
        await other.close()
    # A key whose passphrase changed is asked about again, and the old one forgotten.
    ssh_keys[1].write_private_key(
        str(ssh_dir / "id_ed25519"), passphrase="new words", rounds=2, ignore_few_rounds=True
    )
    changed = Prompter(secrets=["new words"])
    third = runner_for(prompter=changed, passphrases=passphrases)
    try:
        await third.connect()
    finally:
        await third.close()
    assert len(changed.asked_secrets) == 1
    assert passphrases.get(ssh_dir / "id_ed25519") == "new words"


async def test_an_encrypted_key_without_a_terminal_is_a_clear_error(
    ssh_home: Path, ssh_server: InProcessSSHServer, ssh_keys: Keys
) -> None:
    ssh_dir = write_client_home(ssh_home, ssh_server, ssh_keys[1])
    ssh_keys[1].write_private_key(
        str(ssh_dir / "id_ed25519"), passphrase="open sesame", rounds=2, ignore_few_rounds=True
    )
    with pytest.raises(ConnectFailed, match="is encrypted and no ssh-agent holds it; run `ssh-add"):
        await runner_for().connect()
    # `kosmos hosts --check` shows the same line and never asks: the hint names what does.
    with pytest.raises(ConnectFailed, match="or run `kosmos run` in a terminal to type its"):
        await runner_for().connect()


async def test_refused_port(ssh_home: Path) -> None:
    with pytest.raises(ConnectFailed, match="connection refused at 127.0.0.1") as info:
        await runner_for(f"someone@127.0.0.1:{free_port()}").connect()
    assert info.value.reason == "refused"


async def test_unknown_host_name(ssh_home: Path) -> None:
    with pytest.raises(ConnectFailed, match="cannot resolve host name 'no-such-host.invalid'"):
        await runner_for("no-such-host.invalid").connect()


async def _tcp_server(handler) -> tuple[asyncio.AbstractServer, int]:
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
        with pytest.raises(ConnectFailed) as info:
            await runner_for(f"u@127.0.0.1:{port}").connect()
    assert info.value.reason == "not_ssh"
    assert str(info.value) == (
        f"u@127.0.0.1:{port}: 127.0.0.1:{port} closed the connection before any SSH greeting "
        f"(Connection lost): is {port} an SSH port? If it is, sshd there may be stopping or "
        "refusing new sessions (MaxStartups)"
    )


@pytest.mark.parametrize("how", ["close", "reset"])
async def test_an_sshd_that_goes_mid_handshake_is_said_to_have_closed_it(
    ssh_home: Path, how: str
) -> None:
    """sshd greets, reads the client's version, then its process is gone (a FIN, or an RST
    when it had unread data): the connection closed during the handshake, not 'not SSH'."""

    async def dying(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n")
        await writer.drain()
        await reader.readline()
        if how == "reset":
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.close()

    server, port = await _tcp_server(dying)
    async with server:
        with pytest.raises(ConnectFailed) as info:
            await runner_for(f"u@127.0.0.1:{port}").connect()
    message = str(info.value)
    assert message.startswith(
        f"u@127.0.0.1:{port}: the connection to 127.0.0.1:{port} closed during the SSH handshake ("
    )
    assert "the server had greeted as SSH-2.0-OpenSSH_9.2p1 Debian-2" in message
    assert "does not speak SSH" not in message and info.value.reason == "closed"


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
    assert prompter.asked_keys[0][0] == f"jump (127.0.0.1:{ssh_server.port})"
    assert ssh_server.state.forwards == []


# Lines asyncssh cannot parse, each on line 5 of the alias's block (see write_client_home).
BROKEN_CONFIG_LINES = {
    "a bad value": ("  Compression maybe\n", "Invalid Compression boolean value: maybe"),
    "an unclosed quote": ('  ProxyJump "jump\n', "No closing quotation"),
    "a Match condition asyncssh does not know": (
        "Match foo bar\n  User x\n",
        "Invalid match condition foo",
    ),
}


@pytest.mark.parametrize("case", BROKEN_CONFIG_LINES)
async def test_a_broken_ssh_config_line_is_an_error_naming_file_and_line(
    ssh_home: Path, ssh_server: InProcessSSHServer, ssh_keys: Keys, case: str
) -> None:
    line, problem = BROKEN_CONFIG_LINES[case]
    ssh_dir = write_client_home(ssh_home, ssh_server, ssh_keys[1], extra_config=line)
    config = ssh_dir / "config"
    if shutil.which("ssh"):  # OpenSSH refuses the file too
        judged = subprocess.run(["ssh", "-G", "-F", str(config), "inproc"], capture_output=True)
        assert judged.returncode == 255
    with pytest.raises(SSHConfigError) as info:
        await runner_for().connect()
    assert info.value.exit_code == 6
    assert str(info.value) == (
        f"inproc: {config} line 5: {problem}; fix that line "
        "(`ssh -G inproc` shows how OpenSSH reads the file)"
    )
    assert ssh_server.state.connections == []


@pytest.mark.parametrize("kind", ["a symbolic link loop", "a folder"])
async def test_an_ssh_config_that_cannot_be_read_is_an_error_not_ignored(
    ssh_home: Path, ssh_server: InProcessSSHServer, ssh_keys: Keys, kind: str
) -> None:
    """Read as missing, the alias would be looked up as a host name: "cannot resolve inproc"."""
    config = write_client_home(ssh_home, ssh_server, ssh_keys[1]) / "config"
    config.unlink()
    if kind == "a folder":
        config.mkdir()
        why = "Is a directory"
    else:
        config.symlink_to(config.name)
        why = "Too many levels of symbolic links"
    with pytest.raises(SSHConfigError) as info:
        await runner_for().connect()
    assert str(info.value) == (
        f"inproc: cannot read {config} ({why}); fix it or move it aside, kosmos connects only "
        "with the ssh_config it can read"
    )
    assert ssh_server.state.connections == []


def test_a_broken_ssh_config_ends_kosmos_run_with_one_line_and_exit_6(
    cli_env: dict, home: Path, tmp_path: Path
) -> None:
    (home / ".ssh").mkdir()
    config = home / ".ssh" / "config"
    config.write_text("Host box\n  HostName 127.0.0.1\n  Port abc\n  ProxyJump jump\n")
    proc = run_cli(
        ["run", "system-overview", "--host", "box", "--non-interactive", "--json"],
        env=cli_env,
        cwd=tmp_path,
    )
    assert proc.returncode == 6, proc.stderr
    message = f"box: {config} line 3: Invalid Port integer value: abc; fix that line"
    assert proc.stderr.splitlines() == [
        f"kosmos: {message} (`ssh -G box` shows how OpenSSH reads the file)"
    ]
    result = json.loads(proc.stdout.splitlines()[-1])
    assert (result["type"], result["status"], result["exit_code"]) == ("result", "error", 6)
