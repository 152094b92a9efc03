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
def test_an_unknown_flag_shows_its_subcommands_usage(
    args: list[str], usage: str, cli_env: dict, tmp_path: Path
) -> None:
    proc = run_cli([*args, "--frobnicate"], env=cli_env, cwd=tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.splitlines()
    assert lines[0].startswith(f"usage: {usage} [-h]"), proc.stderr
    assert lines[-1] == f"{usage}: error: unrecognized arguments: --frobnicate"
    assert proc.stdout == ""


def test_an_unknown_top_level_flag_shows_the_top_level_usage(cli_env: dict, tmp_path: Path) -> None:
    proc = run_cli(["--frobnicate"], env=cli_env, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith("usage: kosmos [-h] [--version] COMMAND")
    assert proc.stderr.splitlines()[-1] == "kosmos: error: unrecognized arguments: --frobnicate"


def test_a_bad_value_still_names_its_subcommand(cli_env: dict, tmp_path: Path) -> None:
    proc = run_cli(["run", "probe", "--policy", "sometimes"], env=cli_env, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith("usage: kosmos run [-h]")
    assert "argument --policy: invalid choice: 'sometimes'" in proc.stderr


def test_importing_the_cli_loads_no_heavy_module() -> None:
    """`kosmos --help` and every subcommand start by importing kosmos.cli: it must stay light,
    leaving SSH, the TUI, the chat and the settings model to the subcommand that needs them."""
    code = (
        "import sys, kosmos.cli\n"
        "heavy = ('asyncssh', 'textual', 'kosmos.chat', 'httpx', 'pydantic')\n"
        "print(sorted({m.split('.')[0] if not m.startswith('kosmos.') else m\n"
        "              for m in sys.modules if m.startswith(heavy)}))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert proc.stdout.strip() == "[]", proc.stdout
