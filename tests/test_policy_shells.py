"""The approval policy against real shells: every read-only verdict must hold in bash and dash.

Each command of the corpus (tests/policy_corpus.py) that the policy rates read-only for a
dialect is run under that dialect's real shell (bash for `bash`, dash for `sh`) as a
throwaway unprivileged user, in a scratch directory full of canaries, traced, inside a
network namespace that answers every address (tests/shelljudge.py). It must change no file,
create none, start no program that is off the policy's read-only list, and reach nothing:
no TCP but an http or https read, no datagram but DNS, no bind, no listen, no netlink change,
and no local service's unix socket unless the verdict says it reads through one. A fast
sample runs always; the whole corpus runs with `-m corpus` (CI does).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from kosmos.safety import assess, read_only_programs
from tests.policy_corpus import KNOWN, SH_ONLY, corpus, same_words, sample
from tests.shelljudge import Outcome, ShellJudge

DIALECTS = {"bash": "bash", "dash": "sh"}


@pytest.fixture(scope="module")
def judge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ShellJudge]:
    """The judge; skipped where a program it runs is missing (`need`), or without root."""
    if os.geteuid() != 0:
        why = "needs root to run commands as a throwaway user"
        if os.environ.get("KOSMOS_REQUIRE_SSHD") == "1":
            pytest.fail(f"the shell judge must run here: {why}")
        pytest.skip(why)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    judge = ShellJudge(tmp_path_factory.mktemp("shells"), worker)
    try:
        yield judge
    finally:
        judge.close()


# Programs that a named program starts on its own (zgrep is a script around gzip and grep).
HELPERS = {
    "xargs": ("echo",),
    "watch": ("sh",),
    "apt": ("dpkg",),
    "apt-cache": ("dpkg",),
    "dpkg": ("dpkg-query",),
    "service": ("basename", "systemctl", "sed", "env", "ls", "grep", "sort"),
    **dict.fromkeys(("zcat", "zgrep", "zegrep", "zfgrep", "gunzip"), ("gzip", "grep", "sed")),
    **dict.fromkeys(("bzgrep", "bzcat"), ("bzip2", "grep", "sed")),
    **dict.fromkeys(("xzgrep", "xzcat", "lzcat"), ("xz", "grep", "sed")),
}


def _unnamed(outcome: Outcome) -> list[str]:
    """Programs that started though the command names them nowhere."""
    named = set(re.split(r"[\s;|&()<>'\"`$\\{}=,:/]+", outcome.command))
    named |= {h for n in named for h in HELPERS.get(n, ())}
    return sorted({n for n in outcome.names() if n not in named})


def _failure(outcome: Outcome, allowed: frozenset[str], service: bool) -> str | None:
    strangers = sorted({n for n in outcome.names() if n not in allowed})
    strangers += sorted(set(outcome.strangers())) + _unnamed(outcome)
    what = outcome.changed[:3] + [f"ran {n}" for n in strangers[:3]] + outcome.reaches[:3]
    if not service:
        what += [f"reaches {s} (not marked as a service read)" for s in outcome.services[:3]]
    if not what:
        return None
    return f"{outcome.shell}: {outcome.command!r}: {', '.join(what)}"


def judge_all(judge: ShellJudge, commands: list[str]) -> tuple[dict[str, int], list[str]]:
    """Run every read-only verdict in its shell; return the counts and the failures."""
    allowed = read_only_programs()
    jobs = []
    for command in commands:
        for shell, dialect in DIALECTS.items():
            verdict = assess(command, dialect)
            if verdict.verdict == "read_only":
                jobs.append((command, shell, verdict.service))
    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(lambda job: judge.run(job[0], job[1]), jobs))
    failures = [
        f
        for f in (_failure(o, allowed, job[2]) for o, job in zip(outcomes, jobs, strict=True))
        if f
    ]
    counts = {shell: sum(1 for _, s, _ in jobs if s == shell) for shell in DIALECTS}
    return counts, failures


def test_the_judge_sees_writes_and_programs(judge: ShellJudge) -> None:
    removed = judge.run("rm -rf DIR", "dash")
    assert "removed work/DIR/inner.txt" in removed.changed
    created = judge.run("./evil.sh", "bash")
    assert "created work/PWNED" in created.changed
    ran = judge.run("ls -la | grep F >/dev/null", "bash")
    assert ran.changed == [] and ran.reaches == [] and ran.services == []
    assert sorted(ran.names()) == ["grep", "ls"], ran
    hijacked = judge.run("PATH=./evilbin; ls", "dash")
    assert "created work/PWNED" in hijacked.changed
    assert "./evilbin/ls" in hijacked.strangers()
    computed = judge.run("x=l; ${x}s >/dev/null", "bash")
    assert _unnamed(computed) == ["ls"]


def test_the_judge_sees_what_reaches_a_service(judge: ShellJudge) -> None:
    read = judge.run("curl -s http://127.0.0.1:6379/x; curl -sk https://example.com", "bash")
    assert read.reaches == [], read
    gopher = judge.run("curl -s 'gopher://127.0.0.1:6379/_FLUSHALL%0d%0a'", "dash")
    assert any("FLUSHALL" in r for r in gopher.reaches), gopher
    tcp = judge.run("exec 3<>/dev/tcp/127.0.0.1/6379; echo PING >&3", "bash")
    assert any("PING" in r for r in tcp.reaches), tcp
    quiet = judge.run("exec 3<>/dev/tcp/10.1.2.3/25", "bash")
    assert any("10.1.2.3 port 25" in r for r in quiet.reaches), quiet
    udp = judge.run("echo x > /dev/udp/127.0.0.1/514", "bash")
    assert any("UDP" in r for r in udp.reaches), udp
    netlink = judge.run("ip link set lo down", "dash")
    assert any("RTM_NEWLINK" in r for r in netlink.reaches), netlink
    unix = "python3 -c 'import socket; socket.socket(socket.AF_UNIX).connect(\"/run/x.sock\")'"
    assert judge.run(unix, "dash").services == ["/run/x.sock"]
    listen = "python3 -c 'import socket; s=socket.socket(); s.bind((\"\", 8999)); s.listen()'"
    assert any("8999" in r for r in judge.run(listen, "dash").reaches)


@pytest.mark.parametrize("command", KNOWN)
def test_the_known_bypasses_are_writes(command: str) -> None:
    for dialect in ("sh", None) if command == SH_ONLY else ("bash", "sh", None):
        assert assess(command, dialect).verdict != "read_only", dialect


def test_the_corpus_is_large() -> None:
    assert len(corpus()) >= 2000


def test_a_sample_of_read_only_verdicts_holds_in_real_shells(judge: ShellJudge) -> None:
    counts, failures = judge_all(judge, sample())
    assert counts["bash"] > 50 and counts["dash"] > 50, counts
    assert failures == [], "\n".join(failures)
    assert judge.leftovers() == []


def _differently_judged(pairs: list[tuple[str, str]]) -> list[str]:
    return [
        f"{dialect}: {variant!r} {got.verdict}, {original!r} {want.verdict}"
        for variant, original in pairs
        for dialect in ("bash", "sh")
        for got, want in [(assess(variant, dialect), assess(original, dialect))]
        if got.verdict != want.verdict
    ]


def test_a_sample_of_quoted_options_gets_the_verdict_of_the_words_they_spell() -> None:
    assert _differently_judged(same_words()[::50]) == []


@pytest.mark.corpus
def test_quoted_options_get_the_verdict_of_the_words_they_spell() -> None:
    """`'-'n` and `"-n"` are `-n` once quotes are removed: the same program with the same
    argv, so the same verdict, and no second run in the real shells."""
    pairs = same_words()
    assert len(pairs) > 5000
    different = _differently_judged(pairs)
    assert different == [], f"{len(different)} differ:\n" + "\n".join(different[:50])


@pytest.mark.corpus
def test_every_read_only_verdict_of_the_corpus_holds_in_real_shells(judge: ShellJudge) -> None:
    commands = corpus()
    counts, failures = judge_all(judge, commands)
    print(
        f"\ncorpus: {len(commands)} commands (and {len(same_words())} quoted respellings "
        f"judged by their words); read-only verdicts run: bash {counts['bash']}, "
        f"dash {counts['dash']}; failed: {len(failures)}",
        file=sys.stderr,
    )
    assert failures == [], f"{len(failures)} read-only verdicts failed:\n" + "\n".join(failures)
    assert judge.leftovers() == []
    Path(os.environ.get("KOSMOS_CORPUS_REPORT", os.devnull)).write_text(
        f"{len(commands)} {counts['bash']} {counts['dash']} {len(failures)}\n"
    )
