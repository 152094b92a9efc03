"""Which host keys kosmos trusts, judged by OpenSSH: known_hosts files and StrictHostKeyChecking.

Every case runs `kosmos run --non-interactive` and asks `ssh -o BatchMode=yes` the same
question with the same config and files (tests/trusthelpers.py); both must give one answer.
"""

from __future__ import annotations

import pwd
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kosmos.hosts.connect import SSHConfigError
from kosmos.hosts.ssh import SSHRunner
from kosmos.hosts.target import parse_target
from tests.llmserver import ScriptedLLM
from tests.sshd import Sshd
from tests.trusthelpers import agree, client_home, kosmos, openssh, other_key_line


@pytest.fixture
def env(cli_env: dict) -> dict:
    env = dict(cli_env)
    env.pop("SSH_AUTH_SOCK", None)
    return env


def fingerprint(server: Sshd) -> str:
    out = subprocess.run(
        ["ssh-keygen", "-lf", str(server.host_key_pub)], capture_output=True, text=True
    )
    return out.stdout.split()[1]


# -- the cases kosmos used to get wrong ---------------------------------------------------------


def test_a_user_known_hosts_file_without_the_key_is_refused_though_the_default_has_it(
    llm: ScriptedLLM, env: dict, remote: Sshd, home: Path, tmp_path: Path
) -> None:
    other = home / "other_known_hosts"
    other.write_text("")
    client_home(
        home, remote, known=remote.known_hosts_line(), extra=f"  UserKnownHostsFile {other}\n"
    )
    run = kosmos(llm, env, tmp_path)
    assert agree(run, openssh(home)) is False
    assert run.proc.returncode == 6
    assert len(run.error_lines) == 1 and "unknown host key" in run.error_lines[0]
    assert llm.requests == []


def test_a_user_known_hosts_file_with_another_key_is_a_changed_key(
    llm: ScriptedLLM, env: dict, remote: Sshd, home: Path, tmp_path: Path
) -> None:
    other = home / "other_known_hosts"
    other.write_text(other_key_line(remote, tmp_path))
    client_home(
        home, remote, known=remote.known_hosts_line(), extra=f"  UserKnownHostsFile {other}\n"
    )
    run = kosmos(llm, env, tmp_path)
    assert agree(run, openssh(home)) is False
    assert run.proc.returncode == 6
    assert len(run.error_lines) == 1
    assert "HAS CHANGED" in run.error_lines[0] and f"{other} holds another" in run.error_lines[0]
    assert f"ssh-keygen -R '[127.0.0.1]:{remote.port}' -f {other}" in run.error_lines[0]


def test_accept_new_adds_a_new_key_headless_as_ssh_does(
    llm: ScriptedLLM, env: dict, remote: Sshd, home: Path, tmp_path: Path
) -> None:
    ssh_dir = client_home(home, remote, extra="  StrictHostKeyChecking accept-new\n")
    known = ssh_dir / "known_hosts"
    judge = openssh(home)
    added_by_ssh = known.read_text()
    known.write_text("")
    run = kosmos(llm, env, tmp_path)
    assert agree(run, judge) is True
    assert known.read_text() == added_by_ssh == remote.known_hosts_line()
    notice = f"[127.0.0.1]:{remote.port}: permanently added host key ssh-ed25519"
    assert notice in run.proc.stderr
    # The connect happens before the run starts; its notice still reaches the transcript.
    assert any(w.startswith(notice) and str(known) in w for w in run.warnings())
    # Known now: the next run adds nothing and says nothing.
    again = kosmos(llm, env, tmp_path)
    assert again.connected and known.read_text() == remote.known_hosts_line()
    assert again.warnings() == []


def test_a_revoked_key_is_refused_naming_the_file(
    llm: ScriptedLLM, env: dict, remote: Sshd, home: Path, tmp_path: Path
) -> None:
    algorithm, data = remote.host_key_pub.read_text().split()[:2]
    ssh_dir = client_home(
        home, remote, known=remote.known_hosts_line() + f"@revoked * {algorithm} {data}\n"
    )
    run = kosmos(llm, env, tmp_path)
    assert agree(run, openssh(home)) is False
    assert run.proc.returncode == 6
    assert run.error_lines == [
        f"kosmos: [127.0.0.1]:{remote.port}: its host key {algorithm} {fingerprint(remote)} is "
        f"marked @revoked in {ssh_dir / 'known_hosts'}; kosmos refuses to connect and ran "
        "nothing. The key may be stolen: ask the host's administrator"
    ]


# -- known_hosts files as ssh reads them --------------------------------------------------------


def test_hashed_entries_are_matched(
    llm: ScriptedLLM, env: dict, remote: Sshd, home: Path, tmp_path: Path
) -> None:
    ssh_dir = client_home(home, remote, known=remote.known_hosts_line())
    known = ssh_dir / "known_hosts"
    subprocess.run(["ssh-keygen", "-q", "-H", "-f", str(known)], check=True, capture_output=True)
    assert known.read_text().startswith("|1|")
    assert agree(kosmos(llm, env, tmp_path), openssh(home)) is True


def test_hash_known_hosts_writes_a_hashed_entry_that_ssh_finds(
    llm: ScriptedLLM, env: dict, remote: Sshd, home: Path, tmp_path: Path
) -> None:
    ssh_dir = client_home(
        home, remote, extra="  StrictHostKeyChecking accept-new\n  HashKnownHosts yes\n"
    )
    known = ssh_dir / "known_hosts"
    run = kosmos(llm, env, tmp_path)
    assert run.connected, run.proc.stderr
    entry = known.read_text()
    assert entry.startswith("|1|") and f"{remote.port}" not in entry
    found = subprocess.run(
        ["ssh-keygen", "-F", f"[127.0.0.1]:{remote.port}", "-f", str(known)],
        capture_output=True,
        text=True,
    )
    assert found.returncode == 0 and entry.strip() in found.stdout
    # ssh, strict now, trusts what kosmos wrote.
    (ssh_dir / "config").write_text((ssh_dir / "config").read_text().replace("accept-new", "yes"))
    assert openssh(home).returncode == 0


def test_a_malformed_line_is_skipped_with_a_warning_and_a_good_line_still_works(
    llm: ScriptedLLM, env: dict, remote: Sshd, home: Path, tmp_path: Path
) -> None:
    ssh_dir = client_home(
        home,
        remote,
        known="# kept\n[127.0.0.1]:1 ssh-ed25519 not-base64!\n" + remote.known_hosts_line(),
    )
    run = kosmos(llm, env, tmp_path)
    assert agree(run, openssh(home)) is True
    warning = (
        f"{ssh_dir / 'known_hosts'}:2: skipped, not a known_hosts entry: its key cannot be read"
    )
    assert warning in run.proc.stderr
    assert warning in run.warnings()


@pytest.mark.parametrize("kind", ["a folder", "a symbolic link loop"])
def test_an_unreadable_known_hosts_file_is_exit_6_naming_it(
    llm: ScriptedLLM, env: dict, remote: Sshd, home: Path, tmp_path: Path, kind: str
) -> None:
    """ssh passes over a known_hosts it cannot read; kosmos will not judge a key without it.
    Here the unreadable file is the only one, so ssh refuses too."""
    known = client_home(home, remote) / "known_hosts"
    known.unlink()
    if kind == "a folder":
        known.mkdir()
        why = "Is a directory"
    else:
        known.symlink_to(known.name)
        why = "Too many levels of symbolic links"
    run = kosmos(llm, env, tmp_path)
    assert agree(run, openssh(home)) is False
    assert run.proc.returncode == 6
    assert run.error_lines == [
        f"kosmos: cannot read known_hosts file {known} ({why}); fix its owner and mode or move "
        "it aside: kosmos judges host keys only with every known_hosts file it is told to use"
    ]


def test_several_user_files_with_tokens_and_a_global_file(
    llm: ScriptedLLM, env: dict, remote: Sshd, home: Path, tmp_path: Path
) -> None:
    local = pwd.getpwuid(__import__("os").getuid()).pw_name
    named = home / "kh" / f"box-127.0.0.1-{remote.port}-{remote.user}-{local}"
    named.parent.mkdir()
    named.write_text(remote.known_hosts_line())
    client_home(
        home, remote, extra=f"  UserKnownHostsFile {home}/missing {home}/kh/%n-%h-%p-%r-%u\n"
    )
    assert agree(kosmos(llm, env, tmp_path), openssh(home)) is True
    # The key only in a GlobalKnownHostsFile: trusted, by both.
    named.unlink()
    system = home / "ssh_known_hosts"
    system.write_text(remote.known_hosts_line())
    client_home(home, remote, extra=f"  GlobalKnownHostsFile {home}/none-here {system}\n")
    assert agree(kosmos(llm, env, tmp_path), openssh(home)) is True


def test_a_key_listed_without_the_port_vouches_for_the_host_on_any_port(
    llm: ScriptedLLM, env: dict, remote: Sshd, home: Path, tmp_path: Path
) -> None:
    """ssh looks a host up as `[host]:port`, then (knowing no key of its type) as `host`."""
    line = remote.known_hosts_line().replace(f"[127.0.0.1]:{remote.port}", "127.0.0.1")
    client_home(home, remote, known=line)
    assert agree(kosmos(llm, env, tmp_path), openssh(home)) is True


def test_user_known_hosts_file_none_refuses_a_new_key_even_under_accept_new(
    llm: ScriptedLLM, env: dict, remote: Sshd, home: Path, tmp_path: Path
) -> None:
    client_home(
        home, remote, extra="  UserKnownHostsFile none\n  StrictHostKeyChecking accept-new\n"
    )
    run = kosmos(llm, env, tmp_path)
    assert agree(run, openssh(home)) is False
    assert len(run.error_lines) == 1 and "UserKnownHostsFile is none" in run.error_lines[0]


def test_tilde_and_percent_d_are_the_home_kosmos_runs_in(
    llm: ScriptedLLM, env: dict, remote: Sshd, home: Path, tmp_path: Path
) -> None:
    """ssh reads `~` and %d from the password database (root: /root), kosmos from HOME: the
    file list `ssh -G` prints is kosmos's with the one home put for the other."""
    (home / "kh").mkdir()
    (home / "kh" / f"127.0.0.1-{remote.port}").write_text(remote.known_hosts_line())
    ssh_dir = client_home(home, remote, extra="  UserKnownHostsFile ~/kh/%h-%p %d/kh/second\n")
    shown = subprocess.run(
        ["ssh", "-G", "-F", str(ssh_dir / "config"), "box"], capture_output=True, text=True
    ).stdout
    files = next(x for x in shown.splitlines() if x.startswith("userknownhostsfile ")).split()[1:]
    root_home = pwd.getpwuid(0).pw_dir
    assert [f.replace(root_home, str(home), 1) for f in files] == [
        f"{home}/kh/127.0.0.1-{remote.port}",
        f"{home}/kh/second",
    ]
    assert kosmos(llm, env, tmp_path).connected


def test_without_user_known_hosts_file_both_default_files_are_read(
    llm: ScriptedLLM, env: dict, remote: Sshd, home: Path, tmp_path: Path
) -> None:
    ssh_dir = client_home(home, remote)
    config = ssh_dir / "config"
    config.write_text(
        "".join(x for x in config.read_text().splitlines(True) if "UserKnownHostsFile" not in x)
    )
    shown = subprocess.run(["ssh", "-G", "-F", str(config), "box"], capture_output=True, text=True)
    root_home = pwd.getpwuid(0).pw_dir
    assert f"userknownhostsfile {root_home}/.ssh/known_hosts {root_home}/.ssh/known_hosts2\n" in (
        shown.stdout
    )
    (ssh_dir / "known_hosts2").write_text(remote.known_hosts_line())
    assert kosmos(llm, env, tmp_path).connected


# -- StrictHostKeyChecking ----------------------------------------------------------------------


def test_strict_yes_refuses_a_new_key_even_in_a_terminal(
    llm: ScriptedLLM, env: dict, remote: Sshd, home: Path, tmp_path: Path
) -> None:
    """`yes` never asks (ssh_config(5): "will never automatically add host keys")."""
    ssh_dir = client_home(home, remote, extra="  StrictHostKeyChecking yes\n")
    run = kosmos(llm, env, tmp_path, stdin="y\n", headless=False)
    assert agree(run, openssh(home)) is False
    assert "Are you sure" not in run.proc.stderr and "[y/N]" not in run.proc.stderr
    assert "StrictHostKeyChecking is yes" in run.proc.stderr
    assert (ssh_dir / "known_hosts").read_text() == ""


def test_strict_no_still_refuses_a_changed_key_unlike_ssh(
    llm: ScriptedLLM, env: dict, remote: Sshd, home: Path, tmp_path: Path
) -> None:
    """The one case where kosmos and ssh differ on purpose: ssh connects (with warnings)."""
    client_home(
        home, remote, known=other_key_line(remote, tmp_path), extra="  StrictHostKeyChecking no\n"
    )
    judge = openssh(home)
    assert judge.returncode == 0 and "HOST IDENTIFICATION HAS CHANGED" in judge.stderr
    run = kosmos(llm, env, tmp_path)
    assert run.proc.returncode == 6 and len(run.error_lines) == 1
    assert "HAS CHANGED" in run.error_lines[0]
    assert (
        "unlike `ssh -o StrictHostKeyChecking=no`, kosmos never connects to a host whose key "
        "changed" in run.error_lines[0]
    )
    assert llm.requests == []


def test_strict_no_adds_a_new_key_like_accept_new(
    llm: ScriptedLLM, env: dict, remote: Sshd, home: Path, tmp_path: Path
) -> None:
    ssh_dir = client_home(home, remote, extra="  StrictHostKeyChecking off\n")
    run = kosmos(llm, env, tmp_path)
    assert run.connected, run.proc.stderr
    assert (ssh_dir / "known_hosts").read_text() == remote.known_hosts_line()
    (ssh_dir / "known_hosts").write_text("")
    assert agree(run, openssh(home)) is True
    assert (ssh_dir / "known_hosts").read_text() == remote.known_hosts_line()


async def test_a_bad_strict_host_key_checking_value_is_a_config_error(
    ssh_home: Path, remote: Sshd
) -> None:
    ssh_dir = client_home(ssh_home, remote, extra="  StrictHostKeyChecking maybe\n")
    judged = subprocess.run(
        ["ssh", "-G", "-F", str(ssh_dir / "config"), "box"], capture_output=True
    )
    assert judged.returncode == 255  # ssh refuses the file too
    with pytest.raises(SSHConfigError, match=r"config line 5: Invalid StrictHostKeyChecking value"):
        await SSHRunner(parse_target("box"), connect_timeout=5).connect()


@pytest.mark.parametrize("alias", [None, "web-alias"])
def test_the_keyscan_hint_for_an_unknown_key_makes_ssh_trust_it(
    llm: ScriptedLLM, env: dict, remote: Sshd, home: Path, tmp_path: Path, alias: str | None
) -> None:
    """The `ssh-keyscan ... >> known_hosts` a refusal suggests, run as written, writes the key
    where ssh looks for it: under the address and port, or under a HostKeyAlias."""
    extra = f"  HostKeyAlias {alias}\n" if alias else ""
    known = client_home(home, remote, extra=extra) / "known_hosts"
    assert openssh(home).returncode != 0
    check = subprocess.run(
        [sys.executable, "-m", "kosmos", "hosts", "--check"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    said = check.stdout + check.stderr
    assert check.returncode == 6, said
    hint = re.search(r"`(ssh-keyscan [^`]+)`", said)
    assert hint is not None, said
    subprocess.run(["bash", "-c", hint.group(1)], check=True, capture_output=True, timeout=30)
    if alias:
        assert all(line.startswith(f"{alias} ") for line in known.read_text().splitlines())
    assert openssh(home).returncode == 0, known.read_text()
    run = kosmos(llm, env, tmp_path)
    assert run.connected, run.proc.stderr
