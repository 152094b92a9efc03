"""What the command line says about how it was called: usage, unknown flags, what it loads."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_cli


@pytest.mark.parametrize(
    ("args", "usage"),
    [
        (["run", "probe"], "kosmos run"),
        (["tui"], "kosmos tui"),
        (["chat"], "kosmos chat"),
        (["skills"], "kosmos skills"),
        (["skills", "list"], "kosmos skills list"),
        (["skills", "show", "probe"], "kosmos skills show"),
        (["hosts"], "kosmos hosts"),
        (["fleet", "merge", "somedir"], "kosmos fleet merge"),
    ],
)
def test_an_unknown_flag_is_one_line_named_by_its_subcommand(
    args: list[str], usage: str, cli_env: dict, tmp_path: Path
) -> None:
    proc = run_cli([*args, "--frobnicate"], env=cli_env, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        f"{usage}: error: unrecognized arguments: --frobnicate; ({usage} --help lists all)"
    ]
    assert proc.stdout == ""


def test_an_unknown_top_level_flag_is_one_line(cli_env: dict, tmp_path: Path) -> None:
    proc = run_cli(["--frobnicate"], env=cli_env, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "kosmos: error: unrecognized arguments: --frobnicate; (kosmos --help lists all)"
    ]


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["run", "probe", "--hots", "web*"],
            "kosmos run: error: unrecognized arguments: --hots web*; did you mean --hosts? "
            "(kosmos run --help lists all)",
        ),
        (
            ["run", "probe", "--non-interactve"],
            "kosmos run: error: unrecognized arguments: --non-interactve; did you mean "
            "--non-interactive? (kosmos run --help lists all)",
        ),
        (
            ["tui", "--skl=x"],
            "kosmos tui: error: unrecognized arguments: --skl=x; did you mean --skill? "
            "(kosmos tui --help lists all)",
        ),
    ],
)
def test_a_typed_flag_gets_the_closest_one(
    args: list[str], line: str, cli_env: dict, tmp_path: Path
) -> None:
    proc = run_cli(args, env=cli_env, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [line]


def test_a_bad_value_still_names_its_subcommand(cli_env: dict, tmp_path: Path) -> None:
    proc = run_cli(["run", "probe", "--policy", "sometimes"], env=cli_env, cwd=tmp_path)
    assert proc.returncode == 2
    # One line, as every other error, not the whole usage.
    assert proc.stderr.splitlines() == [
        "kosmos run: error: argument --policy: invalid choice: 'sometimes' (choose from 'ask', "
        "'read-only', 'auto', 'locked'); (kosmos run --help lists all)"
    ]


def test_a_mistyped_value_gets_the_closest_choice(cli_env: dict, tmp_path: Path) -> None:
    proc = run_cli(["run", "probe", "--policy", "readonly"], env=cli_env, cwd=tmp_path)
    assert proc.returncode == 2
    [line] = proc.stderr.splitlines()
    assert line.endswith("; did you mean read-only? (kosmos run --help lists all)")
    proc = run_cli(["run", "probe", "--forks", "x"], env=cli_env, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "kosmos run: error: argument --forks: expected a whole number, got 'x'; "
        "(kosmos run --help lists all)"
    ]


def test_importing_the_cli_loads_no_heavy_module() -> None:
    """`kosmos --help` and every subcommand start by importing kosmos.cli: it must stay light,
    leaving SSH, the TUI, the chat and the settings model to the subcommand that needs them."""
    code = (
        "import sys, kosmos.cli\n"
        "heavy = ('asyncssh', 'textual', 'kosmos.chat', 'httpx', 'pydantic')\n"
        # A None entry is an import that fails at once (kosmos's for httpx's CLI), no module;
        # nor is kosmos's stand-in for pydantic's plugin loader, made in memory.
        "print(sorted({m.split('.')[0] if not m.startswith('kosmos.') else m\n"
        "              for m, mod in sys.modules.items()\n"
        "              if getattr(mod, '__file__', None) and m.startswith(heavy)}))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert proc.stdout.strip() == "[]", proc.stdout
