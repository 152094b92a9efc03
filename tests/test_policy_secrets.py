"""Secret material is read only with a person's yes: a command or [GET-FILE] that names, or
globs to, a private key, a password hash, a token or a credentials file is not read-only."""

from __future__ import annotations

from pathlib import Path

import pytest

from kosmos.engine.session import SessionOptions
from kosmos.events import CommandStarted, FileRead
from kosmos.hosts.local import LocalRunner
from kosmos.prompts import Prompts
from kosmos.safety import assess
from tests.helpers import run_session
from tests.llmserver import ScriptedLLM

SECRET_READS = [
    "cat ~/.ssh/id_rsa",
    "cat ~/.ssh/id_ed25519",
    "base64 ~/.ssh/id_ecdsa",
    "xxd /root/.ssh/id_rsa",
    "od -c /home/bob/.ssh/id_ed25519",
    "tac '~/.ssh/id_rsa'",
    'cat "$HOME/.ssh/id_rsa"',
    "cat ${HOME}/.ssh/id_rsa",
    "cd ~/.ssh && cat id_ed25519",
    "cat /etc/ssh/ssh_host_ed25519_key",
    "strings /etc/ssh/ssh_host_rsa_key",
    "cat /etc/shadow",
    "grep root /etc/gshadow",
    "head -n 3 /etc/shadow-",
    "cat < /etc/shadow",
    "cat .env",
    "cat /srv/app/.env.production",
    "cat ~/.kube/config",
    "cat .kube/config",
    "cat /etc/kubernetes/admin.conf",
    "cat ~/.aws/credentials",
    "cat ~/.config/gcloud/application_default_credentials.json",
    "cat ~/.azure/msal_token_cache.json",
    "cat ~/.docker/config.json",
    "cat ~/.pgpass",
    "cat ~/.netrc",
    "cat ~/.git-credentials",
    "cat /etc/ssl/private/server.key",
    "cat /etc/letsencrypt/live/example.com/privkey.pem",
    "cat server.key",
    "cat /etc/nginx/tls.key",
    "cat /proc/1/environ",
    "cat ~/.ssh/*",
    "cat ~/.ssh/id_*",
    "cat /home/*/.ssh/id_*",
    "cat /etc/ssh/*_key",
    "grep pass /etc/*",
    "cat *.key",
    "cat *.pem",
    "grep -r password /etc",
    "grep -rn BEGIN ~/.ssh",
    "grep -R token /home",
    "rg secret /etc",
    "diff -r /etc /srv/etc-backup",
    "find ~/.ssh -name 'id_*' -exec cat {} +",
    "find /etc -name '*.conf' -exec cat {} \\;",
    "find ~/.ssh -type f | xargs cat",
    "git show HEAD:.env",
    "timeout 5 cat /etc/shadow",
    "echo $(cat ~/.ssh/id_rsa)",
    "sh -c 'cat /etc/shadow'",
    "kubectl config view --raw",
    "kubectl get secret db -o yaml",
]

# Decisions: names and metadata are not the secret; public keys and examples are not secrets.
NOT_SECRET = [
    "ls ~/.ssh",
    "ls -la ~/.ssh/id_rsa",
    "stat /etc/shadow",
    "wc -c ~/.ssh/id_rsa",
    "sha256sum /etc/ssh/ssh_host_ed25519_key",
    "file ~/.ssh/id_rsa",
    "find / -name id_rsa",
    "find ~/.ssh -type f",
    "cat ~/.ssh/id_rsa.pub",
    "cat ~/.ssh/*.pub",
    "cat /etc/ssh/ssh_host_ed25519_key.pub",
    "cat ~/.ssh/known_hosts",
    "cat ~/.ssh/config",
    "cat ~/.ssh/authorized_keys",
    "cat /etc/ssh/sshd_config",
    "cat /etc/passwd",
    "cat .env.example",
    "cat cert.pem",
    "openssl x509 -in /etc/letsencrypt/live/example.com/cert.pem -noout -dates",
    "cat config",
    "cat /var/log/*",
    "grep error /var/log/*.log",
    "grep -r error /var/log",
    "grep -rn TODO .",
    "find /etc -name '*.conf' -exec grep -l Listen {} +",
    "grep -rl password /etc",
    "kubectl config view",
    "kubectl get secrets",
    "curl -s https://example.com/.env",
    "echo ~/.ssh/id_rsa",
]


@pytest.mark.parametrize("command", SECRET_READS)
def test_reading_secret_material_is_not_read_only(command: str) -> None:
    for dialect in ("bash", "sh", None):
        result = assess(command, dialect)
        if dialect == "sh" and result.reason.startswith("bash and sh read"):
            continue
        assert result.verdict == "write", (dialect, result.reason)
        assert "secret" in result.reason or "credentials" in result.reason, result.reason


@pytest.mark.parametrize("command", NOT_SECRET)
def test_names_and_public_files_are_not_secret_reads(command: str) -> None:
    result = assess(command, "bash")
    assert result.verdict == "read_only", result.reason


async def test_a_secret_read_is_refused_headless_and_the_llm_told(
    llm: ScriptedLLM, tmp_path: Path
) -> None:
    (tmp_path / ".ssh").mkdir()
    (tmp_path / ".ssh/id_ed25519").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n")
    (tmp_path / "motd").write_text("hello\n")
    llm.script(
        "[GET-FILE] .ssh/id_ed25519",
        "[CMD] base64 .ssh/id_ed25519",
        "[GET-FILE] motd",
        "[DONE] ok",
    )
    run = await run_session(
        llm.base_url,
        runner=LocalRunner(cwd=tmp_path),
        options=SessionOptions(policy="read-only", non_interactive=True),
    )
    texts = [r.last_user_text for r in llm.requests[1:]]
    refused = Prompts.load()["SKILL_REFUSED_READ_ONLY"]
    told = refused.format(reason="reads secret material (.ssh/id_ed25519)")
    assert texts[0].startswith("File error:\n" + told)
    assert "reads secret material (.ssh/id_ed25519)" in texts[1]
    assert texts[2].startswith("File content:\nhello")
    assert not any("PRIVATE KEY" in t or "AAAA" in t for t in texts)
    assert [r.status for r in run.of(FileRead)] == ["refused", "done"]
    assert run.of(CommandStarted) == []
