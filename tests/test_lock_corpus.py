"""Every command of the policy corpus that the policy rates as a write, run inside the kernel
lock: it must leave every file as it was.

The shell judge (tests/shelljudge.py) runs each command under real bash or dash as a throwaway
unprivileged user in a scratch directory full of canaries, and traces every program it starts;
here the text it runs execs the lock's prelude first, as the wrapper does on a host. The locked
shell's first line starts `/bin/echo` with a mark, which the trace sees: a command counts only
if it was reached inside the lock, so a prelude that failed cannot pass as a command that
changed nothing.

A fast sample runs always; the whole corpus with `-m corpus` (CI runs it).
"""

from __future__ import annotations

import asyncio
import os
import shlex
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from kosmos.hosts.local import LocalRunner
from kosmos.hosts.lock import HostLock
from kosmos.hosts.runner import Lock
from kosmos.safety import assess
from tests.policy_corpus import corpus, sample
from tests.shelljudge import Outcome, ShellJudge

DIALECTS = {"bash": "bash", "dash": "sh"}
REACHED = "kosmos-lock-reached"


@pytest.fixture(scope="module")
def kit() -> HostLock:
    runner = LocalRunner()
    asyncio.run(runner.learn_host(timeout=20))
    status = runner.host_lock.status
    if status is None or not status.held:
        pytest.skip(f"the kernel lock is {status.describe() if status else 'unknown'} here")
    return runner.host_lock


@pytest.fixture(scope="module")
def judge() -> Iterator[ShellJudge]:
    if os.geteuid() != 0:
        if os.environ.get("KOSMOS_REQUIRE_SSHD") == "1":
            pytest.fail("the shell judge must run here: it needs root")
        pytest.skip("needs root to run commands as a throwaway user")
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    # Not under pytest's folder: another pytest run resets that to 0700, and the throwaway
    # user would reach nothing.
    judge = ShellJudge(Path(tempfile.mkdtemp(prefix="kosmos-lockcorpus-")), f"L{worker}")
    try:
        yield judge
    finally:
        judge.close()


def locked_text(kit: HostLock, shell: str, command: str) -> str:
    """What the judge's shell runs: the prelude, then `SHELL -c` with the command."""
    words = kit.words(Lock(), shell)
    assert words is not None
    inner = f"/bin/echo {REACHED} >/dev/null\n{command}"
    return "exec " + " ".join(shlex.quote(word) for word in [*words, inner])


def reached(outcome: Outcome) -> bool:
    """Whether the command's locked shell started: the trace saw its mark."""
    return any(REACHED in argv for argv in outcome.programs)


def _failure(outcome: Outcome, command: str) -> str | None:
    if not reached(outcome):
        return f"{outcome.shell}: {command!r}: the lock did not reach it"
    if outcome.changed:
        return f"{outcome.shell}: {command!r}: {', '.join(outcome.changed[:3])}"
    return None


def judge_locked(judge: ShellJudge, kit: HostLock, commands: list[str]) -> tuple[int, list[str]]:
    """Run every write verdict inside the lock in its shell; the count and the failures."""
    jobs = [
        (command, shell)
        for command in commands
        for shell, dialect in DIALECTS.items()
        if assess(command, dialect).verdict == "write"
    ]

    def one(job: tuple[str, str]) -> str | None:
        command, shell = job
        return _failure(judge.run(locked_text(kit, shell, command), shell), command)

    with ThreadPoolExecutor(8) as pool:
        failures = [f for f in pool.map(one, jobs) if f]
    return len(jobs), failures


def test_the_judge_sees_a_write_that_the_lock_stops(judge: ShellJudge, kit: HostLock) -> None:
    free = judge.run("rm -rf DIR; touch PWNED", "dash")
    assert "created work/PWNED" in free.changed
    held = judge.run(locked_text(kit, "dash", "rm -rf DIR; touch PWNED"), "dash")
    assert held.changed == [] and reached(held)
    # A prelude that cannot set the lock runs nothing, and is seen as not reached.
    words = kit.words(Lock(), "bash")
    assert words is not None
    spec = words[-3]
    broken = locked_text(kit, "bash", "touch PWNED").replace(spec, f"path=4:/nowhere {spec}")
    failed = judge.run(broken, "bash")
    assert failed.changed == [] and not reached(failed)


def test_a_sample_of_the_corpus_changes_nothing_inside_the_lock(
    judge: ShellJudge, kit: HostLock
) -> None:
    count, failures = judge_locked(judge, kit, sample())
    assert count > 100
    assert failures == []
    assert judge.leftovers() == []


@pytest.mark.corpus
def test_the_whole_corpus_changes_nothing_inside_the_lock(judge: ShellJudge, kit: HostLock) -> None:
    count, failures = judge_locked(judge, kit, corpus())
    print(f"\n{count} write verdicts run inside the lock, {len(failures)} changed something")
    assert failures == []
    assert judge.leftovers() == []
