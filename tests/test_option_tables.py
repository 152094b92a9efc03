"""The option tables against the programs themselves: each installed program is asked, as the
shell judge's throwaway user, which of its options take a value (`tests/optprobe.py`), and
must agree with `kosmos.safety.option_tables` (runs with `-m corpus`, as CI does)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from kosmos.safety.option_tables import EXACT_FLAGS, OPTION_VALUES
from kosmos.safety.options import opts
from kosmos.safety.shell import Word
from tests.optprobe import long_options, mismatches
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


@pytest.mark.corpus
def test_every_flag_named_like_the_start_of_a_value_option_is_listed(judge: ShellJudge) -> None:
    """`curl --head URL`: a flag whose name starts a value-taking option's (`--header`) is
    the flag when given whole; were it missing from EXACT_FLAGS, the parser would read it as
    that option abbreviated, and take the URL for its value."""
    found = []
    for key, prog, help_args in _programs():
        long = OPTION_VALUES[key][1]
        names = long_options(lambda argv: judge.output(argv, place="flags"), prog, *help_args)
        flags = {n for n in names if n not in long and any(v.startswith(n) for v in long)}
        found += [f"{key}: --{f}" for f in sorted(flags - set(EXACT_FLAGS.get(key, ())))]
    assert found == [], "\n".join(found)


def _words(*texts: str) -> list[Word]:
    return [Word(t, t) for t in texts]


def test_a_long_option_given_whole_is_that_option() -> None:
    head = opts("curl", _words("--head", "gopher://x/"))
    assert [w.text for w in head.operands] == ["gopher://x/"]
    assert not head.has("--header")
    cookie = opts("curl", _words("--cookie", "a=b", "http://x/"))
    assert [w.text for w in cookie.values("--cookie")] == ["a=b"]
    assert not cookie.has("--cookie-jar")


def test_an_abbreviation_still_names_its_option() -> None:
    assert opts("wget", _words("--post-d=x", "http://x/")).has("--post-data")
    assert opts("curl", _words("--cookie-j", "F", "http://x/")).values("--cookie-jar")
    assert [w.text for w in opts("curl", _words("--doh-u", "u", "h")).values("--doh-url")] == ["u"]
