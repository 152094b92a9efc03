"""The approval policy against real shells: every read-only verdict must hold in bash and dash.

Each command of the corpus (tests/policy_corpus.py) that the policy rates read-only for a
dialect is run under that dialect's real shell (bash for `bash`, dash for `sh`) as a
throwaway unprivileged user, in a scratch directory full of canaries, with PATH pointing at
logging shims (tests/shelljudge.py). It must change no file, create none, and run no program
that is off the policy's read-only list. A fast sample runs always; the whole corpus runs
with `-m corpus` (CI does).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from kosmos.safety import assess, read_only_programs
from tests.policy_corpus import KNOWN, SH_ONLY, corpus, sample
from tests.shelljudge import Outcome, ShellJudge

DIALECTS = {"bash": "bash", "dash": "sh"}


def _unavailable() -> str | None:
    if os.geteuid() != 0:
        return "needs root to run commands as a throwaway user"
    for tool in ("bash", "dash", "useradd", "git"):
        if not shutil.which(tool):
            return f"{tool} is not installed"
    return None


@pytest.fixture(scope="module")
def judge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ShellJudge]:
    why = _unavailable()
    if why:
        if os.environ.get("KOSMOS_REQUIRE_SSHD") == "1":
            pytest.fail(f"the shell judge must run here: {why}")
        pytest.skip(why)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    judge = ShellJudge(tmp_path_factory.mktemp("shells"), worker)
    try:
        yield judge
    finally:
        judge.close()


def _failure(outcome: Outcome, allowed: frozenset[str]) -> str | None:
    strangers = sorted({n for n in outcome.names() if n not in allowed})
    if not outcome.changed and not strangers:
        return None
    what = outcome.changed[:3] + [f"ran {n}" for n in strangers[:3]]
    return f"{outcome.shell}: {outcome.command!r}: {', '.join(what)}"


def judge_all(judge: ShellJudge, commands: list[str]) -> tuple[dict[str, int], list[str]]:
    """Run every read-only verdict in its shell; return the counts and the failures."""
    allowed = read_only_programs()
    jobs = [
        (command, shell)
        for command in commands
        for shell, dialect in DIALECTS.items()
        if assess(command, dialect).verdict == "read_only"
    ]
    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(lambda job: judge.run(*job), jobs))
    failures = [f for f in (_failure(o, allowed) for o in outcomes) if f]
    counts = {shell: sum(1 for _, s in jobs if s == shell) for shell in DIALECTS}
    return counts, failures


def test_the_judge_sees_writes_and_programs(judge: ShellJudge) -> None:
    removed = judge.run("rm -rf DIR", "dash")
    assert "removed work/DIR/inner.txt" in removed.changed
    created = judge.run("./evil.sh", "bash")
    assert "created work/PWNED" in created.changed
    ran = judge.run("ls -la | grep F >/dev/null", "bash")
    assert ran.changed == []
    assert sorted(ran.names()) == ["grep", "ls"], ran
    hijacked = judge.run("PATH=./evilbin; ls", "dash")
    assert "created work/PWNED" in hijacked.changed


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


@pytest.mark.corpus
def test_every_read_only_verdict_of_the_corpus_holds_in_real_shells(judge: ShellJudge) -> None:
    commands = corpus()
    counts, failures = judge_all(judge, commands)
    print(
        f"\ncorpus: {len(commands)} commands; read-only verdicts run: bash {counts['bash']}, "
        f"dash {counts['dash']}; failed: {len(failures)}",
        file=sys.stderr,
    )
    assert failures == [], f"{len(failures)} read-only verdicts failed:\n" + "\n".join(failures)
    assert judge.leftovers() == []
    Path(os.environ.get("KOSMOS_CORPUS_REPORT", os.devnull)).write_text(
        f"{len(commands)} {counts['bash']} {counts['dash']} {len(failures)}\n"
    )
