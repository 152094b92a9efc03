"""The secret forms the second review found unmasked (WordPress, Slack, Sentry, cookies, Redis,
`*_KEY=`, LDAP, a folded GitHub token, a bare Vault token) and pieces of a known key: masked
in every copy, however the output is cut into chunks, and never sent to the LLM."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from kosmos.safety import MASK, Redactor
from tests.conftest import run_cli
from tests.llmserver import ScriptedLLM
from tests.test_redact import CHUNK_SIZES, streamed, transcribed

# (text, the secrets that must not survive, the masked text exactly)
FORMS = [
    (
        "define( 'DB_PASSWORD', 'Wp-Db-Pass-42' );\ndefine( 'DB_USER', 'wordpress' );\n",
        ["Wp-Db-Pass-42"],
        f"define( 'DB_PASSWORD', '{MASK}' );\ndefine( 'DB_USER', 'wordpress' );\n",
    ),
    (
        "define('AUTH_KEY',         'q8#Zk!2x@Lm%9vR^t&Yb*Wc(3Nd)4Pe_');\n"
        'define("NONCE_SALT", "a1B2c3D4e5F6g7H8");\n',
        ["q8#Zk!2x@Lm%9vR^t&Yb", "a1B2c3D4e5F6g7H8"],
        f"define('AUTH_KEY',         '{MASK}');\ndefine(\"NONCE_SALT\", \"{MASK}\");\n",
    ),
    (
        "SLACK_HOOK=https://hooks.slack.com/services/T0ABCDEF1/B0ABCDEF2/abcdefGHIJKLmnopQRSTuvwx\n",
        ["abcdefGHIJKLmnopQRSTuvwx", "B0ABCDEF2"],
        f"SLACK_HOOK=https://hooks.slack.com/services/{MASK}\n",
    ),
    (
        "dsn: https://0123456789abcdef0123456789abcdef@o123456.ingest.sentry.io/4504\n",
        ["0123456789abcdef0123456789abcdef"],
        f"dsn: https://{MASK}@o123456.ingest.sentry.io/4504\n",
    ),
    (
        "< Set-Cookie: PHPSESSID=9f8e7d6c5b4a39281706f5e4d3c2b1a0; path=/; HttpOnly\n"
        "< Set-Cookie: lang=en; path=/\n> Cookie: lang=en; laravel_session=eyZmFrZXNlc3Npb24\n",
        ["9f8e7d6c5b4a39281706f5e4d3c2b1a0", "eyZmFrZXNlc3Npb24"],
        f"< Set-Cookie: PHPSESSID={MASK}; path=/; HttpOnly\n"
        f"< Set-Cookie: lang=en; path=/\n> Cookie: lang=en; laravel_session={MASK}\n",
    ),
    (
        "requirepass Redis-Pw-7788\n127.0.0.1:6379> CONFIG GET requirepass\n"
        '1) "requirepass"\n2) "Redis-Next-Line-99"\n$ redis-cli --raw config get masterauth\n'
        "masterauth\nRaw-Next-Line-Pw\n",
        ["Redis-Pw-7788", "Redis-Next-Line-99", "Raw-Next-Line-Pw"],
        f"requirepass {MASK}\n127.0.0.1:6379> CONFIG GET requirepass\n"
        f'1) "requirepass"\n2) "{MASK}"\n$ redis-cli --raw config get masterauth\n'
        f"masterauth\n{MASK}\n",
    ),
    (
        "ENCRYPTION_KEY=c2VjcmV0LWVuY3J5cHRpb24ta2V5\n"
        "APP_KEY=base64:QmFzZTY0QXBwS2V5Rm9yTGFyYXZlbDEyMzQ1Ng==\n"
        "SSH_KEY=/root/.ssh/id_ed25519\nPUBLIC_KEY=AAAAC3NzaC1lZDI1NTE5\n",
        ["c2VjcmV0LWVuY3J5cHRpb24ta2V5", "QmFzZTY0QXBwS2V5"],
        f"ENCRYPTION_KEY={MASK}\nAPP_KEY={MASK}\n"
        "SSH_KEY=/root/.ssh/id_ed25519\nPUBLIC_KEY=AAAAC3NzaC1lZDI1NTE5\n",
    ),
    (
        "/etc/nslcd.conf:12:bindpw S3cr3t-Ldap-Bind\nrootpw Slapd-Root-Pw\n"
        "ldapsearch -x -D cn=admin -w Ldap-W-Pass -b dc=example\n",
        ["S3cr3t-Ldap-Bind", "Slapd-Root-Pw", "Ldap-W-Pass"],
        f"/etc/nslcd.conf:12:bindpw {MASK}\nrootpw {MASK}\n"
        f"ldapsearch -x -D cn=admin -w {MASK} -b dc=example\n",
    ),
    (
        "GITHUB_TOKEN ghp_16C7e42F292c691\n2E7710c838347Ae178B4a\n",
        ["16C7e42F", "2E7710c838347Ae178B4a"],
        f"GITHUB_TOKEN ghp_{MASK}\n{MASK}\n",
    ),
    (
        "vault login s.AbCdEfGhIjKlMnOpQrStUvWx12\nsee docs.readthedocs.io/en/latest/index.html\n",
        ["AbCdEfGhIjKlMnOpQrStUvWx12"],
        f"vault login s.{MASK}\nsee docs.readthedocs.io/en/latest/index.html\n",
    ),
]


@pytest.mark.parametrize(("text", "secrets", "masked"), FORMS)
def test_each_new_form_is_masked_and_its_label_stays(
    text: str, secrets: list[str], masked: str
) -> None:
    redactor = Redactor()
    assert redactor(text) == masked
    assert not any(s in masked for s in secrets)
    assert redactor(masked) == masked


@pytest.mark.parametrize("size", CHUNK_SIZES)
def test_each_new_form_is_masked_on_screen_and_in_the_transcript_however_it_streams(
    size: int, tmp_path: Path
) -> None:
    redactor = Redactor()
    text = "$ cat things\n" + "".join(t for t, _, _ in FORMS) + "$ echo done\ndone\n"
    screen = streamed(redactor, text, size)
    transcript = transcribed(redactor, text, tmp_path / "t.jsonl")
    for _, secrets, _ in FORMS:
        for secret in secrets:
            assert secret not in screen, secret
            assert secret not in transcript, secret
    assert screen == redactor(text)


KEY = "sk-proj-Q7wErT9yUiOp3AsDfGh5JkLz8XcVbNm1"


def _pieces(key: str) -> list[str]:
    """Every run of 12 characters of `key` and of it reversed."""
    return [form[i : i + 12] for form in (key, key[::-1]) for i in range(len(form) - 11)]


@pytest.mark.parametrize(
    "printed",
    [
        ["cut", "-c", "20-"],  # its tail
        ["cut", "-c", "12-30"],  # a middle
        ["rev"],
        ["fold", "-w", "7"],  # over lines, each shorter than a run
        ["sed", "s/./& /g"],  # blanks between its characters
        ["sh", "-c", "head -c 25; echo; cat"],  # split over two lines
    ],
)
def test_any_run_of_twelve_characters_of_a_known_key_is_masked(
    printed: list[str], tmp_path: Path
) -> None:
    output = subprocess.run(
        printed, input=f"api_key {KEY}\n", capture_output=True, text=True, check=True
    ).stdout
    text = f"before\n{output}after\n"
    redactor = Redactor([KEY])
    clean = redactor(text)
    squeezed = "".join(clean.split())
    assert not any(piece in squeezed for piece in _pieces(KEY)), clean
    assert clean.startswith("before\n") and clean.endswith("after\n")
    assert MASK in clean
    # eleven characters are not a run: ordinary text that shares a few stays
    assert redactor(f"x {KEY[3:14]} y") == f"x {KEY[3:14]} y"


def test_the_seal_key_given_is_masked_in_part_too() -> None:
    seal = "seal-0123456789abcdefFEDCBA9876543210"
    redactor = Redactor([seal])
    assert redactor(f"tail {seal[-14:]}") == f"tail {MASK}"


@pytest.mark.parametrize("mode", [["--non-interactive", "--yes"], ["--json", "--yes"]])
def test_no_new_form_nor_a_piece_of_the_key_reaches_the_llm_or_the_transcript(
    llm: ScriptedLLM, cli_env: dict, home: Path, tmp_path: Path, mode: list[str]
) -> None:
    (tmp_path / "forms.txt").write_text("".join(t for t, _, _ in FORMS))
    (tmp_path / "key.txt").write_text(f"key {KEY}\n")
    cli_env["KOSMOS_API_KEY"] = KEY
    llm.script(
        "[CMD] cat forms.txt",
        "[CMD] rev key.txt",
        "[CMD] cut -c 20- key.txt; fold -w 5 key.txt",
        "[DONE] seen",
    )
    proc = run_cli(["run", "system-overview", *mode], env=cli_env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    [transcript] = (home / ".local/state/kosmos/runs").glob("*.jsonl")
    copies = {
        "screen": proc.stdout + proc.stderr,
        "transcript": transcript.read_text(),
        "llm": json.dumps([r.body for r in llm.requests[1:]]),
    }
    assert "hooks.slack.com" in copies["llm"]  # the output did get there, masked
    for where, text in copies.items():
        for _, secrets, _ in FORMS:
            for secret in secrets:
                assert secret not in text, (where, secret)
        squeezed = "".join(text.replace("\\n", "\n").split())
        assert not any(p in squeezed for p in _pieces(KEY)), where
