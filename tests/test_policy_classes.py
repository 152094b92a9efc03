"""The classes of commands a parser reading option words as written gets wrong.

Every seed of `tests/policy_mutants.py` is a write, but for the few listed here that only
read (an http GET, a TLS handshake, a DNS question to port 53...). The real shells judge
the read-only ones and every respelling of all of them (`tests/test_policy_shells.py`).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kosmos.safety import assess
from kosmos.safety.embedded import sed_writes
from tests.helpers import need
from tests.policy_mutants import SEEDS

READS = {
    "timeout -k 1 1 ls",
    "sed -n -s '1{p;w G' -e '}' F",  # with -e, the first operand is a file, not a script
    "awk 'BEGIN { getline < \"F\"; print }'",
    "awk 'BEGIN{print 1} # ; print > \"G\"'",
    "curl -s http://127.0.0.1:6379/",
    "curl -s 127.0.0.1:6379",
    "curl -sk https://127.0.0.1:6379/",
    "wget -qO- http://127.0.0.1:6379/",
    "openssl s_client -connect 127.0.0.1:443 </dev/null",
    "openssl req -in cert.pem -noout -text",
    "openssl x509 -in cert.pem -noout -subject",
    "dig @127.0.0.1 x",
    "ls ~/.ssh",  # names, not contents
    "cat ~/.ssh/id_rsa.pub",
}
# dash refuses these outright ("Bad substitution"): writes only where bash runs them.
BASH_ONLY = {"a=(1); x='a[$(./evil.sh)]'; echo ${#a[x]}", "x='a[$(./evil.sh)]'; echo ${#x[x]}"}


@pytest.mark.parametrize("command", [c for c in SEEDS if c not in READS])
def test_every_seed_is_a_write(command: str) -> None:
    for dialect in ("bash", None) if command in BASH_ONLY else ("bash", "sh", None):
        result = assess(command, dialect)
        assert result.verdict != "read_only", (dialect, result.reason)


@pytest.mark.parametrize("command", sorted(READS))
def test_the_reads_among_them_stay_reads(command: str) -> None:
    result = assess(command, "bash")
    assert result.verdict == "read_only", result.reason


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("x=i; sed -$x s/a/b/ F", "sed: -$x could expand to an option"),
        ("git config --remove-sec user", "git config changes settings"),
        ("ionice -t sh -c 'rm -rf DIR' ls", "not on the read-only list: rm"),
        ("xxd -C F G", "xxd writes to its second file"),
        ("systemctl --root status disable ssh", "systemctl disable changes the system"),
        ("git stash -m list", "git stash -m is not a read"),
        ("echo touch | xargs -I ls env ls F", "the command name is computed at run time: ls"),
        ("sed -n ':a;w F' G", "sed w writes to a file"),
        ("jobs -x ls", "jobs -x runs a command"),
        ("unset PATH", "unset PATH, which can change what later commands run"),
        (
            "curl gopher://127.0.0.1:6379/_x",
            "curl gopher://127.0.0.1:6379/_x: only http and https URLs are reads",
        ),
        ("exec 3</dev/tcp/h/1", "opens a network connection (< /dev/tcp/h/1)"),
        ("wget -b -O - http://x", "wget -o and -b write a log file"),
    ],
)
def test_the_reason_names_the_rule(command: str, reason: str) -> None:
    assert assess(command, "bash").reason == reason


SED_SCRIPTS = [
    ":a;w F",
    ":a w F",
    "bx;w F",
    "b x;p",
    "/x/b;w F",
    "t;w F",
    "y/a/b/;w F",
    "$!{N};w F",
    "s/a/b/;W F",
    "s/a/b/w F",
    "s/a/b/gpw F",
    "s/a/b/e",
    "s/[/]/x/;w F",
    "s/a/b\\/;w F/",
    "1{p;w F\n}",
    "a text;w F",
    "a\\\ntext;w F",
    "i\\\nx\\\nw F",
    "c\\",
    "#w F",
    "#n\nw F",
    "1e id",
    "e",
    "1~2p;w F",
    "0,/x/p;w F",
    "/x/,+2{p};w F",
    "\\%x%p;w F",
    "l 5;w F",
    "q5;w F",
    "v;w F",
    "F;w G",
    "z;w F",
    "1!G;h;$!d",
    "s/x/y/2;p",
    "/a/I,/b/M{p}",
    "y/abc/xyz/",
    "n;d",
    "s/;/x/;p",
    "s/a/;w F/",
    "y/;/x/;w F",
    "{p};w F",
    "{p;};p",
    "1{;p}",
    "#comment\np",
    "p # w F",
    "p;# w F\nw G",
    "$!N;P;D",
    "/x/{s/a/b/;t end;p;:end\n}",
    "b end ;w F",
    ": a;w F",
    "s/a/b/ ; w F",
    "s/a/b/I;p",
    "s/a/b/M;w F",
    "s,a,b,w F",
    "y,a,b,;w F",
    "/a/!w F",
    "/a/ ! p",
    "=;l;w F",
]


def _sed_refuses(script: str, cwd: Path, *options: str) -> str:
    done = subprocess.run(
        ["sed", *options, "-n", "-e", script, "/dev/null"],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=10,
    )
    return done.stderr if done.returncode else ""


@pytest.mark.parametrize("script", SED_SCRIPTS)
def test_sed_scripts_read_as_gnu_sed_reads_them(script: str, tmp_path: Path) -> None:
    need("sed", "sed")
    # GNU sed's --sandbox refuses a script with e, r or w anywhere in it (these have no r).
    if _sed_refuses(script, tmp_path):
        return  # sed refuses it outright; whatever kosmos says, nothing runs
    writes = "sandbox" in _sed_refuses(script, tmp_path, "--sandbox")
    assert (sed_writes(script) is not None) == writes
