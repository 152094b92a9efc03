"""kosmos against Debian's OpenSSH sshd on loopback: the runner, then the CLI end to end."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kosmos.hosts.connect import Connector
from kosmos.hosts.knowledge import KNOWLEDGE_PATHS, load_knowledge
from kosmos.hosts.runner import FileUnreadable
from kosmos.hosts.ssh import SSHRunner
from kosmos.hosts.target import parse_target
from kosmos.transcript import read_transcript
from tests.conftest import ROOT, run_cli
from tests.helpers import ScriptOperator, need, run_session
from tests.llmserver import Recorded, ScriptedLLM
from tests.sshd import Sshd, free_port, keygen, write_client_home

REMOTE_SKILL = """---
name: remote-probe
description: A skill that lives on the host only
---
## What I do
Print the host's name once, then finish.
"""


def json_lines(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


async def _until_gone(remote: Sshd, marker: str) -> list[str]:
    for _ in range(100):
        left = [line for line in remote.user_processes() if marker in line]
        if not left:
            return []
        await asyncio.sleep(0.05)
    return [line for line in remote.user_processes() if marker in line]


def _kill_sessions(remote: Sshd) -> int:
    """Kill the per-connection sshd processes of the test user (as a crash or a reboot would)."""
    need("ps", "procps")
    out = subprocess.run(
        ["ps", "-eo", "pid=,args="], capture_output=True, text=True, check=True
    ).stdout
    killed = 0
    for line in out.splitlines():
        pid, _, args = line.strip().partition(" ")
        if args.startswith(f"sshd: {remote.user}"):
            os.kill(int(pid), signal.SIGKILL)
            killed += 1
    return killed


def _kill_left(remote: Sshd, marker: str) -> None:
    """End, by pid, what a cut connection left running for the test user on the server."""
    for line in remote.user_processes():
        if marker in line:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(line.split()[0]), signal.SIGKILL)


@pytest.fixture
async def runner(remote: Sshd, ssh_home: Path) -> SSHRunner:
    write_client_home(ssh_home, remote)
    r = SSHRunner(parse_target("box"), connect_timeout=5)
    await r.connect()
    yield r
    await r.close()


# -- the runner over OpenSSH -------------------------------------------------------------------


async def test_alias_runs_as_the_configured_user(runner: SSHRunner, remote: Sshd) -> None:
    result = await runner.run("id -un; pwd; echo $PAGER", timeout=10)
    assert result.output.text() == f"{remote.user}\n{remote.remote_home}\ncat\n"
    assert result.exit_code == 0


async def test_commands_run_under_bash_and_the_first_one_says_so(runner: SSHRunner) -> None:
    # No probe before the first command: it asks for bash itself and reports the login shell
    # (the test user's is /bin/sh, dash) and the dialect, which the policy reads from then on.
    assert runner.dialect is None
    first = await runner.run("echo \"${BASH_VERSION:+bash}\" $'a\\tb'", timeout=5)
    assert (runner.login, runner.dialect) == ("sh", "bash")
    second = await runner.run("echo \"${BASH_VERSION:+bash}\" $'a\\tb'", timeout=5)
    assert first.output.text() == second.output.text() == "bash a\tb\n"


async def test_timeout_leaves_nothing_behind_on_the_server(runner: SSHRunner, remote: Sshd) -> None:
    # Markers of this test's own: another test of this module may run beside it (xdist).
    result = await runner.run("sleep 48011 & sleep 48012", timeout=0.5)
    assert result.timed_out
    assert await _until_gone(remote, "sleep 4801") == []


async def test_stdin_and_pager_commands_do_not_hang(runner: SSHRunner) -> None:
    result = await runner.run(
        "cat; read x || echo no-input; git --version >/dev/null 2>&1; man -P cat true >/dev/null 2>&1; echo done",
        timeout=10,
    )
    assert result.output.text() == "no-input\ndone\n"


async def test_sudo_without_a_terminal_fails_instead_of_waiting(runner: SSHRunner) -> None:
    need("sudo", "sudo")  # without it, "sudo: not found" would pass for the refusal
    result = await runner.run("sudo -k; sudo id", timeout=10)
    assert not result.timed_out
    assert result.exit_code != 0
    assert "sudo" in result.output.text()


async def test_ansi_and_invalid_utf8_over_openssh(runner: SSHRunner) -> None:
    result = await runner.run(r"printf '\033[1mbold\033[0m \377\376\n'", timeout=10)
    assert result.output.data() == b"\x1b[1mbold\x1b[0m \xff\xfe\n"


async def test_killed_sshd_mid_command_is_connection_lost_then_reconnect(
    runner: SSHRunner, remote: Sshd
) -> None:
    notes: list[str] = []
    runner.notify = notes.append

    def crash(text: str) -> None:
        if "started" in text:
            assert _kill_sessions(remote) >= 1

    result = await runner.run("echo started; sleep 4803", timeout=30, on_output=crash)
    assert result.connection_lost and result.exit_code is None
    assert result.output.text() == "started\n"
    again = await runner.run("echo back", timeout=10)
    assert again.output.text() == "back\n"
    assert len(notes) == 1 and "reconnected" in notes[0]
    _kill_left(remote, "sleep 4803")


async def test_a_knowledge_file_without_read_permission_is_passed_over_and_named(
    runner: SSHRunner, remote: Sshd
) -> None:
    """The test user is not root, so mode 000 keeps it out as it would on a real host."""
    remote.write_remote(".config/kosmos-panel/ai_system_promt.md", "home notes\n")
    remote.write_remote(".kosmos-panel/ai_system_promt.md", "secret notes\n").chmod(0)
    reason = "cannot be read (Permission denied); check its owner and mode"
    with pytest.raises(FileUnreadable) as caught:
        await runner.read_file(KNOWLEDGE_PATHS[0], timeout=5)
    assert (caught.value.path, caught.value.reason) == (KNOWLEDGE_PATHS[0], reason)
    skipped: list[FileUnreadable] = []
    knowledge = await load_knowledge(runner, timeout=5, on_skip=skipped.append)
    assert knowledge is not None
    assert (knowledge.path, knowledge.text) == (KNOWLEDGE_PATHS[2], "home notes\n")
    assert [(e.path, e.reason) for e in skipped] == [(KNOWLEDGE_PATHS[0], reason)]


def test_100_mb_of_output_costs_a_few_mb(remote: Sshd, home: Path) -> None:
    write_client_home(home, remote)
    script = textwrap.dedent(
        """
        import asyncio, resource
        from kosmos.hosts.ssh import SSHRunner
        from kosmos.hosts.target import parse_target

        async def main():
            runner = SSHRunner(parse_target("box"), connect_timeout=5)
            await runner.connect()
            before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            result = await runner.run(
                "head -c 100000000 /dev/zero | tr '\\\\0' x", timeout=120, on_output=lambda t: None
            )
            after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            await runner.close()
            print(result.bytes, len(result.output.data()), (after - before) // 1024)

        asyncio.run(main())
        """
    )
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": str(ROOT)}
    env.pop("SSH_AUTH_SOCK", None)
    proc = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    total, kept, grew_mb = (int(x) for x in proc.stdout.split())
    assert total == 100_000_000
    assert kept <= 1024 * 1024 + 100
    assert grew_mb < 32


# -- the CLI end to end ------------------------------------------------------------------------


def test_bundled_skill_over_ssh_with_knowledge(
    llm: ScriptedLLM, ssh_cli_env: dict, remote: Sshd, tmp_path: Path
) -> None:
    remote.write_remote(".config/kosmos-panel/ai_system_promt.md", "This box is the test rig.\n")
    llm.script("[CMD] id -un; hostname", "[DONE] looked")
    transcript = tmp_path / "run.jsonl"
    proc = run_cli(
        ["run", "system-overview", "--host", "box", "--non-interactive", "--yes", "--json",
         "--transcript", str(transcript)],
        env=ssh_cli_env,
        cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    first, second = llm.requests
    assert "--- System Context ---\nThis box is the test rig." in first.system
    assert second.last_user_text.startswith(f"Command output:\n{remote.user}\n")
    events = json_lines(proc.stdout)
    finished = [e for e in events if e["type"] == "command_finished"]
    assert finished[0]["host"] == "box" and finished[0]["exit_code"] == 0
    assert finished[0]["bytes"] > 0 and finished[0]["duration_s"] > 0
    kinds = [e.type for e in read_transcript(transcript)]
    assert "knowledge_loaded" in kinds


def test_a_remote_skill_runs_and_is_listed(
    llm: ScriptedLLM, ssh_cli_env: dict, remote: Sshd, tmp_path: Path
) -> None:
    remote.write_remote(".config/kosmos-panel/skills/remote-probe/SKILL.md", REMOTE_SKILL)
    listed = run_cli(["skills", "list", "--host", "box"], env=ssh_cli_env, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    line = next(x for x in listed.stdout.splitlines() if x.startswith("remote-probe"))
    assert "[remote box]" in line
    shown = run_cli(
        ["skills", "show", "remote-probe", "--host", "box"], env=ssh_cli_env, cwd=tmp_path
    )
    assert shown.returncode == 0, shown.stderr
    assert "Print the host's name once" in shown.stdout
    assert "[remote box]" in shown.stdout.splitlines()[1]  # marked as `list` marks it
    llm.script("[DONE] nothing to do")
    proc = run_cli(
        ["run", "remote-probe", "--host", "box", "--non-interactive", "--yes"],
        env=ssh_cli_env,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert "--- Active Skill: remote-probe ---\n## What I do\nPrint the host's name" in (
        llm.requests[0].system
    )


def test_unknown_host_key_in_ci_is_exit_6_and_runs_nothing(
    llm: ScriptedLLM, ssh_cli_env: dict, remote: Sshd, home: Path, tmp_path: Path
) -> None:
    (home / ".ssh" / "known_hosts").write_text("")
    llm.script("[CMD] touch ~/ran", "[DONE] x")
    proc = run_cli(
        ["run", "system-overview", "--host", "box", "--non-interactive", "--yes"],
        env=ssh_cli_env,
        cwd=tmp_path,
    )
    assert proc.returncode == 6
    fingerprint = subprocess.run(
        ["ssh-keygen", "-lf", str(remote.host_key_pub)], capture_output=True, text=True
    ).stdout.split()[1]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and fingerprint in lines[0] and "unknown host key" in lines[0]
    assert llm.requests == []
    assert not (remote.remote_home / "ran").exists()


def test_unknown_host_key_trusted_at_the_terminal(
    llm: ScriptedLLM, ssh_cli_env: dict, remote: Sshd, home: Path, tmp_path: Path
) -> None:
    (home / ".ssh" / "known_hosts").write_text("")
    llm.script("[DONE] fine")
    proc = run_cli(
        ["run", "system-overview", "--host", "box"], env=ssh_cli_env, cwd=tmp_path, stdin="y\n"
    )
    assert proc.returncode == 0, proc.stderr
    assert "key fingerprint is SHA256:" in proc.stderr
    assert (home / ".ssh" / "known_hosts").read_text() == remote.known_hosts_line()


def test_changed_host_key_is_refused_loudly(
    llm: ScriptedLLM, ssh_cli_env: dict, remote: Sshd, home: Path, tmp_path: Path
) -> None:
    keygen(tmp_path / "other")
    algorithm, data = (tmp_path / "other.pub").read_text().split()[:2]
    (home / ".ssh" / "known_hosts").write_text(f"[127.0.0.1]:{remote.port} {algorithm} {data}\n")
    proc = run_cli(
        ["run", "system-overview", "--host", "box"], env=ssh_cli_env, cwd=tmp_path, stdin="y\n"
    )
    assert proc.returncode == 6
    assert "HAS CHANGED" in proc.stderr
    assert llm.requests == []


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("nobody@box", "authentication failed for user nobody"),
        ("127.0.0.1:FREE", "connection refused at 127.0.0.1"),
    ],
)
def test_connection_failures_are_one_line_and_exit_6(
    ssh_cli_env: dict, tmp_path: Path, target: str, expected: str
) -> None:
    target = target.replace("FREE", str(free_port()))
    proc = run_cli(
        ["run", "system-overview", "--host", target, "--non-interactive", "--yes"],
        env=ssh_cli_env,
        cwd=tmp_path,
    )
    assert proc.returncode == 6
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], proc.stderr


def test_reconnect_between_steps_is_in_the_transcript(
    llm: ScriptedLLM, ssh_cli_env: dict, remote: Sshd, tmp_path: Path
) -> None:
    def crash_then_continue(_: Recorded) -> str:
        assert _kill_sessions(remote) >= 1
        return "[CMD] echo second"

    llm.script("[CMD] echo first", crash_then_continue, "[DONE] both ran")
    transcript = tmp_path / "run.jsonl"
    proc = run_cli(
        ["run", "system-overview", "--host", "box", "--non-interactive", "--yes",
         "--transcript", str(transcript)],
        env=ssh_cli_env,
        cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert llm.requests[-1].last_user_text.startswith("Command output:\nsecond\n")
    warnings = [e for e in read_transcript(transcript) if e.type == "warning"]
    assert any("reconnected" in w.message for w in warnings)


async def test_connection_lost_reaches_the_llm(
    llm: ScriptedLLM, remote: Sshd, ssh_home: Path
) -> None:
    write_client_home(ssh_home, remote)
    runner = SSHRunner(parse_target("box"), connect_timeout=5)
    await runner.connect()

    def crash_soon(_: Recorded) -> str:
        return "[CMD] echo started; sleep 4804"

    llm.script(crash_soon, "[DONE] noted")
    killer = asyncio.get_running_loop().call_later(1.0, _kill_sessions, remote)
    try:
        run = await run_session(llm.base_url, runner=runner, operator=ScriptOperator())
    finally:
        killer.cancel()
        await runner.close()
        _kill_left(remote, "sleep 4804")
    assert run.result.status == "done"
    assert "connection to the host was lost" in llm.requests[-1].last_user_text
    assert "exit status is unknown" in llm.requests[-1].last_user_text


def test_hosts_lists_aliases_and_checks_them(
    ssh_cli_env: dict, remote: Sshd, home: Path, tmp_path: Path
) -> None:
    with (home / ".ssh" / "config").open("a") as f:
        f.write(
            f"Host dead\n  HostName 127.0.0.1\n  Port {free_port()}\nHost *.internal\n  User x\n"
        )
    listed = run_cli(["hosts"], env=ssh_cli_env, cwd=tmp_path)
    assert listed.returncode == 0
    assert listed.stdout.split() == ["box", "dead"]
    checked = run_cli(["hosts", "--check"], env=ssh_cli_env, cwd=tmp_path)
    assert checked.returncode == 6
    rows = {line.split()[0]: line for line in checked.stdout.splitlines()}
    assert "yes" in rows["box"] and " ok " in rows["box"] and " ms" in rows["box"]
    assert "Debian" in rows["box"] or "Linux" in rows["box"] or "Ubuntu" in rows["box"]
    # The target OS as a run detects it (`uname -s`), then the distribution.
    assert " Linux · " in rows["box"]
    assert rows["dead"].split()[1] == "no"
    assert "\ndead: connection refused at 127.0.0.1" in checked.stdout


def test_proxy_jump_through_openssh(
    llm: ScriptedLLM, ssh_cli_env: dict, remote: Sshd, home: Path, tmp_path: Path
) -> None:
    with (home / ".ssh" / "config").open("a") as f:
        f.write(
            f"Host behind\n  HostName 127.0.0.1\n  Port {remote.port}\n  User {remote.user}\n"
            "  ProxyJump box\n"
        )
    llm.script("[CMD] echo $SSH_CONNECTION", "[DONE] ok")
    before = remote.log.read_text().count("Accepted publickey")
    proc = run_cli(
        ["run", "system-overview", "--host", "behind", "--non-interactive", "--yes"],
        env=ssh_cli_env,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    # Two logins: one to the jump host, one through it to the target.
    assert remote.log.read_text().count("Accepted publickey") - before == 2
    assert llm.requests[-1].last_user_text.startswith("Command output:\n127.0.0.1 ")


def _encrypt_key(home: Path, passphrase: str) -> None:
    key = home / ".ssh" / "id_ed25519"
    subprocess.run(
        ["ssh-keygen", "-q", "-p", "-a", "2", "-P", "", "-N", passphrase, "-f", str(key)],
        check=True,
        capture_output=True,
    )


def test_encrypted_key_passphrase_typed_in_line_mode(
    llm: ScriptedLLM, ssh_cli_env: dict, home: Path, tmp_path: Path
) -> None:
    _encrypt_key(home, "open sesame")
    llm.script("[DONE] in")
    transcript = tmp_path / "run.jsonl"
    proc = run_cli(
        ["run", "system-overview", "--host", "box", "--transcript", str(transcript)],
        env=ssh_cli_env,
        cwd=tmp_path,
        stdin="open sesame\n",
    )
    assert proc.returncode == 0, proc.stderr
    assert "Enter passphrase for key" in proc.stderr
    assert "open sesame" not in proc.stdout + proc.stderr + transcript.read_text()


def test_encrypted_key_in_ci_is_a_clear_error(
    llm: ScriptedLLM, ssh_cli_env: dict, home: Path, tmp_path: Path
) -> None:
    _encrypt_key(home, "open sesame")
    proc = run_cli(
        ["run", "system-overview", "--host", "box", "--non-interactive", "--yes"],
        env=ssh_cli_env,
        cwd=tmp_path,
    )
    assert proc.returncode == 6
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "is encrypted and no ssh-agent holds it" in lines[0]
    assert llm.requests == []


SUDO_PASSWORD = "canary-ssh-sudo-2718"


@pytest.fixture
def sudo_remote(remote: Sshd) -> Iterator[Sshd]:
    """The sshd's test user, for this test with a sudo that asks for its password."""
    need("sudo", "sudo")
    rule = Path(f"/etc/sudoers.d/{remote.user}")
    subprocess.run(["chpasswd"], input=f"{remote.user}:{SUDO_PASSWORD}\n", text=True, check=True)
    rule.write_text(f"{remote.user} ALL=(ALL) ALL\n")
    rule.chmod(0o440)
    try:
        yield remote
    finally:
        rule.unlink(missing_ok=True)
        subprocess.run(["usermod", "-p", "*", remote.user], check=True, capture_output=True)


async def test_sudo_password_goes_over_ssh_stdin_and_nowhere_else(
    llm: ScriptedLLM, sudo_remote: Sshd, ssh_home: Path, tmp_path: Path
) -> None:
    write_client_home(ssh_home, sudo_remote)
    runner = SSHRunner(parse_target("box"), connect_timeout=5)
    await runner.connect()
    llm.script("[CMD] sudo id -u", "[DONE] ok")
    operator = ScriptOperator(secrets=[SUDO_PASSWORD])
    transcript = tmp_path / "t.jsonl"
    try:
        run = await run_session(
            llm.base_url, runner=runner, operator=operator, transcript=transcript
        )
    finally:
        await runner.close()
    assert run.result.status == "done", run.result.message
    assert operator.secret_prompts == ["[sudo] password on box: "]
    assert llm.requests[1].last_user_text.startswith("Command output:\n0\n")
    assert SUDO_PASSWORD not in transcript.read_text()
    assert SUDO_PASSWORD not in json.dumps([r.body for r in llm.requests])


def test_sigterm_mid_command_over_ssh_ends_the_remote_tree(
    llm: ScriptedLLM, ssh_cli_env: dict, remote: Sshd, tmp_path: Path
) -> None:
    """SIGTERM to kosmos while a remote command runs: the tree on the server is gone, exit 130."""
    marker = "sleep 4343"
    llm.script(f"[CMD] {marker} & {marker}; echo never")
    transcript = tmp_path / "run.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "kosmos", "run", "system-overview", "--host", "box",
         "--non-interactive", "--yes", "--transcript", str(transcript)],
        env=ssh_cli_env, cwd=tmp_path, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        for _ in range(400):
            if len([x for x in remote.user_processes() if marker in x]) >= 2:
                break
            time.sleep(0.05)
        else:
            raise AssertionError(f"the command never started on the server: {proc.stderr}")
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert asyncio.run(_until_gone(remote, marker)) == []
    events = read_transcript(transcript)
    assert events[-1].type == "result" and events[-1].status == "aborted"


@pytest.mark.parametrize(
    ("config", "cipher"),
    [
        ("", "aes256-gcm@openssh.com"),
        (
            "Host box\n  Ciphers chacha20-poly1305@openssh.com,aes128-ctr\n",
            "chacha20-poly1305@openssh.com",
        ),
        ("Host box\n  Ciphers aes128-ctr\n", "aes128-ctr"),
    ],
)
async def test_aes_gcm_first_unless_ssh_config_names_the_ciphers(
    remote: Sshd, ssh_home: Path, config: str, cipher: str
) -> None:
    write_client_home(ssh_home, remote, extra_config=config)
    link = await Connector(parse_target("box"), connect_timeout=5, home=ssh_home).open()
    try:
        assert link.conn.get_extra_info("send_cipher") == cipher
        assert link.conn.get_extra_info("recv_cipher") == cipher
        assert (await link.conn.run("echo ok")).stdout == "ok\n"
    finally:
        await link.close()
