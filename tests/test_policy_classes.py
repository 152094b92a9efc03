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


# Writes that look like reads, on the ports the lock allows (80 and 443 by default): a second
# request smuggled in a header's line break, a body, another method, DNS over https, what
# s_client reads on its stdin. Each with the start of its reason, in the spellings curl 7 and
# wget 1.21 accept: joined, abbreviated (both take an unambiguous prefix), `=` (wget only).
ON_ALLOWED_PORTS = [
    ("curl -H $'X-A: 1\\r\\n\\r\\nPOST /x HTTP/1.1' http://127.0.0.1/", "curl -H $'X-A: 1"),
    ("curl -H$'X-A: 1\\r\\nY: 2' http://127.0.0.1/", "curl -H $'X-A"),
    ("curl -HX-A:1$'\\n'POST http://127.0.0.1/", "curl -H X-A:1$'\\n'POST: a line break"),
    # curl knows no `--option=value` (it refuses to run): a write all the same
    ("curl --header=$'X\\nY' http://127.0.0.1/", "curl --header $'X\\nY': a line break"),
    ("curl --head=$'X\\nY' http://127.0.0.1/", "curl $'X\\nY': a line break"),
    ("curl -H 'X: 1\nPOST /x HTTP/1.1' http://127.0.0.1/", "curl -H 'X: 1\\nPOST"),
    ("curl -A $'a\\r\\nX: y' http://127.0.0.1/", "curl -A"),
    ("curl --user-agent $'a\\r\\nX: y' http://127.0.0.1/", "curl --user-agent"),
    ("curl -e $'a\\r\\nX: y' http://127.0.0.1/", "curl -e"),
    ("curl --referer $'a\\nX: y' http://127.0.0.1/", "curl --referer"),
    ("curl --request-target $'/ HTTP/1.1\\r\\nX: y' http://127.0.0.1/", "curl --request-target"),
    ("curl -b $'a=b\\r\\nX: y' http://127.0.0.1/", "curl -b"),
    ("curl --cookie $'a=b\\r\\nX: y' http://127.0.0.1/", "curl --cookie"),
    ("curl --proxy-header $'X\\r\\nY' -x http://127.0.0.1 http://x/", "curl --proxy-header"),
    ("curl -u $'a\\r\\nX: y' http://127.0.0.1/", "curl -u"),
    ("curl --oauth2-bearer $'t\\r\\nX: y' http://127.0.0.1/", "curl --oauth2-bearer"),
    ("curl -r $'0-1\\r\\nX: y' http://127.0.0.1/", "curl -r"),
    ("curl --connect-to $'a\\nb' http://127.0.0.1/", "curl $'a\\nb': a line break"),
    ('h=x; curl -H "X: $h" http://127.0.0.1/', 'curl -H "X: $h": a header built at run time'),
    ('curl -H "X: $(cat F)" http://127.0.0.1/', "curl -H"),
    ("curl -H @F http://127.0.0.1/", "curl -H @F: reads header lines from a file"),
    ("curl -H @- http://127.0.0.1/ <<< 'X: 1'", "curl -H @-: reads header lines"),
    ("curl -H 'Content-Length: 40' http://127.0.0.1/ http://127.0.0.1/x", "curl -H"),
    ("curl -H 'transfer-encoding: chunked' http://127.0.0.1/", "curl -H"),
    ("curl -H 'X-HTTP-Method-Override: DELETE' http://127.0.0.1/", "curl -H"),
    ("curl --doh-url https://127.0.0.1/api/delete http://example.com/", "curl --doh-url POSTs"),
    ("curl --doh-u https://127.0.0.1/api/delete http://example.com/", "curl --doh-url POSTs"),
    ("curl -d x http://127.0.0.1/", "curl -d sends a body"),
    ("curl -dx http://127.0.0.1/", "curl -d sends a body"),
    ("curl --data-raw x http://127.0.0.1/", "curl -d sends a body"),
    ("curl --data-b x http://127.0.0.1/", "curl -d sends a body"),
    ("curl --data-urlencode x http://127.0.0.1/", "curl -d sends a body"),
    ("curl -G -d a=b http://127.0.0.1/", "curl -d sends a body"),
    ("curl -F a=b http://127.0.0.1/", "curl -F sends a form"),
    ("curl --form-string a=b http://127.0.0.1/", "curl -F sends a form"),
    ("curl --json '{}' http://127.0.0.1/", "curl --json sends a body"),
    ("curl -T F http://127.0.0.1/", "curl -T uploads a file"),
    ("curl --upload-f F http://127.0.0.1/", "curl -T uploads a file"),
    ("curl -X DELETE http://127.0.0.1/", "curl -X DELETE changes"),
    ("curl -XDELETE http://127.0.0.1/", "curl -X DELETE changes"),
    ("curl --request=PUT http://127.0.0.1/", "curl -X PUT changes"),
    ("curl --req PATCH http://127.0.0.1/", "curl -X PATCH changes"),
    ('m=GET; curl -X "$m" http://127.0.0.1/', 'curl -X "$m" changes'),
    ("wget -qO- --header $'X: 1\\r\\nY' http://127.0.0.1/", "wget --header $'X: 1"),
    ("wget -qO- --header=$'X: 1\\r\\nY' http://127.0.0.1/", "wget --header"),
    ("wget -qO- --head=$'X\\nY' http://127.0.0.1/", "wget --header"),
    ("wget -qO- --referer=$'a\\nX: y' http://127.0.0.1/", "wget --referer"),
    ("wget -qO- --user-agent $'a\\nX: y' http://127.0.0.1/", "wget --user-agent"),
    ("wget -qO- -U $'a\\nX: y' http://127.0.0.1/", "wget -U"),
    ("wget -qO- -U$'a\\nX: y' http://127.0.0.1/", "wget -U"),
    ("wget -qO- --user $'a\\nX: y' http://127.0.0.1/", "wget --user"),
    ("wget -qO- --header 'Content-Length: 9' http://127.0.0.1/", "wget --header"),
    ("wget -qO- --post-data=x http://127.0.0.1/", "wget --post-data sends a body"),
    ("wget -qO- --post-d=x http://127.0.0.1/", "wget --post-data sends a body"),
    ("wget -qO- --post-file F http://127.0.0.1/", "wget --post-data sends a body"),
    ("wget -qO- --body-data x --method=PUT http://127.0.0.1/", "wget --body-data sends"),
    ("wget -qO- --body-f F http://127.0.0.1/", "wget --body-data sends"),
    ("wget -qO- --method=DELETE http://127.0.0.1/", "wget --method DELETE changes"),
    ("wget -qO- --meth DELETE http://127.0.0.1/", "wget --method DELETE changes"),
    ("wget -qO- host:path", "wget host:path: only http and https URLs"),
    ("echo 'GET /x' | openssl s_client -quiet -connect 127.0.0.1:443", "openssl s_client sends"),
    ("openssl s_client -connect 127.0.0.1:443 <<< 'GET /x'", "openssl s_client sends"),
    ("openssl s_client -connect 127.0.0.1:443 < F", "openssl s_client sends"),
    ("openssl s_client -connect 127.0.0.1:443 </dev/null <F", "openssl s_client sends"),
    ("echo x | openssl s_client -connect 127.0.0.1:443", "openssl s_client sends"),
    ("openssl s_client -unix /run/x.sock </dev/null", "openssl s_client -unix"),
]
# What stays a read on those ports.
STILL_READS = [
    "curl -H 'X-A: 1' http://127.0.0.1/",
    "curl -HX-A:1 http://127.0.0.1/",
    "curl -H $'X-A: 1' http://127.0.0.1/",
    "curl -H 'Host: example.com' -A kosmos -e http://x/ http://127.0.0.1/",
    "curl --cookie a=b http://127.0.0.1/",
    "curl -u admin:x http://127.0.0.1/",
    "curl -I http://127.0.0.1/",
    "curl -sIL http://127.0.0.1/",
    "curl --head http://127.0.0.1/",
    "curl -X GET http://127.0.0.1/",
    "curl -X HEAD http://127.0.0.1/",
    "curl --request-target /x http://127.0.0.1/",
    "curl -s -o /dev/null -w $'%{http_code}\\n' http://127.0.0.1/",
    "curl -G --url-query a=b http://127.0.0.1/",
    "wget -qO- --header 'X-A: 1' -U kosmos --referer http://x/ http://127.0.0.1/",
    "wget --spider --method=HEAD http://127.0.0.1/",
    "wget -qO- 127.0.0.1:8080/x",
    "openssl s_client -connect 127.0.0.1:443 </dev/null",
    "echo | openssl s_client -connect 127.0.0.1:443 2>/dev/null | openssl x509 -noout -dates",
    "echo Q | timeout 5 openssl s_client -connect 127.0.0.1:443",
]


@pytest.mark.parametrize(("command", "reason"), ON_ALLOWED_PORTS)
def test_writes_on_the_allowed_ports(command: str, reason: str) -> None:
    for dialect in ("bash", "sh", None):
        assert assess(command, dialect).verdict == "write", (dialect, assess(command, dialect))
    assert assess(command, "bash").reason.startswith(reason), assess(command, "bash").reason


@pytest.mark.parametrize("command", STILL_READS)
def test_reads_on_the_allowed_ports_stay_reads(command: str) -> None:
    result = assess(command, "bash")
    assert result.verdict == "read_only", result.reason


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
