"""The target's OS: what `uname -s` says, named once per host and run, in `run_started`."""

from __future__ import annotations

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
