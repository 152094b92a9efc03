"""Shared fixtures: a scripted LLM server on loopback, a clean HOME, a way to run the CLI."""

from __future__ import annotations

import contextlib
import os
import pty
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from kosmos.hosts.sshlib import asyncssh

import pytest

from tests.llmserver import ScriptedLLM
from tests.sshd import Sshd, SshdUnavailable, start_sshd, write_client_home
from tests.sshserver import InProcessSSHServer
from tests.tmux import terminal  # noqa: F401 - a fixture: a real terminal (tmux)

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    server = ScriptedLLM().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def cli_env(home: Path, llm: ScriptedLLM) -> dict[str, str]:
    """An environment for the CLI: its own HOME, the scripted LLM, no keys or configs of ours."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("KOSMOS_", "OPENAI_", "GEMINI_", "AI_", "XDG_"))
    }
    env.update(
        HOME=str(home),
        AI_KOSMOS_MODEL_BASE_URL=llm.base_url,
        PYTHONPATH=str(ROOT),
        PYTHONUNBUFFERED="1",
    )
    return env


def run_cli(
    args: list[str],
    *,
    env: dict[str, str],
    cwd: Path,
    stdin: str | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """Run `python -m kosmos ARGS` as a user would, and collect what it printed."""
    return subprocess.run(
        [sys.executable, "-m", "kosmos", *args],
        env=env,
        cwd=cwd,
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@contextlib.contextmanager
def pseudo_terminal() -> Iterator[tuple[int, int]]:
    """(master, slave) of a new pseudo-terminal. The slave is standard input for a CLI that must
    see a person at a terminal (without one, `kosmos run` is non-interactive); what the test
    writes to the master, the CLI reads as typed."""
    master, slave = pty.openpty()
    try:
        yield master, slave
    finally:
        for fd in (master, slave):
            with contextlib.suppress(OSError):
                os.close(fd)


# -- SSH: Debian's sshd (one per test worker) and an in-process asyncssh server -----------------


def _serve(
    request: pytest.FixtureRequest, *, certificates: bool = False, bare: bool = False
) -> Iterator[Sshd]:
    worker = getattr(request.config, "workerinput", {}).get("workerid", "main")
    try:
        server = start_sshd(worker, certificates=certificates, bare=bare)
    except SshdUnavailable as e:
        if os.environ.get("KOSMOS_REQUIRE_SSHD") == "1":
            pytest.fail(f"KOSMOS_REQUIRE_SSHD=1 but sshd cannot run: {e}")
        pytest.skip(str(e))
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(server.root, ignore_errors=True)


@pytest.fixture(scope="session")
def sshd(request: pytest.FixtureRequest) -> Iterator[Sshd]:
    """OpenSSH's sshd on loopback; CI sets KOSMOS_REQUIRE_SSHD=1 so these tests never skip."""
    yield from _serve(request, certificates=False)


@pytest.fixture(scope="session")
def cert_sshd(request: pytest.FixtureRequest) -> Iterator[Sshd]:
    """A second sshd on loopback that proves itself with a host certificate (`HostCertificate`)
    and lets the client in only with a user certificate (`TrustedUserCAKeys`)."""
    yield from _serve(request, certificates=True)


@pytest.fixture(scope="session")
def bare_sshd(request: pytest.FixtureRequest) -> Iterator[Sshd]:
    """A third sshd on loopback with no sftp subsystem, which takes any variable a client sends
    (`AcceptEnv *`)."""
    yield from _serve(request, bare=True)


@pytest.fixture
def remote(sshd: Sshd) -> Iterator[Sshd]:
    """The sshd, with the test user's home cleaned after the test."""
    try:
        yield sshd
    finally:
        sshd.clean_remote()


@pytest.fixture
def ssh_home(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """HOME for in-process SSH clients: asyncssh reads ~/.ssh from it; no ssh-agent."""
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    return home


@pytest.fixture(scope="session")
def ssh_keys() -> tuple[asyncssh.SSHKey, asyncssh.SSHKey]:
    """(host key, client key) for the in-process server."""
    return (
        asyncssh.generate_private_key("ssh-ed25519"),
        asyncssh.generate_private_key("ssh-ed25519"),
    )


@pytest.fixture
async def ssh_server(
    tmp_path: Path, ssh_keys: tuple[asyncssh.SSHKey, asyncssh.SSHKey]
) -> AsyncIterator[InProcessSSHServer]:
    host_key, client_key = ssh_keys
    server_home = tmp_path / "server-home"
    server_home.mkdir()
    server = await InProcessSSHServer(server_home, host_key, client_key).start()
    try:
        yield server
    finally:
        await server.stop()


# -- kosmos chat: the example services and the chat's log -------------------------------------


@pytest.fixture
def services() -> Iterator[Any]:
    """examples/chat/services.py on a loopback port: both of seed 002's HTTP services."""
    from tests.chatkit import load_services_module

    server = load_services_module().ExampleServices().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def log_path(tmp_path: Path) -> Path:
    return tmp_path / "chat.log"


@pytest.fixture
def ssh_cli_env(cli_env: dict, home: Path, remote: Sshd) -> dict:
    write_client_home(home, remote)
    env = dict(cli_env)
    env.pop("SSH_AUTH_SOCK", None)
    return env
