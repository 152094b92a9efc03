"""kosmos.safety.redact: secrets never reach the LLM, transcripts, logs or the screen."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kosmos.engine.guard import LineRedactor, redact_event
from kosmos.events import CommandFinished
from kosmos.safety import MASK, Redactor
from kosmos.safety.secret_patterns import TOKENS
from kosmos.transcript import Transcript, read_transcript

# Streamed output arrives in chunks of any size: one byte, a few, a whole read.
CHUNK_SIZES = [1, 7, 4096]


def streamed(redactor: Redactor, text: str, size: int) -> str:
    """What the screen shows of `text` when it arrives in chunks of `size` characters."""
    lines = LineRedactor(redactor)
    shown = [lines.feed(text[i : i + size]) for i in range(0, len(text), size)]
    return "".join(shown) + lines.flush()


def transcribed(redactor: Redactor, text: str, path: Path) -> str:
    """The transcript's record of a command that printed `text`."""
    event = CommandFinished(
        step=1,
        command="cat",
        exit_code=0,
        duration_s=0.1,
        bytes=len(text),
        output=text,
        sent_to_llm=redactor(text),
    )
    writer = Transcript(path)
    writer.write(redact_event(event, redactor))
    writer.close()
    (kept,) = read_transcript(path)
    assert isinstance(kept, CommandFinished)
    return f"{kept.output}\n{kept.sent_to_llm}"


# Canaries: each line holds one secret (the second item) that must not survive redaction,
# and the label (the third item) that must.
CANARIES = [
    ("export OPENAI_API_KEY=sk-proj-Abc123Def456Ghi789Jkl0", "Abc123Def456Ghi789Jkl0", "sk-"),
    ("key id: AKIAIOSFODNN7EXAMPLE", "IOSFODNN7EXAMPLE", "key id: AKIA"),
    ("session ASIAY34FZKBOKMUTVV7A here", "Y34FZKBOKMUTVV7A", "session ASIA"),
    (
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "aws_secret_access_key = ",
    ),
    (
        "maps key AIzaSyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI",
        "SyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI",
        "AIza",
    ),
    (
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=Zm9vYmFy+/a1b2c3==;"
        "EndpointSuffix=core.windows.net",
        "Zm9vYmFy+/a1b2c3==",
        "AccountKey=",
    ),
    ("Authorization: Bearer abc123.def456.ghi789", "abc123.def456.ghi789", "Bearer "),
    ("Authorization: Basic dXNlcjpodW50ZXIy", "dXNlcjpodW50ZXIy", "Authorization: Basic "),
    (
        "token ghp_16C7e42F292c6912E7710c838347Ae178B4a",
        "16C7e42F292c6912E7710c838347Ae178B4a",
        "ghp_",
    ),
    ("gho_16C7e42F292c6912E7710c838347Ae178B4a", "16C7e42F292c6912E7710c838347Ae178B4a", "gho_"),
    (
        "github_pat_11ABCDEFG0abcdefghijkl_mnopqrstuvwxyz0123456789ABCDEFGHIJ",
        "11ABCDEFG0abcdefghijkl_mnopqrstuvwxyz0123456789ABCDEFGHIJ",
        "github_pat_",
    ),
    ("GITLAB=glpat-x1y2z3a4b5c6d7e8f9g0", "x1y2z3a4b5c6d7e8f9g0", "glpat-"),
    ("slack xoxb-2345678901-abcdefghijKLMN", "2345678901-abcdefghijKLMN", "xoxb-"),
    ("stripe sk_live_51HabcdEFGHijkl0123", "51HabcdEFGHijkl0123", "sk_live_"),
    (
        "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "jwt ",
    ),
    ("git clone https://alice:pa55w0rd@git.example.com/r.git", "pa55w0rd", "https://alice:"),
    ("REDIS_URL=redis://:r3d1spass@localhost:6379/0", "r3d1spass", "redis://:"),
    ("password=hunter2hunter", "hunter2hunter", "password="),
    ("DB_PASSWORD: 'c0rrect horse'", "c0rrect horse", "DB_PASSWORD: '"),
    ('{"password": "p@ss \\"w0rd\\"", "user": "bob"}', 'p@ss \\"w0rd\\"', '"password": "'),
    ("client_secret=Xyz-987_secret", "Xyz-987_secret", "client_secret="),
    ("api_key: abcd1234efgh", "abcd1234efgh", "api_key: "),
    ("PGPASSWORD=pgsecret99 psql -h db", "pgsecret99", "PGPASSWORD="),
    ("mysql_pwd=Sup3rPwd9", "Sup3rPwd9", "mysql_pwd="),
    ("password: none-of-your-business", "none-of-your-business", "password: "),
    ("apikey=0123abcd4567", "0123abcd4567", "apikey="),
    ("x-auth: tkn-123-456", "tkn-123-456", "x-auth: "),
    ("curl -u admin:S3cretAdm1n https://x", "S3cretAdm1n", "curl -u admin:"),
    ("mysql -u root -pMyS3cret shop", "MyS3cret", "-p"),
    ("app --password Sup3rS3cret --verbose", "Sup3rS3cret", "--password "),
    ("<password>xmlsecret1</password>", "xmlsecret1", "<password>"),
    # Django and Flask settings, Rails' secret_key_base
    ("SECRET_KEY = 'django-insecure-8f#x0z!q2w'", "django-insecure-8f#x0z!q2w", "SECRET_KEY = '"),
    ('app.config["SECRET_KEY"] = "Zq8-flask-s3cret"', "Zq8-flask-s3cret", '"SECRET_KEY"] = "'),
    ("  secret_key_base: 9e1c3b7d0a4f", "9e1c3b7d0a4f", "secret_key_base: "),
    # .netrc, on one line or one entry a line
    ("machine api.example.com login alice password hunter2x", "hunter2x", "login alice password "),
    ("machine h password Xy9-netrc login u", "Xy9-netrc", "machine h password "),
    ("default login anonymous password guest@example.com", "guest@example.com", "password "),
    ("  password 01234567-89ab-cdef-0123-456789abcdef", "01234567-89ab-cdef", "  password "),
    # redis.conf, grep's view of it, the server's flags, CONFIG SET
    ("requirepass foobared2024", "foobared2024", "requirepass "),
    ("masterauth Rep1icaS3cret", "Rep1icaS3cret", "masterauth "),
    ("/etc/redis/redis.conf:1036:requirepass 'quoted s3cret'", "quoted s3cret", ":requirepass "),
    ("redis-server --requirepass S3cretRedis --port 6380", "S3cretRedis", "--requirepass "),
    ("redis-cli CONFIG SET masterauth n3wpass", "n3wpass", "CONFIG SET masterauth "),
    # a Kubernetes Secret, as YAML and as JSON
    ("  tls.key: LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0tCk1JSUV2", "LS0tLS1CRUdJTiBQ", "tls.key: "),
    ('"server.key": "TUlJRXZnSUJBREFOQmdrcWhraUc5dzBC"', "TUlJRXZnSUJBREFO", '"server.key": "'),
    ("  db-password: c2VjcmV0cGFzcw==", "c2VjcmV0cGFzcw==", "db-password: "),
    ("  api.token: dG9rZW4tdmFsdWU=", "dG9rZW4tdmFsdWU=", "api.token: "),
    # password hashes: crypt(3) in all its forms, htpasswd, LDAP
    ("root:$1$saltsalt$ZliGyAN3DciDHEkDboonh/:19000:0:99999:7:::", "ZliGyAN3", "root:"),
    (
        "root:$5$saltsalt$OIdfjX.u4Y3SJ4I2bX8w5BMf1VAUhHABNUirScDzZi3:19000:0:99999:7:::",
        "OIdfjX.u4Y3SJ4I2",
        ":19000:0:99999:7:::",
    ),
    (
        "root:$6$saltsalt$8iYtNHxjWRl.NF6oNZ5tF.iKFlQREaXBLlSmZKP6dy9l5z3vsooWNW0/GZ6Nej73/"
        "TFug6pIPSqbJoCT6dfnj.:19000:0:99999:7:::",
        "8iYtNHxjWRl",
        "root:",
    ),
    (
        "alice:$y$j9T$F5Jx5fExrKuPp53xLKQ..1$PmNgGTLMFjJn.URBv11CpTEm5RwlKtPjRtztKe6.b33:19500::::::",
        "PmNgGTLMFjJn",
        "alice:",
    ),
    (
        "bob:!$gy$j9T$F5Jx5fExrKuPp53xLKQ..1$pqxNhMZNzEpH0BE7/ZudIY41.ZuRdHUEOOaWBy5Vls9:19500:0:::::",
        "pqxNhMZNzEpH",
        "bob:!",
    ),
    (
        "hash: $7$CU..../....2T6SXQJsCCVZPgwAyFsjC1$ASHns..aU47/fYrDTIddvl62ttyylCJuFUhGwQOu9TC",
        "ASHns..aU47",
        "hash: ",
    ),
    (
        "admin:$2y$05$abcdefghijklmnopqrstuuoXuKqgZXLiJqzfmMXDDhSFPIvxV7t8.",
        "oXuKqgZXLiJq",
        "admin:",
    ),
    (
        "UPDATE users SET hash='$2b$05$abcdefghijklmnopqrstuuoXuKqgZXLiJqzfmMXDDhSFPIvxV7t8.'",
        "oXuKqgZXLiJq",
        "hash='",
    ),
    ('{"hash": "$2a$05$abcdefghijklmnopqrstuuoXuKqgZXLiJqzfmMXDDhSFPIvxV7t8."}', "oXuKqg", "{"),
    (
        "argon2: $argon2id$v=19$m=65536,t=2,p=1$gZiV/M1gPc22ElAH/Jh1Hw$CWOrkoo7oJBQ/iyh7uJ0LO2aLEfrHwTWllSAxT0zRno",
        "CWOrkoo7oJBQ",
        "argon2: ",
    ),
    ("alice:$apr1$saltsalt$r/QcFGT5pNL28bNkeDMHR.", "r/QcFGT5pNL28bNkeDMHR.", "alice:"),
    ("carol:{SHA}87u9ZqY9S/F0eUBXjsPQEDUw4h0=", "87u9ZqY9S/F0eUBXjsPQEDUw4h0=", "carol:"),
]


@pytest.mark.parametrize(("text", "secret", "label"), CANARIES)
def test_canary_secrets_are_masked_and_their_label_stays(
    text: str, secret: str, label: str
) -> None:
    out = Redactor()(text)
    assert secret not in out
    assert MASK in out
    assert label in out


def test_every_token_pattern_compiles_and_masks_once_used() -> None:
    # The table's patterns compile when a text first holds one of their hints: a broken one
    # must fail here, not in the middle of a run.
    for _, pattern, _ in TOKENS:
        re.compile(pattern.pattern)
    redactor = Redactor()
    key = "ghp_" + "a1B2c3D4" * 4
    assert redactor(f"token {key} end") == f"token ghp_{MASK} end"
    assert redactor(f"again {key}") == f"again ghp_{MASK}"


@pytest.mark.parametrize(
    "text",
    [
        "/usr/local/bin/kosmos --config /etc/kosmos/config.yaml",
        "commit 3f2a9c1b7e4d5f6a8b9c0d1e2f3a4b5c6d7e8f90\nAuthor: Alice <alice@example.com>",
        "HEAD is now at 3f2a9c1 Fix the token refresh",
        "UUID=123e4567-e89b-12d3-a456-426614174000 /data ext4 defaults 0 2",
        "openssl genrsa: key_size=2048 max_tokens=512 tokenizer: bpe",
        "/etc/passwd:root:x:0:0:root:/root:/bin/bash",
        "PWD=/home/alice\nOLDPWD=/tmp\nSSH_AUTH_SOCK=/tmp/ssh-XYZ/agent.42",
        "[sudo] password for alice:",
        "Password: ",
        "sshd: PasswordAuthentication no\nPubkeyAuthentication yes",
        "def login(password: str, token: str | None = None) -> bool:",
        'token = os.environ["TOKEN"]\npassword=getpass()\nclient.login(password=password)',
        "PGPASSWORD=$PW psql -h db; api_key: ${API_KEY}",
        '{"password": null, "token": {"type": "string"}}',
        "the Bearer authentication scheme, see RFC 6750",
        "ls -l /dev/disk/by-uuid/ && echo sk-learn",
        "http://localhost:8080/api/v1/items?page=2&sort=asc",
        "ssh://git@github.com:22/org/repo.git",
        "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----",
        "bypass=1 author=alice tokens=3 passwords_file=/run/pw",
        # shell variables and positional parameters, prices
        'echo "$HOME" $USER; awk \'{print $1}\' f; echo "$1$2$3"; cp "$1" "$2"',
        'for f in "$@"; do printf \'%s\\n\' "$1$f"; done; x=$((a$1+$5))',
        "price $5, or $6 with tax; $1 off; $7 shipping; $2a$ is not a hash",
        "sha256:3f2a9c1b7e4d5f6a8b9c0d1e2f3a4b5c6d7e8f903f2a9c1b7e4d5f6a8b9c0d1e",
        # /etc/passwd, and /etc/shadow entries without a password hash
        "alice:x:1000:1000:Alice,,,:/home/alice:/bin/bash",
        "daemon:*:19000:0:99999:7:::\nalice:!:19000:0:99999:7:::\nbob:!!:19000::::::",
        "carol:!*:19000:0:99999:7:::\ndave::19000:0:99999:7:::",
        # Kubernetes: a certificate, a size, a path
        "  tls.crt: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJz",
        "tls.key:  1704 bytes\nssl_certificate_key /etc/ssl/private/server.key;",
        "server.key: /etc/ssl/private/server.key",
        "SECRET_KEY_FILE=/run/secrets/django secretKeyRef: {name: app}",
        # the word password with no value that looks like one
        "Forgot your password? Reset it here.",
        "Changing password for alice.\nThe password is stored in the vault.",
        "password   required   pam_unix.so obscure yescrypt\n@include common-password",
        "by default the password is changeme",
        # redis.conf's own prose
        '# If the master is password protected (using the "requirepass" configuration',
        "# The requirepass is not compatible with aclfile option and the ACL LOAD",
    ],
)
def test_ordinary_text_is_unchanged(text: str) -> None:
    assert Redactor()(text) == text


def test_literal_secrets_longest_first() -> None:
    redact = Redactor(["abcd1234", "abcd1234-suffix-xyz"])
    out = redact("key=zz abcd1234-suffix-xyz and abcd1234 ok")
    assert "suffix" not in out
    assert "xyz" not in out
    assert "abcd1234" not in out
    assert out == f"key=zz {MASK} and {MASK} ok"


def test_add_masks_a_password_typed_at_run_time() -> None:
    redact = Redactor()
    assert redact("echo Tr0ub4dor") == "echo Tr0ub4dor"
    redact.add("Tr0ub4dor")
    assert redact("echo Tr0ub4dor") == f"echo {MASK}"


def test_short_secrets_are_ignored() -> None:
    redact = Redactor(["abc", "", "      "])
    redact.add("xy")
    assert redact("abc xy and a cabbage      ") == "abc xy and a cabbage      "


def test_a_secret_is_also_masked_percent_encoded() -> None:
    redact = Redactor(["p@ss:w/rd"])
    out = redact("https://x.example/login?pw=p%40ss%3Aw%2Frd and p@ss:w/rd")
    assert "p%40ss" not in out
    assert "p@ss" not in out


def test_environment_secrets_by_name() -> None:
    env = {
        "OPENAI_API_KEY": "opaque-value-1111",
        "MY_APP_TOKEN": "opaque-value-2222",
        "DB_PASS": "opaque-value-3333",
        "AWS_SECRET_ACCESS_KEY": "opaque-value-4444",
        "GOOGLE_CREDENTIALS_JSON": "opaque-value-5555",
        "PRIVATE_SIGNING": "opaque-value-6666",
        "AUTH_HEADER": "opaque-value-7777",
        # not secrets
        "HOME": "/home/alice",
        "SSH_AUTH_SOCK": "/tmp/ssh-XYZ/agent.42",
        "GIT_ASKPASS": "/usr/lib/git-core/git-gui--askpass",
        "KEY_FILE": "/etc/app/key.pem",
        "TOKEN_TTL": "3600",
        "API_KEY": "short",
        "SSH_KEY_PATH": "/home/alice/.ssh/id_ed25519",
    }
    redact = Redactor(env=env)
    text = "\n".join(f"{k}={v}" for k, v in env.items())
    out = redact(text)
    for n in range(1, 8):
        assert f"opaque-value-{n}" * 1 not in out
    for kept in ("/home/alice", "/tmp/ssh-XYZ/agent.42", "git-gui--askpass", "/etc/app/key.pem"):
        assert kept in out
    assert "TOKEN_TTL=3600" in out


PRIVATE_KEY = """-----BEGIN OPENSSH PRIVATE KEY-----
b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW
QyNTUxOQAAACDcanaryCANARYcanaryCANARYcanaryCANARYcanaryAAAAAAAAAAAA
-----END OPENSSH PRIVATE KEY-----"""


@pytest.mark.parametrize("kind", ["OPENSSH", "RSA", "EC", "ENCRYPTED", ""])
def test_private_key_block_is_masked(kind: str) -> None:
    label = f"{kind} PRIVATE KEY".strip()
    block = PRIVATE_KEY.replace("OPENSSH PRIVATE KEY", label)
    out = Redactor()(f"$ cat key\n{block}\n$ echo done")
    assert "canaryCANARY" not in out
    assert "b3BlbnNzaC1rZXkt" not in out
    assert f"-----BEGIN {label}-----{MASK}-----END {label}-----" in out
    assert out.startswith("$ cat key\n")
    assert out.endswith("\n$ echo done")


def test_private_key_without_end_is_masked_to_the_end() -> None:
    cut = PRIVATE_KEY.rsplit("\n", 1)[0] + "\n[... 40 lines cut ...]\nmore secret base64"
    out = Redactor()("before\n" + cut)
    assert out == f"before\n-----BEGIN OPENSSH PRIVATE KEY-----{MASK}"


def test_private_key_tail_without_begin_is_masked() -> None:
    tail = PRIVATE_KEY.split("\n", 1)[1]
    out = Redactor()("[... cut ...]\n" + tail)
    assert "canaryCANARY" not in out
    assert out.endswith(f"{MASK}\n-----END OPENSSH PRIVATE KEY-----")


def test_putty_private_lines_are_masked() -> None:
    text = (
        "PuTTY-User-Key-File-3: ssh-ed25519\nPrivate-Lines: 1\nAAAAIcanaryCANARY\nPrivate-MAC: ab"
    )
    out = Redactor()(text)
    assert "canaryCANARY" not in out
    assert "Private-MAC: ab" in out


def test_redact_obj_walks_nested_payloads() -> None:
    redact = Redactor(["literal-secret-1"])
    payload = {
        "type": "command_finished",
        "output": "token=abc123xyz and literal-secret-1",
        "steps": [
            {"command": "curl -H 'Authorization: Bearer t0k3n123456' x", "exit_code": 0},
            ("tuple", "literal-secret-1"),
        ],
        "headers": {"Authorization": "Basic dXNlcjpwYXNz", "password": "pw-in-a-field"},
        "usage": {"prompt_tokens": 12, "max_tokens": 512, "token": 5},
        "none": None,
    }
    out = redact.redact_obj(payload)
    flat = repr(out)
    for secret in ("abc123xyz", "literal-secret-1", "t0k3n123456", "dXNlcjpwYXNz", "pw-in-a-field"):
        assert secret not in flat
    assert out["headers"] == {"Authorization": MASK, "password": MASK}
    assert out["usage"] == {"prompt_tokens": 12, "max_tokens": 512, "token": 5}
    assert out["steps"][0]["exit_code"] == 0
    assert isinstance(out["steps"][1], tuple)
    assert out["none"] is None
    assert payload["output"] == "token=abc123xyz and literal-secret-1"  # input untouched


def test_redaction_is_idempotent() -> None:
    redact = Redactor(["literal-secret-1"])
    text = "\n".join(t for t, _, _ in CANARIES) + "\nliteral-secret-1"
    once = redact(text)
    assert redact(once) == once


def test_empty_text() -> None:
    assert Redactor()("") == ""


def test_long_texts_are_redacted_line_by_line_with_the_same_result() -> None:
    lines = [
        "GET /health 200",
        "Authorization: Bearer abcdef0123456789xyz",
        "aws key AKIAABCDEFGHIJKLMNOP in use",
        "dsn=postgres://app:s3cretpw@db:5432/app",
        "token ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        "plain line with nothing",
    ]
    text = "\n".join(lines * 200)
    assert len(text) > 4096
    r = Redactor()
    assert r(text) == "\n".join(r(line) for line in lines * 200)
    assert "s3cretpw" not in r(text) and "AKIAABCDEFGHIJKLMNOP" not in r(text)


@pytest.mark.parametrize("first", ["", "İstanbul: lower() makes this line longer\n"])
def test_long_texts_mask_every_canary_as_its_line_alone_does(first: str) -> None:
    """Past 4 KiB, patterns run only on the lines that hold their hints: none is missed."""
    lines = [text for text, _, _ in CANARIES] + ["plain line with nothing"] * 10
    text = first + "\n".join(lines * 20)
    assert len(text) > 4096
    r = Redactor()
    assert r(text) == "\n".join(r(line) for line in text.split("\n"))


def test_a_secret_added_later_masks_text_seen_before() -> None:
    redactor = Redactor()
    line = "login ok for hunter2-Zq9 at 10:02"
    assert redactor(line) == line
    redactor.add("hunter2-Zq9")
    assert redactor(line) == f"login ok for {MASK} at 10:02"
    assert redactor(line) == f"login ok for {MASK} at 10:02"


KEY_LINES = PRIVATE_KEY.split("\n")[1:-1]


@pytest.mark.parametrize("size", CHUNK_SIZES)
def test_a_key_block_streamed_in_chunks_is_masked_on_screen_and_in_the_transcript(
    size: int, tmp_path: Path
) -> None:
    redactor = Redactor()
    text = f"$ cat key\n{PRIVATE_KEY}\n$ cat other\n{PRIVATE_KEY.replace('OPENSSH', 'RSA')}\nok\n"
    screen = streamed(redactor, text, size)
    transcript = transcribed(redactor, text, tmp_path / "t.jsonl")
    for line in KEY_LINES:
        assert line not in screen
        assert line not in transcript
    # However it was cut, the screen shows what redacting the whole output shows.
    assert screen == redactor(text)
    assert screen.endswith(
        f"-----BEGIN RSA PRIVATE KEY-----{MASK}-----END RSA PRIVATE KEY-----\nok\n"
    )


@pytest.mark.parametrize("size", CHUNK_SIZES)
def test_a_streamed_key_without_its_end_is_masked_to_the_end(size: int) -> None:
    redactor = Redactor()
    text = "before\n" + PRIVATE_KEY.rsplit("\n", 1)[0] + "\n[... 40 lines cut ...]\nmore"
    screen = streamed(redactor, text, size)
    assert screen == f"before\n-----BEGIN OPENSSH PRIVATE KEY-----{MASK}"


@pytest.mark.parametrize("size", CHUNK_SIZES)
def test_putty_private_lines_streamed_in_chunks_are_masked(size: int, tmp_path: Path) -> None:
    redactor = Redactor()
    text = (
        "PuTTY-User-Key-File-3: ssh-rsa\nPublic-Lines: 1\nAAAAB3NzaC1yc2E\n"
        "Private-Lines: 3\nAAAIcanaryCANARY1\nAAAIcanaryCANARY2\r\nAAAIcanaryCANARY3\n"
        "Private-MAC: ab\n"
    )
    screen = streamed(redactor, text, size)
    transcript = transcribed(redactor, text, tmp_path / "t.jsonl")
    assert "canaryCANARY" not in screen and "canaryCANARY" not in transcript
    assert screen == redactor(text)
    assert "Private-Lines: 3\n[REDACTED]\nPrivate-MAC: ab\n" in screen


@pytest.mark.parametrize("size", CHUNK_SIZES)
def test_a_key_on_one_long_line_is_masked_when_the_line_is_shown_in_parts(size: int) -> None:
    """A line too long to wait for is shown in parts; a BEGIN line is never cut in two."""
    body = "\\n".join(KEY_LINES)
    for lead in range(4040, 4100, 7):  # the BEGIN line straddles where the line is cut
        text = (
            "a" * lead
            + "-----BEGIN PRIVATE KEY-----\\n"
            + body
            + "\\n-----END PRIVATE KEY-----"
            + "b" * 5000
            + "\nnext\n"
        )
        screen = streamed(Redactor(), text, size)
        assert "canaryCANARY" not in screen and "b3BlbnNzaC1rZXkt" not in screen
        assert screen.endswith("b" * 5000 + "\nnext\n")


def test_redacting_a_masked_putty_key_again_changes_nothing() -> None:
    redactor = Redactor()
    once = redactor("Private-Lines: 1\nAAAAIcanaryCANARY\nPrivate-MAC: ab")
    assert once == f"Private-Lines: 1\n{MASK}\nPrivate-MAC: ab"
    assert redactor(once) == once


# Lines whose masked form is known exactly: the label and the rest of the line stay.
EXACT = [
    ("machine h login u password x", f"machine h login u password {MASK}"),
    ("machine h\n  login u\n  password x\n", f"machine h\n  login u\n  password {MASK}\n"),
    ("requirepass x", f"requirepass {MASK}"),
    ("# requirepass foobared", f"# requirepass {MASK}"),
    ('masterauth "two words"', f"masterauth {MASK}"),
    ("SECRET_KEY = 'abc'", f"SECRET_KEY = '{MASK}'"),
    (
        "root:$6$saltsalt$8iYtNHxjWRl.NF6oNZ5tF.iKFlQREaXBLlSmZKP6dy9l5z3vsooWNW0/GZ6Nej73/"
        "TFug6pIPSqbJoCT6dfnj.:19000:0:99999:7:::",
        f"root:{MASK}:19000:0:99999:7:::",
    ),
    (
        "/etc/shadow:bob:!$1$saltsalt$ZliGyAN3DciDHEkDboonh/:19000:0:99999:7:::",
        f"/etc/shadow:bob:!{MASK}:19000:0:99999:7:::",
    ),
    ("alice:$apr1$saltsalt$r/QcFGT5pNL28bNkeDMHR.", f"alice:{MASK}"),
    ("carol:{SHA}87u9ZqY9S/F0eUBXjsPQEDUw4h0=", f"carol:{MASK}"),
    (
        "admin:$2y$05$abcdefghijklmnopqrstuuoXuKqgZXLiJqzfmMXDDhSFPIvxV7t8.",
        f"admin:{MASK}",
    ),
    (
        "data:\n  tls.crt: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t\n"
        "  tls.key: LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0t\nkind: Secret",
        f"data:\n  tls.crt: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t\n  tls.key: {MASK}\nkind: Secret",
    ),
]


@pytest.mark.parametrize(("text", "masked"), EXACT)
def test_what_stays_visible_around_a_masked_value(text: str, masked: str) -> None:
    assert Redactor()(text) == masked


@pytest.mark.parametrize("size", CHUNK_SIZES)
@pytest.mark.parametrize(("text", "secret", "label"), CANARIES)
def test_canary_secrets_streamed_in_chunks_are_masked_on_screen_and_in_the_transcript(
    text: str, secret: str, label: str, size: int, tmp_path: Path
) -> None:
    redactor = Redactor()
    output = f"$ cat settings\n{text}\n$ echo done\ndone\n"
    screen = streamed(redactor, output, size)
    transcript = transcribed(redactor, output, tmp_path / "t.jsonl")
    assert secret not in screen
    assert secret not in transcript
    assert label in screen and MASK in screen
    assert screen.endswith("\n$ echo done\ndone\n")


@pytest.mark.parametrize("size", CHUNK_SIZES)
def test_exact_masks_hold_when_streamed_in_chunks(size: int) -> None:
    redactor = Redactor()
    output = "\n".join(text for text, _ in EXACT) + "\n"
    assert streamed(redactor, output, size) == "\n".join(m for _, m in EXACT) + "\n"
