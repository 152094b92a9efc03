"""Two roads to a host: the approval gate, or kosmos's own operations saying why they need none."""

from __future__ import annotations

import ast
import typing
from pathlib import Path

from kosmos.hosts.own import WHY, Purpose

PACKAGE = Path(__file__).resolve().parent.parent / "kosmos"
HOST_CALLS = {"run", "read_file", "read_first", "upload_tree"}
# Where a runner is called directly: the gated steps, the own road, and the runner helpers.
ROADS = {
    "engine/commands.py": "a [CMD] or run_command, after the approval gate",
    "engine/files.py": "a [GET-FILE] or read_file, after the approval gate",
    "hosts/own.py": "kosmos's own commands and reads",
    "hosts/runner.py": "read_first_each, the runners' own helper",
}


def runner_calls(path: Path) -> list[str]:
    """`x.runner.run(...)`-style calls in `path`: a method of something named *runner."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in HOST_CALLS
            and ast.unparse(node.func.value).split(".")[-1].endswith("runner")
        ):
            found.append(f"{ast.unparse(node.func)} (line {node.lineno})")
    return found


def test_nothing_reaches_a_host_but_through_the_gate_or_the_own_road() -> None:
    stray = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        calls = runner_calls(path)
        if calls and name not in ROADS:
            stray[name] = calls
    assert stray == {}


def test_the_check_sees_a_direct_call() -> None:
    # The same scan finds the calls the gated step makes: it would find a stray one.
    assert any("runner.run" in c for c in runner_calls(PACKAGE / "engine/commands.py"))


def test_every_own_purpose_says_why_it_needs_no_approval_and_is_used() -> None:
    assert set(WHY) == set(typing.get_args(Purpose))
    assert all(len(why) > 20 for why in WHY.values())
    text = "\n".join(p.read_text(encoding="utf-8") for p in PACKAGE.rglob("*.py"))
    for purpose in WHY:
        assert f'purpose="{purpose}"' in text, purpose
