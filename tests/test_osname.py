"""The target's OS: what `uname -s` says, named once per host and run, in `run_started`."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from kosmos.events import RunStarted
from kosmos.hosts.local import LocalRunner
from kosmos.hosts.osname import os_name
from kosmos.hosts.ssh import SSHRunner
from kosmos.hosts.target import parse_target
from tests.helpers import run_session
from tests.llmserver import ScriptedLLM
from tests.sshd import Sshd, write_client_home


@pytest.mark.parametrize(
    ("uname", "name"),
    [
        ("Linux\n", "Linux"),
        ("Darwin", "macOS"),
        ("FreeBSD", "FreeBSD"),
        ("MINGW64_NT-10.0-19045", "Windows"),
        ("CYGWIN_NT-10.0", "Windows"),
        ("'uname' is not recognized as an internal or external command,", "Windows"),
        ("OpenBSD", "OpenBSD"),
        ("", None),
        ("sh: 1: uname: not found", None),
    ],
)
def test_os_names(uname: str, name: str | None) -> None:
    assert os_name(uname) == name


@pytest.fixture
async def box(remote: Sshd, ssh_home: Path) -> AsyncIterator[SSHRunner]:
    write_client_home(ssh_home, remote)
    runner = SSHRunner(parse_target("box"), connect_timeout=5)
    await runner.connect()
    try:
        yield runner
    finally:
        await runner.close()


async def test_run_started_names_the_os_over_openssh_and_locally(
    llm: ScriptedLLM, box: SSHRunner, tmp_path: Path
) -> None:
    llm.script("[DONE] ok", "[DONE] ok")
    run = await run_session(llm.base_url, runner=box)
    assert run.of(RunStarted)[0].os == "Linux"
    run = await run_session(llm.base_url, runner=LocalRunner(cwd=tmp_path))
    assert run.of(RunStarted)[0].os == "Linux"


async def test_the_knowledge_read_learns_the_os_in_the_same_round_trip(
    llm: ScriptedLLM, box: SSHRunner, remote: Sshd
) -> None:
    remote.write_remote(".config/kosmos-panel/ai_system_promt.md", "A rig.\n")

    def sessions() -> int:
        return remote.log.read_text().count("Starting session")

    before = sessions()
    llm.script("[CMD] true", "[DONE] ok")
    run = await run_session(llm.base_url, runner=box)
    # One session learns the knowledge and the OS, one runs the command: nothing else.
    assert sessions() - before == 2
    kinds = [e.type for e in run.events]
    assert kinds.index("run_started") < kinds.index("knowledge_loaded")
    assert run.of(RunStarted)[0].os == "Linux" and box.os == "Linux"
    assert "--- System Context ---\nA rig." in llm.requests[0].system


async def test_an_unreachable_host_still_starts_and_ends_the_run(
    llm: ScriptedLLM, ssh_home: Path
) -> None:
    with socket.socket() as s:  # a loopback port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    runner = SSHRunner(parse_target(f"nobody@127.0.0.1:{port}"), connect_timeout=5)
    try:
        run = await run_session(llm.base_url, runner=runner)
    finally:
        await runner.close()
    kinds = [e.type for e in run.events]
    assert kinds[0] == "run_started" and kinds[-1] == "result"
    assert run.result.status == "error" and run.result.exit_code == 6
    assert llm.requests == []
