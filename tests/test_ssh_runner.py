"""The SSH runner against an in-process asyncssh server that runs real shell commands."""

from __future__ import annotations

from pathlib import Path

import asyncssh

from kosmos.hosts.ssh import SSHRunner
from kosmos.hosts.target import parse_target
from tests.sshserver import InProcessSSHServer, write_client_home


def runner_for(target: str = "inproc", **kw: object) -> SSHRunner:
    return SSHRunner(parse_target(target), connect_timeout=5, **kw)  # type: ignore[arg-type]


async def test_runs_a_command_and_reports_its_exit_status(
    ssh_home: Path,
    ssh_server: InProcessSSHServer,
    ssh_keys: tuple[asyncssh.SSHKey, asyncssh.SSHKey],
) -> None:
    write_client_home(ssh_home, ssh_server, ssh_keys[1])
    runner = runner_for()
    try:
        await runner.connect()
        chunks: list[str] = []
        result = await runner.run(
            "echo hello; echo oops >&2; exit 3", timeout=10, on_output=chunks.append
        )
    finally:
        await runner.close()
    assert result.exit_code == 3
    assert result.output.text() == "hello\noops\n"
    assert "".join(chunks) == "hello\noops\n"
    assert result.bytes == len("hello\noops\n")
