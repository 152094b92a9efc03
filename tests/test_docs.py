"""docs/reliability.md names the test behind every fault: those tests must exist."""

from __future__ import annotations

import re

from tests.conftest import ROOT

_REF = re.compile(r"`(tests/[\w/]+\.py)?::(\w+)`|`(tests/[\w/]+\.py)`")


def test_every_test_named_in_the_fault_matrix_exists() -> None:
    doc = (ROOT / "docs/reliability.md").read_text()
    checked = 0
    for line in doc.splitlines():
        current = None
        for m in _REF.finditer(line):
            current = m.group(1) or m.group(3) or current
            if m.group(2) is None or current is None:
                continue
            path = ROOT / current
            if not path.exists():
                continue  # a test file that ships with another part of kosmos
            assert re.search(rf"def {m.group(2)}\(", path.read_text()), f"{current}::{m.group(2)}"
            checked += 1
    assert checked >= 50


def test_the_readme_synopsis_names_every_documented_flag() -> None:
    """`## The command line` shows each command with every flag its --help shows."""
    import argparse

    from kosmos.cli import build_parser

    readme = (ROOT / "README.md").read_text()
    block = readme.split("## The command line", 1)[1].split("```", 2)[1]
    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    for name, parser in commands.choices.items():
        found = re.search(rf"^kosmos {name}\b.*?(?=^kosmos |\Z)", block, re.M | re.S)
        assert found, f"kosmos {name} is missing from the README's synopsis"
        for action in parser._actions:
            if action.help == argparse.SUPPRESS or not action.option_strings:
                continue
            if "--help" in action.option_strings:
                continue
            assert any(
                re.search(re.escape(flag) + r"(?![\w-])", found.group(0))
                for flag in action.option_strings
            ), f"kosmos {name} {action.option_strings[-1]} is missing from the README's synopsis"


def test_the_readme_table_of_ssh_config_keywords_is_the_one_kosmos_keeps() -> None:
    """`## Hosts over SSH` shows kosmos.hosts.keywords.HONOURED, row for row."""
    from kosmos.hosts.keywords import HONOURED

    readme = (ROOT / "README.md").read_text()
    table = readme.split("| keyword | what kosmos does |\n|---|---|\n", 1)[1].split("\n\n")[0]
    rows = {}
    for line in table.splitlines():
        keyword, text = re.split(r"(?<!\\) \| ", line.strip()[2:-2])
        rows[keyword.replace("`", "")] = text.replace("\\|", "|")
    assert rows == HONOURED
