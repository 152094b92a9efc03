"""Debian's OpenSSH sshd on a free loopback port, with its own config, host key and test user.

Runs as root (as CI does). The test user's password field is `*`: an account fresh from
`useradd` is locked (`!`) and sshd without PAM refuses it.

`start_sshd(..., certificates=True)` starts one that vouches for itself with certificates
instead: its host keys (Ed25519, certified, and RSA) are signed by a host CA, and it takes
no authorized key, only a user certificate signed by its user CA.

`start_sshd(..., bare=True)` starts one that offers no sftp subsystem (as a host whose
sshd_config has no `Subsystem sftp` line) and takes every variable a client sends
(`AcceptEnv *`).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

SSHD = Path("/usr/sbin/sshd")


class SshdUnavailable(Exception):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def keygen(path: Path, passphrase: str = "", kind: str = "ed25519") -> Path:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", kind, "-N", passphrase, "-C", "kosmos-test", "-f", str(path)],
        check=True,
    )
    return path


def sign(ca: Path, public: Path, principal: str, *, host: bool) -> Path:
    """`ssh-keygen -s`: a certificate for `public`, written beside it as NAME-cert.pub."""
    subprocess.run(
        ["ssh-keygen", "-q", "-s", str(ca), "-I", f"kosmos-test-{principal}",
         *(["-h"] if host else []), "-n", principal, "-V", "-5m:+1d", str(public)],
        check=True,
    )  # fmt: skip
    return public.with_name(public.name.removesuffix(".pub") + "-cert.pub")


@dataclass
class Sshd:
    """A running sshd: `user` logs in with `client_key` at 127.0.0.1:`port`."""

    root: Path
    port: int
    user: str
    remote_home: Path
    client_key: Path
    host_key_pub: Path
    log: Path
    pid: int
    # With certificates: the CA that signs the host key, and the client key's certificate.
    host_ca_pub: Path | None = None
    client_cert: Path | None = None

    @property
    def target(self) -> str:
        return f"{self.user}@127.0.0.1:{self.port}"

    def known_hosts_line(self) -> str:
        algorithm, data = self.host_key_pub.read_text().split()[:2]
        return f"[127.0.0.1]:{self.port} {algorithm} {data}\n"

    def cert_authority_line(self, pattern: str = "*") -> str:
        """The known_hosts line that trusts this server's host CA."""
        assert self.host_ca_pub is not None, "a server started with certificates=True"
        algorithm, data = self.host_ca_pub.read_text().split()[:2]
        return f"@cert-authority {pattern} {algorithm} {data}\n"

    def write_remote(self, relative: str, text: str) -> Path:
        """A file in the test user's home, owned by that user."""
        path = self.remote_home / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        uid = pwd.getpwnam(self.user).pw_uid
        for p in [path, *path.relative_to(self.remote_home).parents]:
            os.chown(self.remote_home / p, uid, uid)
        return path

    def clean_remote(self) -> None:
        """Remove what tests left in the user's home, keeping its .ssh."""
        for child in self.remote_home.iterdir():
            if child.name == ".ssh":
                continue
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child, ignore_errors=True)
            else:
                child.unlink(missing_ok=True)

    def user_processes(self) -> list[str]:
        """`ps` lines of the test user's live processes (sshd's own and zombies left out)."""
        out = subprocess.run(
            ["ps", "-u", self.user, "-o", "pid=,stat=,args="],
            capture_output=True,
            text=True,
        ).stdout
        return [
            line
            for line in out.splitlines()
            if "sshd" not in line and not line.split()[1].startswith("Z")
        ]

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGTERM)
        subprocess.run(["pkill", "-KILL", "-u", self.user], capture_output=True)
        subprocess.run(["userdel", self.user], capture_output=True)
        # A later throwaway user may get the same uid: leave nothing it would seem to own.
        shutil.rmtree(self.root, ignore_errors=True)


def _ensure_user(name: str, home: Path, login: str = "/bin/sh") -> None:
    try:
        pwd.getpwnam(name)
    except KeyError:
        subprocess.run(
            ["useradd", "-M", "-d", str(home), "-s", login, name],
            check=True,
            capture_output=True,
        )
    else:
        subprocess.run(
            ["usermod", "-d", str(home), "-s", login, name], check=True, capture_output=True
        )
    subprocess.run(["usermod", "-p", "*", name], check=True, capture_output=True)


def start_sshd(
    worker: str,
    *,
    certificates: bool = False,
    bare: bool = False,
    extra_config: str = "",
    login: str = "/bin/sh",
) -> Sshd:
    """Start sshd for this test worker; raises SshdUnavailable when it cannot run here.

    `bare`: no sftp subsystem (and every variable accepted); `extra_config`: more sshd_config
    lines (`SetEnv PATH=...` for a host with other programs); `login`: the user's login shell.
    """
    if os.geteuid() != 0:
        raise SshdUnavailable("the sshd tests need root (they add a test user)")
    if not SSHD.exists() or not shutil.which("ssh-keygen") or not shutil.which("useradd"):
        raise SshdUnavailable("openssh-server, ssh-keygen or useradd is not installed")
    if not shutil.which("ps") or not shutil.which("pkill"):  # the user's processes, their end
        raise SshdUnavailable("ps or pkill is not installed (apt-get install procps)")
    kind = "kc" if certificates else "kb" if bare else "kx" if extra_config else "kt"
    root = Path(tempfile.mkdtemp(prefix=f"kosmos-sshd-{kind}-{worker}-"))
    root.chmod(0o755)
    # One user per test process and server: concurrent suites on one machine, and the two
    # servers of one worker, must not share a home.
    user = f"{kind}-{os.getpid()}-{worker}"[:32]
    remote_home = root / "home"
    (remote_home / ".ssh").mkdir(parents=True)
    _ensure_user(user, remote_home, login)
    uid = pwd.getpwnam(user).pw_uid
    host_key = keygen(root / "host_ed25519")
    client_key = keygen(root / "client_ed25519")
    auth = remote_home / ".ssh" / "authorized_keys"
    # With certificates the user CA vouches for the client, and nothing else does.
    auth.write_text("" if certificates else (root / "client_ed25519.pub").read_text())
    auth.chmod(0o600)
    (remote_home / ".ssh").chmod(0o700)
    for p in (remote_home, remote_home / ".ssh", auth):
        os.chown(p, uid, uid)
    certified = ""
    host_ca_pub = client_cert = None
    if certificates:
        host_ca, user_ca = keygen(root / "host_ca"), keygen(root / "user_ca")
        host_ca_pub = root / "host_ca.pub"
        host_cert = sign(host_ca, root / "host_ed25519.pub", "127.0.0.1", host=True)
        client_cert = sign(user_ca, root / "client_ed25519.pub", user, host=False)
        # An RSA key beside the certified one: which key a client records is its choice.
        rsa = keygen(root / "host_rsa", kind="rsa")
        certified = f"HostKey {rsa}\nHostCertificate {host_cert}\nTrustedUserCAKeys {root / 'user_ca.pub'}\n"
    port = free_port()
    config = root / "sshd_config"
    log = root / "sshd.log"
    pidfile = root / "sshd.pid"
    config.write_text(
        f"""Port {port}
ListenAddress 127.0.0.1
HostKey {host_key}
PidFile {pidfile}
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
AuthorizedKeysFile .ssh/authorized_keys
StrictModes no
PermitRootLogin prohibit-password
AllowUsers {user}
AllowTcpForwarding yes
MaxStartups 200:30:400
MaxSessions 200
LogLevel VERBOSE
{"AcceptEnv *" if bare else "Subsystem sftp internal-sftp"}
{certified}{extra_config}"""
    )
    Path("/run/sshd").mkdir(exist_ok=True)
    subprocess.run([str(SSHD), "-f", str(config), "-E", str(log)], check=True)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if pidfile.exists() and pidfile.read_text().strip():
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                pass
        time.sleep(0.05)
    else:
        raise RuntimeError(f"sshd did not start; see {log}: {log.read_text()[-2000:]}")
    return Sshd(
        root=root,
        port=port,
        user=user,
        remote_home=remote_home,
        client_key=client_key,
        host_key_pub=root / "host_ed25519.pub",
        log=log,
        pid=int(pidfile.read_text().strip()),
        host_ca_pub=host_ca_pub,
        client_cert=client_cert,
    )


def write_client_home(
    home: Path,
    sshd: Sshd,
    *,
    alias: str = "box",
    trust: bool = True,
    extra_config: str = "",
) -> Path:
    """A HOME whose ~/.ssh has the client key, an alias for the sshd and (if `trust`) its key."""
    ssh_dir = home / ".ssh"
    ssh_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    key = ssh_dir / "id_ed25519"
    shutil.copy(sshd.client_key, key)
    shutil.copy(sshd.client_key.with_suffix(".pub"), ssh_dir / "id_ed25519.pub")
    key.chmod(0o600)
    (ssh_dir / "config").write_text(
        f"Host {alias}\n  HostName 127.0.0.1\n  Port {sshd.port}\n  User {sshd.user}\n"
        + extra_config
    )
    known = ssh_dir / "known_hosts"
    known.write_text(sshd.known_hosts_line() if trust else "")
    return ssh_dir
