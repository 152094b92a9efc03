"""The option tables against the programs themselves: each installed program is asked, as the
shell judge's throwaway user, which of its options take a value (`tests/optprobe.py`), and
must agree with `kosmos.safety.option_tables` (runs with `-m corpus`, as CI does)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from kosmos.safety.option_tables import OPTION_VALUES
from tests.optprobe import mismatches
from tests.shelljudge import ShellJudge

# How each table's program is asked: its argv, then what makes it list its options.
ASK = {
    "awk": (["awk"], ["-W", "usage"]),
    "curl": (["curl"], ["--help", "all"]),
    "kubectl": (["kubectl"], ["options"]),
    "pip": (["pip3"], ["--help"]),
}
# Read by hand, not by getopt: xxd (its own parser, `rules._r_xxd`), the shells (-o alone
# lists the options), time (a bash keyword here), ssh (its usage names no long options)
# and docker compose (a plugin, not always there).
SKIP = {"sh", "time", "docker compose", "xxd"}


def _programs() -> list[tuple[str, list[str], list[str]]]:
    out = []
    for key in sorted(OPTION_VALUES):
        if key in SKIP:
            continue
        prog, help_args = ASK.get(key, (key.split(), ["-h"] if key.startswith("git ") else []))
        if shutil.which(prog[0]):
            out.append((key, prog, help_args))
    return out


@pytest.fixture(scope="module")
def judge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ShellJudge]:
    if os.geteuid() != 0:
        pytest.skip("needs root to ask programs as a throwaway user")
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    judge = ShellJudge(tmp_path_factory.mktemp("options"), f"opt{worker}")
    try:
        yield judge
    finally:
        judge.close()


@pytest.mark.corpus
def test_the_option_tables_agree_with_the_programs(judge: ShellJudge) -> None:
    programs = _programs()
    assert len(programs) >= 30, [p[0] for p in programs]

    def ask(item: tuple[str, list[str], list[str]]) -> list[str]:
        key, prog, help_args = item

        # each program in a repository of its own: `git stash -u` changes the one it is in
        def run(argv: list[str]) -> str:
            place = "probe-" + key.replace(" ", "-")
            said = judge.output(argv, place=place)
            # Nothing said in the time given: on a busy machine, ask again and wait longer.
            return said or judge.output(argv, place=place, timeout=30)

        return [f"{key}: {m}" for m in mismatches(run, prog, OPTION_VALUES[key], *help_args)]

    with ThreadPoolExecutor(8) as pool:
        found = [m for ms in pool.map(ask, programs) for m in ms]
    assert found == [], "\n".join(found)
