"""Certificates, the agent and ProxyJump hops, judged by OpenSSH.

`cert_sshd` proves itself with a host certificate and lets in only a user certificate;
`remote` is the plain sshd. Each case asks kosmos and `ssh -o BatchMode=yes` one question
with the same config and files (tests/trusthelpers.py).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kosmos.hosts.ssh import SSHRunner
from kosmos.hosts.target import parse_target
from tests.llmserver import ScriptedLLM
from tests.sshd import Sshd
from tests.trusthelpers import agree, client_home, host_block, kosmos, openssh


@pytest.fixture
def env(cli_env: dict) -> dict:
    env = dict(cli_env)
    env.pop("SSH_AUTH_SOCK", None)
    return env


def certified_home(home: Path, server: Sshd, *, known: str = "", extra: str = "") -> Path:
    """A client of `cert_sshd` whose key's certificate is named by CertificateFile."""
    assert server.client_cert is not None
    return client_home(
        home, server, known=known, extra=f"  CertificateFile {server.client_cert}\n" + extra
    )


def plain_lines(server: Sshd) -> dict[str, str]:
    """The server's host keys as known_hosts lines, by key type."""
    lines = {}
    for pub in sorted(server.root.glob("host_*.pub")):
        if pub.name.startswith("host_ca") or pub.name.endswith("-cert.pub"):
            continue
        algorithm, data = pub.read_text().split()[:2]
        lines[algorithm] = f"[127.0.0.1]:{server.port} {algorithm} {data}\n"
    return lines


# -- host and user certificates -----------------------------------------------------------------


def test_a_host_certificate_and_a_user_certificate_connect(
    llm: ScriptedLLM, env: dict, cert_sshd: Sshd, home: Path, tmp_path: Path
) -> None:
    certified_home(home, cert_sshd, known=cert_sshd.cert_authority_line())
    assert agree(kosmos(llm, env, tmp_path), openssh(home)) is True
    # Without the user certificate nothing else lets the key in, for either.
    client_home(home, cert_sshd, known=cert_sshd.cert_authority_line())
    assert agree(kosmos(llm, env, tmp_path), openssh(home)) is False


def test_a_user_certificate_beside_the_key_is_offered(
    llm: ScriptedLLM, env: dict, cert_sshd: Sshd, home: Path, tmp_path: Path
) -> None:
    assert cert_sshd.client_cert is not None
    ssh_dir = client_home(home, cert_sshd, known=cert_sshd.cert_authority_line())
    shutil.copy(cert_sshd.client_cert, ssh_dir / "id_ed25519-cert.pub")
    assert agree(kosmos(llm, env, tmp_path), openssh(home)) is True


def test_a_host_certificate_from_an_unknown_ca_is_judged_by_its_plain_key(
    llm: ScriptedLLM, env: dict, cert_sshd: Sshd, remote: Sshd, home: Path, tmp_path: Path
) -> None:
    """Another CA is trusted for the host: the certificate counts for nothing, and the key
    under it is new (refused when strict, added under accept-new: the Ed25519 one, ssh's
    first choice, though the host has an RSA key too)."""
    stranger = remote.known_hosts_line().split()[1:]  # any key that did not sign the host's
    known = f"@cert-authority * {' '.join(stranger)}\n"
    ssh_dir = certified_home(home, cert_sshd, known=known)
    assert agree(kosmos(llm, env, tmp_path), openssh(home)) is False
    ssh_dir = certified_home(
        home, cert_sshd, known=known, extra="  StrictHostKeyChecking accept-new\n"
    )
    judge = openssh(home)
    added_by_ssh = (ssh_dir / "known_hosts").read_text()
    (ssh_dir / "known_hosts").write_text(known)
    run = kosmos(llm, env, tmp_path)
    assert agree(run, judge) is True
    assert (ssh_dir / "known_hosts").read_text() == added_by_ssh
    assert added_by_ssh == known + plain_lines(cert_sshd)["ssh-ed25519"]


def test_a_certified_host_nothing_vouches_for_is_added_as_its_plain_key(
    llm: ScriptedLLM, env: dict, cert_sshd: Sshd, home: Path, tmp_path: Path
) -> None:
    ssh_dir = certified_home(home, cert_sshd, extra="  StrictHostKeyChecking accept-new\n")
    judge = openssh(home)
    added_by_ssh = (ssh_dir / "known_hosts").read_text()
    (ssh_dir / "known_hosts").write_text("")
    run = kosmos(llm, env, tmp_path)
    assert agree(run, judge) is True
    assert (ssh_dir / "known_hosts").read_text() == added_by_ssh
    assert added_by_ssh == plain_lines(cert_sshd)["ssh-ed25519"]


@dataclass
class Prompter:
    secrets: list[str] = field(default_factory=list)
    asked: list[str] = field(default_factory=list)

    async def confirm_host_key(self, host: str, key_type: str, fingerprint: str) -> bool:
        return False

    async def ask_secret(self, prompt: str) -> str | None:
        self.asked.append(prompt)
        return self.secrets.pop(0) if self.secrets else None


def _encrypt(key: Path, passphrase: str) -> None:
    subprocess.run(
        ["ssh-keygen", "-q", "-p", "-a", "2", "-P", "", "-N", passphrase, "-f", str(key)],
        check=True,
        capture_output=True,
    )


@pytest.mark.parametrize("where", ["CertificateFile", "beside the key"])
async def test_a_key_unlocked_with_its_passphrase_still_offers_its_certificate(
    cert_sshd: Sshd, ssh_home: Path, where: str
) -> None:
    """kosmos decrypts the key itself and hands asyncssh the key pairs: with the certificate."""
    assert cert_sshd.client_cert is not None
    if where == "CertificateFile":
        ssh_dir = certified_home(ssh_home, cert_sshd, known=cert_sshd.cert_authority_line())
    else:
        ssh_dir = client_home(ssh_home, cert_sshd, known=cert_sshd.cert_authority_line())
        shutil.copy(cert_sshd.client_cert, ssh_dir / "id_ed25519-cert.pub")
    _encrypt(ssh_dir / "id_ed25519", "open sesame")
    prompter = Prompter(secrets=["open sesame"])
    runner = SSHRunner(parse_target("box"), connect_timeout=10, prompter=prompter)
    try:
        result = await runner.run("echo in", timeout=10)
    finally:
        await runner.close()
    assert result.output.text() == "in\n"
    assert len(prompter.asked) == 1


# -- the agent ----------------------------------------------------------------------------------


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[str]:
    """An ssh-agent of the test's own on a socket in tmp_path; returns the socket's path."""
    sock = tmp_path / "agent.sock"
    proc = subprocess.Popen(
        ["ssh-agent", "-D", "-a", str(sock)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        # The socket's file exists once bound, a moment before the agent listens: wait until
        # `ssh-add -l` reaches it (exit 1: no identities; 2: cannot connect).
        env = {"PATH": os.environ["PATH"], "SSH_AUTH_SOCK": str(sock)}
        for _ in range(500):
            if sock.exists():
                listed = subprocess.run(["ssh-add", "-l"], env=env, capture_output=True)
                if listed.returncode != 2:
                    break
            time.sleep(0.02)
        yield str(sock)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)


def _add_to_agent(sock: str, key: Path) -> None:
    subprocess.run(
        ["ssh-add", "-q", str(key)],
        env={"PATH": os.environ["PATH"], "SSH_AUTH_SOCK": sock},
        check=True,
        capture_output=True,
    )


def _agent_only_home(home: Path, server: Sshd, extra: str) -> Path:
    """A client whose only way in is the agent: its IdentityFile is a key the server refuses."""
    ssh_dir = client_home(home, server, known=server.known_hosts_line(), extra=extra)
    stranger = ssh_dir / "stranger"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(stranger)], check=True)
    (ssh_dir / "id_ed25519").unlink()
    (ssh_dir / "id_ed25519.pub").unlink()
    config = ssh_dir / "config"
    config.write_text(config.read_text().replace(f"{ssh_dir}/id_ed25519", str(stranger)))
    return ssh_dir


@pytest.mark.parametrize(
    ("identity_agent", "env_sock", "connects"),
    [
        ("", True, True),  # SSH_AUTH_SOCK, as ssh reads it by default
        ("  IdentityAgent none\n", True, False),  # no agent at all
        ("  IdentityAgent {sock}\n", False, True),  # a path
        ("  IdentityAgent SSH_AUTH_SOCK\n", True, True),
        ("  IdentityAgent $KOSMOS_TEST_SOCK\n", False, True),
    ],
)
def test_identity_agent_chooses_the_agent_or_none(
    llm: ScriptedLLM,
    env: dict,
    remote: Sshd,
    agent: str,
    home: Path,
    tmp_path: Path,
    identity_agent: str,
    env_sock: bool,
    connects: bool,
) -> None:
    _add_to_agent(agent, remote.client_key)
    _agent_only_home(home, remote, identity_agent.format(sock=agent))
    extra = {"KOSMOS_TEST_SOCK": agent, **({"SSH_AUTH_SOCK": agent} if env_sock else {})}
    run = kosmos(llm, {**env, **extra}, tmp_path)
    assert agree(run, openssh(home, env=extra)) is connects


async def test_identity_agent_none_asks_for_the_passphrase_the_agent_would_have_spared(
    remote: Sshd, agent: str, ssh_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kosmos's own look at the agent (is a passphrase needed?) follows IdentityAgent too."""
    _add_to_agent(agent, remote.client_key)
    monkeypatch.setenv("SSH_AUTH_SOCK", agent)
    ssh_dir = client_home(
        ssh_home, remote, known=remote.known_hosts_line(), extra="  IdentityAgent none\n"
    )
    _encrypt(ssh_dir / "id_ed25519", "open sesame")
    prompter = Prompter(secrets=["open sesame"])
    runner = SSHRunner(parse_target("box"), connect_timeout=10, prompter=prompter)
    try:
        await runner.connect()
    finally:
        await runner.close()
    assert prompter.asked == [f"Enter passphrase for key '{ssh_dir / 'id_ed25519'}': "]


@pytest.mark.parametrize("only", [False, True])
def test_identities_only_keeps_other_agent_keys_back(
    llm: ScriptedLLM,
    env: dict,
    remote: Sshd,
    agent: str,
    home: Path,
    tmp_path: Path,
    only: bool,
) -> None:
    _add_to_agent(agent, remote.client_key)
    _agent_only_home(home, remote, "  IdentitiesOnly yes\n" if only else "")
    run = kosmos(llm, dict(env, SSH_AUTH_SOCK=agent), tmp_path)
    assert agree(run, openssh(home, env={"SSH_AUTH_SOCK": agent})) is (not only)


# -- ProxyJump ----------------------------------------------------------------------------------


def test_a_jump_host_follows_its_own_rules(
    llm: ScriptedLLM, env: dict, cert_sshd: Sshd, remote: Sshd, home: Path, tmp_path: Path
) -> None:
    """`behind` (the plain sshd, its key known) is reached through `jump` (the certified sshd,
    its key unknown, accept-new and its own known_hosts file in its block): both add the jump
    host's key to the jump host's file, and nothing to the target's."""
    assert cert_sshd.client_cert is not None
    jump_known = home / "jump_known_hosts"
    jump = host_block(
        "jump",
        cert_sshd,
        home,
        f"  IdentityFile {cert_sshd.client_key}\n  CertificateFile {cert_sshd.client_cert}\n"
        f"  UserKnownHostsFile {jump_known}\n  StrictHostKeyChecking accept-new\n",
    )
    ssh_dir = client_home(
        home, remote, known=remote.known_hosts_line(), extra="  ProxyJump jump\n", more=jump
    )
    judge = openssh(home)
    added_by_ssh = jump_known.read_text()
    jump_known.unlink()
    run = kosmos(llm, env, tmp_path)
    assert agree(run, judge) is True
    assert jump_known.read_text() == added_by_ssh == plain_lines(cert_sshd)["ssh-ed25519"]
    assert (ssh_dir / "known_hosts").read_text() == remote.known_hosts_line()
    assert any(f"[127.0.0.1]:{cert_sshd.port}: permanently added" in w for w in run.warnings())
    assert f'Accepted certificate ID "kosmos-test-{cert_sshd.user}"' in cert_sshd.log.read_text()
    # The target keeps its strict default: with its key unknown, both refuse.
    (ssh_dir / "known_hosts").write_text("")
    assert agree(kosmos(llm, env, tmp_path), openssh(home)) is False


# -- IdentityFile -------------------------------------------------------------------------------


def test_a_missing_identity_file_beside_a_present_one_is_skipped_as_ssh_skips_it(
    llm: ScriptedLLM, env: dict, remote: Sshd, home: Path, tmp_path: Path
) -> None:
    # The dotfiles pattern: `Host *` names id_rsa (absent) and id_ed25519 (present).
    everyone = "Host *\n  IdentityFile ~/.ssh/id_rsa\n  IdentityFile ~/.ssh/id_ed25519\n"
    client_home(home, remote, known=remote.known_hosts_line(), more=everyone)
    assert not (home / ".ssh/id_rsa").exists()
    assert agree(kosmos(llm, env, tmp_path), openssh(home)) is True
