"""Host certificates and ProxyJump hops, judged by OpenSSH.

`cert_sshd` proves itself with a host certificate and lets in only a user certificate;
`remote` is the plain sshd. Each case asks kosmos and `ssh -o BatchMode=yes` one question
with the same config and files (tests/trusthelpers.py).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

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
