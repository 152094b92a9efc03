"""sudo: the password is asked masked, passed on stdin, and never reaches anything recorded.

The commands run as an unprivileged user whose sudo needs a password (created once, as
root, like the OpenSSH fixture's user); the runner is the local one, started through `su`.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from kosmos.engine.session import SessionOptions
from kosmos.engine.sudo import calls_sudo
from kosmos.events import CommandFinished, CommandStarted, dump
from kosmos.frontends.console import Console
from kosmos.frontends.headless import HeadlessOperator
from kosmos.frontends.line import LineOperator
from kosmos.frontends.render import TextRenderer
from kosmos.hosts.local import LocalRunner
from kosmos.hosts.runner import CommandResult, Lock, OnOutput
from tests.helpers import ScriptOperator, need, run_session
from tests.llmserver import ScriptedLLM

PASSWORD = "canary-sudo-pw-3141"


@pytest.fixture(scope="module")
def sudo_user() -> Iterator[str]:
    """A user of this test process whose sudo asks for PASSWORD; removed at the end.

    One per process, so that concurrent test runs on the same machine do not collide.
    """
    if os.geteuid() != 0:
        pytest.skip("needs root to create a user whose sudo asks a password")
    need("sudo", "sudo")
    need("useradd", "passwd")
    user = f"ksudo{os.getpid()}"
    rule = Path(f"/etc/sudoers.d/{user}")
    subprocess.run(["useradd", "-m", "-s", "/bin/sh", user], capture_output=True, check=True)
    try:
        subprocess.run(["chpasswd"], input=f"{user}:{PASSWORD}\n", text=True, check=True)
        rule.write_text(f"{user} ALL=(ALL) ALL\n")
        rule.chmod(0o440)
        yield user
    finally:
        rule.unlink(missing_ok=True)
        subprocess.run(["userdel", "-r", user], capture_output=True)


class AsUser(LocalRunner):
    """The local runner, with each command's shell started as another user."""

    def __init__(self, user: str) -> None:
        super().__init__(cwd=Path("/tmp"))
        self.user = user

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
        wrapped = f"exec su -s /bin/sh {self.user} -c {shlex.quote(command)}"
        return await super().run(
            wrapped, timeout=timeout, on_output=on_output, stop=stop, stdin=stdin, lock=lock
        )


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("sudo systemctl restart nginx", True),
        ("echo ok && sudo -u postgres psql -c 'select 1'", True),
        ("x=$(sudo cat /etc/shadow)", True),
        ("if true; then sudo id; fi", True),
        ("/usr/bin/sudo id", True),
        ("echo sudo", False),
        ("grep sudo /var/log/auth.log", False),
        ("echo 'sudo rm -rf /'", False),
        ("sudoedit", False),
    ],
)
def test_calls_sudo(command: str, expected: bool) -> None:
    assert calls_sudo(command) is expected


def _everything(run, llm: ScriptedLLM, transcript: Path) -> str:
    return "\n".join(
        [
            transcript.read_text(),
            json.dumps([r.body for r in llm.requests]),
            json.dumps([dump(e) for e in run.events]),
        ]
    )


async def test_password_is_asked_used_and_never_recorded(
    llm: ScriptedLLM, sudo_user: str, tmp_path: Path
) -> None:
    llm.script(
        "[CMD] sudo id -u && sudo -n id -un",
        f"[CMD] echo {PASSWORD}",  # even echoed back, it is masked
        "[CMD] sudo true",
        "[DONE] ok",
    )
    operator = ScriptOperator(secrets=[PASSWORD])
    transcript = tmp_path / "t.jsonl"
    run = await run_session(
        llm.base_url,
        operator=operator,
        runner=AsUser(sudo_user),
        transcript=transcript,
    )
    assert run.result.status == "done", run.result.message
    # Asked once for the run; both sudo calls of the first command used it.
    assert operator.secret_prompts == ["[sudo] password on local: "]
    assert llm.requests[1].last_user_text.startswith("Command output:\n0\nroot\n")
    assert llm.requests[2].last_user_text.startswith("Command output:\n[REDACTED]")
    assert llm.requests[3].last_user_text.startswith("Command output:\n(no output)")
    # The transcript shows the command as proposed, not kosmos's wrapper.
    assert run.of(CommandStarted)[0].command == "sudo id -u && sudo -n id -un"
    assert PASSWORD not in _everything(run, llm, transcript)


async def test_wrong_password_is_reported_and_asked_again(
    llm: ScriptedLLM, sudo_user: str, tmp_path: Path
) -> None:
    llm.script("[CMD] sudo id -u", "[CMD] sudo id -u", "[DONE] ok")
    operator = ScriptOperator(secrets=["not-the-password", PASSWORD])
    transcript = tmp_path / "t.jsonl"
    run = await run_session(
        llm.base_url, operator=operator, runner=AsUser(sudo_user), transcript=transcript
    )
    assert len(operator.secret_prompts) == 2
    assert "[sudo did not accept the password" in llm.requests[1].last_user_text
    assert llm.requests[2].last_user_text.startswith("Command output:\n0\n")
    # Line mode says it once, with what happens next.
    out, err = io.StringIO(), io.StringIO()
    render = TextRenderer(Console(out=out, err=err, stdin=io.StringIO(), color=False))
    for event in run.events:
        render(event)
    shown = out.getvalue() + err.getvalue()
    assert shown.count("did not accept the password") == 1, shown
    assert "the next sudo command asks for it again" in shown
    assert "not-the-password" not in _everything(run, llm, transcript)


async def test_declined_password_skips_the_command(llm: ScriptedLLM, sudo_user: str) -> None:
    llm.script("[CMD] sudo id -u", "[DONE] ok")
    run = await run_session(llm.base_url, operator=ScriptOperator(), runner=AsUser(sudo_user))
    assert run.of(CommandStarted) == []
    assert "needs a sudo password and the operator gave none" in llm.requests[1].last_user_text


async def test_headless_sudo_never_waits_and_the_llm_is_told(
    llm: ScriptedLLM, sudo_user: str
) -> None:
    llm.script("[CMD] sudo id -u", "[DONE] ok")
    operator = ScriptOperator(secrets=[PASSWORD])
    run = await run_session(
        llm.base_url,
        operator=operator,
        runner=AsUser(sudo_user),
        options=SessionOptions(non_interactive=True, policy="auto", command_timeout=20),
    )
    assert operator.secret_prompts == []
    finished = run.of(CommandFinished)[0]
    assert finished.exit_code != 0 and not finished.timed_out
    assert "sudo needs a password on this host" in llm.requests[1].last_user_text


async def test_sudo_without_password_needed_runs_directly(llm: ScriptedLLM) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root, whose sudo asks no password")
    need("sudo", "sudo")
    llm.script("[CMD] sudo id -u", "[DONE] ok")
    operator = ScriptOperator()
    await run_session(llm.base_url, operator=operator)
    assert operator.secret_prompts == []
    assert llm.requests[1].last_user_text.startswith("Command output:\n0\n")


async def test_line_mode_reads_the_password_without_echoing_it() -> None:
    out, err = io.StringIO(), io.StringIO()
    console = Console(out=out, err=err, stdin=io.StringIO(f"{PASSWORD}\n"), color=False)
    typed = await LineOperator(console).ask_secret("[sudo] password on local: ")
    assert typed == PASSWORD
    assert "[sudo] password on local: " in err.getvalue()
    assert PASSWORD not in out.getvalue() + err.getvalue()
    # Headless there is no one to ask.
    assert await HeadlessOperator().ask_secret("[sudo] password: ") is None
