"""Host-trust cases against Debian's sshd, each asked of kosmos and of OpenSSH's own client.

A case is one ~/.ssh/config and its known_hosts files. `kosmos run` connects or refuses;
`ssh -F CONFIG -o BatchMode=yes ALIAS true` is asked the same question with the same files.
The configs name every file by its absolute path: ssh reads `~` from the password database
(root's /root here), kosmos, like asyncssh, from HOME.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from kosmos.transcript import read_transcript
from tests.conftest import run_cli
from tests.llmserver import ScriptedLLM
from tests.sshd import Sshd, write_client_home


def host_block(alias: str, server: Sshd, home: Path, extra: str = "") -> str:
    """A `Host` block for `server`; `extra` comes first, since ssh_config's first value wins."""
    ssh_dir = home / ".ssh"
    return (
        f"Host {alias}\n  HostName 127.0.0.1\n  Port {server.port}\n  User {server.user}\n"
        + extra
        + f"  IdentityFile {ssh_dir / 'id_ed25519'}\n"
        f"  UserKnownHostsFile {ssh_dir / 'known_hosts'}\n"
        "  GlobalKnownHostsFile none\n"
    )


def client_home(
    home: Path, server: Sshd, *, known: str = "", extra: str = "", more: str = ""
) -> Path:
    """HOME/.ssh with the server's client key, `Host box` (+ `more` blocks) and known_hosts."""
    ssh_dir = write_client_home(home, server, trust=False)
    (ssh_dir / "config").write_text(host_block("box", server, home, extra) + more)
    (ssh_dir / "known_hosts").write_text(known)
    return ssh_dir


def other_key_line(server: Sshd, tmp: Path) -> str:
    """A known_hosts line naming the server with a key it does not have."""
    shutil.rmtree(tmp / "other", ignore_errors=True)
    (tmp / "other").mkdir()
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp / "other" / "key")],
        check=True,
    )
    algorithm, data = (tmp / "other" / "key.pub").read_text().split()[:2]
    return f"[127.0.0.1]:{server.port} {algorithm} {data}\n"


def openssh(
    home: Path, alias: str = "box", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """OpenSSH's answer: `ssh -F HOME/.ssh/config -o BatchMode=yes ALIAS true`, with no
    agent unless `env` names one."""
    env = {"PATH": os.environ["PATH"], "HOME": str(home), **(env or {})}
    return subprocess.run(
        ["ssh", "-F", str(home / ".ssh" / "config"), "-o", "BatchMode=yes", alias, "true"],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )


@dataclass
class KosmosRun:
    proc: subprocess.CompletedProcess
    transcript: Path

    @property
    def connected(self) -> bool:
        return self.proc.returncode == 0

    @property
    def error_lines(self) -> list[str]:
        return self.proc.stderr.strip().splitlines()

    def warnings(self) -> list[str]:
        """The transcript's warning events (notices from connecting among them)."""
        if not self.transcript.exists():
            return []
        return [e.message for e in read_transcript(self.transcript) if e.type == "warning"]


def kosmos(
    llm: ScriptedLLM,
    env: dict[str, str],
    cwd: Path,
    alias: str = "box",
    *,
    stdin: str | None = None,
    headless: bool = True,
) -> KosmosRun:
    """`kosmos run system-overview --host ALIAS --non-interactive`, an LLM that says it is done."""
    llm.script("[DONE] in")
    transcript = cwd / f"run-{len(list(cwd.glob('run-*.jsonl')))}.jsonl"
    flags = ["--non-interactive", "--yes"] if headless else []
    proc = run_cli(
        ["run", "system-overview", "--host", alias, *flags, "--transcript", str(transcript)],
        env=env,
        cwd=cwd,
        stdin=stdin,
    )
    return KosmosRun(proc, transcript)


def agree(run: KosmosRun, judge: subprocess.CompletedProcess) -> bool:
    """kosmos and ssh gave one answer; returns it (True: both connected)."""
    assert run.connected == (judge.returncode == 0), (
        f"kosmos exit {run.proc.returncode}: {run.proc.stderr.strip()!r}; "
        f"ssh exit {judge.returncode}: {judge.stderr.strip()!r}"
    )
    return run.connected
