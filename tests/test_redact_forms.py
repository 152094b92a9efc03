"""The forms of secrets an outside review found unmasked, in every copy (the LLM's, the
transcript's, the screen's, however the output is cut into chunks); and ordinary output,
recorded and real, that must come through untouched."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from kosmos.engine.guard import LineRedactor
from kosmos.events import CommandFinished
from kosmos.safety import MASK, Redactor
from kosmos.transcript import read_transcript
from tests.conftest import run_cli
from tests.helpers import need
from tests.llmserver import ScriptedLLM
from tests.test_redact import CHUNK_SIZES, streamed, transcribed

ROOT = Path(__file__).resolve().parent.parent

# (text, the secret that must not survive, the masked text exactly)
FORMS = [
    (
        "users:\n- name: admin\n  user:\n    client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVk\n"
        "    token: 0123456789abcdef0123456789abcdef\n",
        "LS0tLS1CRUdJTiBSU0EgUFJJVk",
        f"users:\n- name: admin\n  user:\n    client-key-data: {MASK}\n    token: {MASK}\n",
    ),
    (
        "db.example.com:5432:shop:alice:s3cr\\:et!\n*:*:*:postgres:pg-Pass.word\n",
        "pg-Pass.word",
        f"db.example.com:5432:shop:alice:{MASK}\n*:*:*:postgres:{MASK}\n",
    ),
    (
        "machine example.com\n  login alice\n  password hunter2!\nmachine b\n  password end.\n",
        "hunter2!",
        f"machine example.com\n  login alice\n  password {MASK}\nmachine b\n  password {MASK}\n",
    ),
    (
        "DSN=postgres://alice:p@ss/w0rd@db.example.com:5432/shop sslmode=require",
        "ss/w0rd",
        f"DSN=postgres://alice:{MASK}@db.example.com:5432/shop sslmode=require",
    ),
    (
        "db:\n  password:\n    s3cret-on-the-next-line\n  user: bob\n"
        "api_key: |\n  first-line-of-the-key\n  second-line\nnext: 1\n",
        "s3cret-on-the-next-line",
        f"db:\n  password:\n    {MASK}\n  user: bob\napi_key: |\n  {MASK}\n  {MASK}\nnext: 1\n",
    ),
    (
        "[Interface]\nPrivateKey = yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=\n[Peer]\n"
        "PresharedKey = /UwcSPg38hW/D9Y3tcS1FOV0K1wuURMbS0sesJEP5ak=\n",
        "/UwcSPg38hW/D9Y3tcS1FOV0K1wuURMbS0sesJEP5ak=",
        f"[Interface]\nPrivateKey = {MASK}\n[Peer]\nPresharedKey = {MASK}\n",
    ),
    (
        "<tls-auth>\n-----BEGIN OpenVPN Static key V1-----\ne5f2a1b3c4d5e6f708192a3b4c5d6e7f\n"
        "-----END OpenVPN Static key V1-----\n</tls-auth>\n",
        "e5f2a1b3c4d5e6f708192a3b4c5d6e7f",
        f"<tls-auth>\n-----BEGIN OpenVPN Static key V1-----{MASK}"
        "-----END OpenVPN Static key V1-----\n</tls-auth>\n",
    ),
    (
        "# created: 2026-11-26\nAGE-SECRET-KEY-1QYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQS3FN4MX\n",
        "QYQSZQGPQYQSZQGPQYQSZQ",
        f"# created: 2026-11-26\nAGE-SECRET-KEY-1{MASK}\n",
    ),
    (
        "export VAULT_TOKEN=hvs.CAESIJ0fake0token0value0abcdefghijkl\n",
        "CAESIJ0fake0token0value0abcdefghijkl",
        f"export VAULT_TOKEN=hvs.{MASK}\n",
    ),
    # passwords on command lines, as `ps aux` shows them
    (
        "redis  812  0.0  0.1 redis-cli -h 10.0.0.1 -a S3cretRedisPw ping\n"
        "root   901  0.0  0.1 smbclient //srv/share -U alice%Sm8Pass -c ls\n"
        "root   933  0.0  0.0 htpasswd -b /etc/nginx/.htpasswd alice Htp4ss!\n"
        "root   940  0.0  0.2 mysql -u root -pMyS3cret shop\n"
        "root   977  0.0  0.0 sshpass -p SshP4ss ssh backup@nas\n",
        "S3cretRedisPw",
        "redis  812  0.0  0.1 redis-cli -h 10.0.0.1 -a [REDACTED] ping\n"
        "root   901  0.0  0.1 smbclient //srv/share -U alice%[REDACTED] -c ls\n"
        "root   933  0.0  0.0 htpasswd -b /etc/nginx/.htpasswd alice [REDACTED]\n"
        "root   940  0.0  0.2 mysql -u root -p[REDACTED] shop\n"
        "root   977  0.0  0.0 sshpass -p [REDACTED] ssh backup@nas\n",
    ),
    (
        "alice:rl.3StKT.4T8M:19000:0:99999:7:::\nbob:Ab1.cd2/Ef3xY\n",
        "rl.3StKT.4T8M",
        f"alice:{MASK}:19000:0:99999:7:::\nbob:{MASK}\n",
    ),
]


@pytest.mark.parametrize(("text", "secret", "masked"), FORMS)
def test_each_form_is_masked_and_its_label_stays(text: str, secret: str, masked: str) -> None:
    redactor = Redactor()
    assert redactor(text) == masked
    assert secret not in masked
    assert redactor(masked) == masked


@pytest.mark.parametrize("size", CHUNK_SIZES)
def test_each_form_is_masked_on_screen_and_in_the_transcript_however_it_streams(
    size: int, tmp_path: Path
) -> None:
    redactor = Redactor()
    text = "$ cat things\n" + "".join(t for t, _, _ in FORMS) + "$ echo done\ndone\n"
    screen = streamed(redactor, text, size)
    transcript = transcribed(redactor, text, tmp_path / "t.jsonl")
    for _, secret, _ in FORMS:
        assert secret not in screen, secret
        assert secret not in transcript, secret
    assert screen == redactor(text)


def _real_key(tmp_path: Path, kind: str) -> str:
    """A private key from the tools that make them: OpenSSH's and OpenSSL's (PEM)."""
    path = tmp_path / f"key-{kind}"
    if kind == "openssh":
        need("ssh-keygen", "openssh-client")
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)
    else:
        need("openssl", "openssl")
        subprocess.run(
            ["openssl", "genpkey", "-algorithm", "RSA", "-out", str(path)],
            check=True,
            capture_output=True,
        )
    return path.read_text()


@pytest.mark.parametrize("kind", ["openssh", "pem"])
@pytest.mark.parametrize(
    "printed",
    [
        ["tac"],  # upside down: END first
        ["sed", "-n", "2,$p"],  # its BEGIN line cut off
        ["sed", "1d;$d"],  # both cut off: the body alone
        ["sed", "-n", "3,5p"],  # three lines of the middle
    ],
)
@pytest.mark.parametrize("size", [1, 4096])
def test_a_key_printed_in_part_or_upside_down_leaves_no_line_of_its_body(
    kind: str, printed: list[str], size: int, tmp_path: Path
) -> None:
    key = _real_key(tmp_path, kind)
    body = [line for line in key.splitlines() if line and not line.startswith("-----")]
    path = tmp_path / "key"
    path.write_text(key)
    output = subprocess.run(
        [*printed, str(path)], capture_output=True, text=True, check=True
    ).stdout
    text = f"$ {' '.join(printed)} key\n{output}$ echo done\ndone\n"
    redactor = Redactor()
    for copy in (redactor(text), streamed(redactor, text, size)):
        assert not any(line in copy for line in body), copy
        assert copy.endswith("$ echo done\ndone\n")


def test_a_certificate_without_its_armour_lines_would_be_masked_but_not_with_them(
    tmp_path: Path,
) -> None:
    need("openssl", "openssl")
    key = tmp_path / "k"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
         "-subj", "/CN=kosmos", "-days", "1", "-out", str(tmp_path / "c")],
        check=True,
        capture_output=True,
    )  # fmt: skip
    cert = (tmp_path / "c").read_text()
    assert Redactor()(cert) == cert  # public, and said so by its armour


@pytest.mark.parametrize("size", [1, 7, 1000])
@pytest.mark.parametrize(
    ("secret_text", "secret"),
    [
        ("password=hunter2-very-secret", "very-secret"),
        ("Authorization: Bearer abcdef0123456789abcdef", "0123456789abcdef"),
        ("token ghp_16C7e42F292c6912E7710c838347Ae178B4a", "E7710c838347Ae178B4a"),
        ('"private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEF"', "kqhkiG"),
    ],
)
def test_a_long_line_is_cut_only_where_no_secret_straddles_the_cut(
    size: int, secret_text: str, secret: str
) -> None:
    """The streamed copy of a line over 4 KiB is shown in parts: wherever the secret falls
    against the 4 KiB mark, no part shows a piece of it."""
    redactor = Redactor()
    for lead in range(3930, 4120, 9):
        line = "w " * (lead // 2) + secret_text + " tail" * 900
        text = line + "\nnext\n"
        lines = LineRedactor(redactor)
        parts = [lines.feed(text[i : i + size]) for i in range(0, len(text), size)]
        parts.append(lines.flush())
        screen = "".join(parts)
        assert secret not in screen, lead
        assert not any(secret[: len(secret) // 2] in p or secret[len(secret) // 2 :] in p
                       for p in parts), lead  # fmt: skip
        assert len([p for p in parts if p]) > 1, "the long line was never shown in parts"
        if "BEGIN" not in secret_text:  # a key with no END is masked to the end of its part
            assert screen == redactor(text)


def test_a_line_too_long_to_hold_is_not_shown_and_the_next_ones_are() -> None:
    redactor = Redactor()
    lines = LineRedactor(redactor)
    shown = [lines.feed("password=" + "x" * 64 * 1024) for _ in range(20)]
    shown.append(lines.feed("yz\nafter\n"))
    screen = "".join(shown) + lines.flush()
    assert "xxxx" not in screen
    assert screen.endswith("after\n") and "not shown" in screen


# -- what must come through untouched -----------------------------------------------------


def _recorded_outputs() -> list[str]:
    outputs = []
    for path in sorted((ROOT / "recordings").glob("*.jsonl")):
        for event in read_transcript(path):
            if isinstance(event, CommandFinished):
                outputs.append(event.output)
    return outputs


def _real_outputs() -> dict[str, str]:
    """What ordinary commands print on this machine; `env` without the names that look secret."""
    secret_name = re.compile(r"KEY|TOKEN|SECRET|PASS|AUTH|CREDENTIAL|PRIVATE", re.IGNORECASE)
    env = {k: v for k, v in os.environ.items() if not secret_name.search(k)}
    commands = {
        "ps aux": ["ps", "aux"],
        "env": ["env"],
        "dmesg": ["dmesg"],
        "mount": ["mount"],
        "ls -la /etc": ["ls", "-la", "--color=never", "/etc"],
        "/etc/passwd": ["cat", "/etc/passwd"],
        "/etc/group": ["cat", "/etc/group"],
        "df -h": ["df", "-h"],
        "ip addr": ["ip", "addr"],
        "ss -tan": ["ss", "-tan"],
        "uname -a": ["uname", "-a"],
        "sshd -T": ["/usr/sbin/sshd", "-T"],
    }
    outputs = {}
    for name, argv in commands.items():
        try:
            done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode == 0 and done.stdout.strip():
            outputs[name] = done.stdout
    return outputs


def test_recorded_outputs_of_the_bundled_skills_are_unchanged() -> None:
    outputs = _recorded_outputs()
    assert len(outputs) >= 5
    redactor = Redactor()
    for output in outputs:
        assert redactor(output) == output


def test_real_command_outputs_are_unchanged() -> None:
    outputs = _real_outputs()
    assert {"ps aux", "env", "mount", "/etc/passwd"} <= set(outputs)
    redactor = Redactor()
    for name, output in outputs.items():
        # A process of this machine may hold a password on its command line: that is masked,
        # as it should be; every other line must come through.
        lines = output.splitlines()
        if name == "ps aux":
            lines = [x for x in lines if not re.search(r"pass|token|secret|key", x, re.I)]
        changed = [x for x in lines if redactor(x) != x]
        assert changed == [], name
        text = "\n".join(lines)
        assert redactor(text) == text, name


@pytest.mark.parametrize(
    "mode", [["--non-interactive", "--yes"], ["--non-interactive", "--yes", "--json"]]
)
def test_no_form_reaches_the_screen_the_transcript_or_the_llm(
    llm: ScriptedLLM, cli_env: dict, home: Path, tmp_path: Path, mode: list[str]
) -> None:
    (tmp_path / "forms.txt").write_text("".join(t for t, _, _ in FORMS))
    key = _real_key(tmp_path, "openssh")
    body = [line for line in key.splitlines() if line and not line.startswith("-----")]
    llm.script("[CMD] cat forms.txt", f"[CMD] tac {tmp_path / 'key-openssh'}", "[DONE] seen")
    proc = run_cli(["run", "system-overview", *mode], env=cli_env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    [transcript] = (home / ".local/state/kosmos/runs").glob("*.jsonl")
    copies = {
        "screen": proc.stdout + proc.stderr,
        "transcript": transcript.read_text(),
        "llm": json.dumps([r.body for r in llm.requests]),
    }
    assert "client-key-data" in copies["llm"]  # the output did get there, masked
    for where, text in copies.items():
        for secret in [s for _, s, _ in FORMS] + body:
            assert secret not in text, (where, secret)
