"""Frontmatter is read with libyaml where PyYAML has it: the pure-Python reader is the oracle
for what each file means, where each key is, and how a broken one is reported."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kosmos.errors import SkillError
from kosmos.skills.loader import _read_frontmatter

ROOT = Path(__file__).resolve().parent.parent

TRICKY = [
    "name: a\ndescription: b\n",
    "name: 'quoted: colon'\ndescription: >\n  folded\n  text\n",
    "name: x\ndescription: |\n  literal\n    indented\n",
    "name: 1.10\ndescription: yes\nversion: 2024-01-02\n",
    "name: x\ndescription: d\nparams:\n  - name: p\n    default: 010\n    choices: [on, off, 3]\n",
    'name: ünïcödé\ndescription: "esc\\u00e9 \\t tab"\n',
    "name: x\ndescription: d\nmetadata:\n  nested: {a: [1, {b: c}]}\n# a comment\n",
    "name: &n anchor\ndescription: *n\n",
    "",
    "# only a comment\n",
]
BROKEN = [
    "name: a: b\ndescription: c\n",
    "name: [unclosed\ndescription: d\n",
    "name: x\n\tdescription: tab\n",
    "- a list\n- not a mapping\n",
]


def shipped() -> list[str]:
    return [p.read_text().split("---")[1] for p in sorted((ROOT / "skills").glob("*/SKILL.md"))]


def _read(text: str, *, pure: bool = False) -> tuple[object, object, object]:
    import kosmos.skills.loader as loader

    kept = loader._FAST_LOADER
    if pure:
        loader._FAST_LOADER = yaml.SafeLoader
    try:
        return _read_frontmatter(text, "SKILL.md", 2)
    except SkillError as e:
        return ("error", str(e), None)
    finally:
        loader._FAST_LOADER = kept


@pytest.mark.skipif(not yaml.__with_libyaml__, reason="PyYAML built without libyaml")
@pytest.mark.parametrize("text", [*TRICKY, *BROKEN, *shipped()])
def test_libyaml_reads_frontmatter_as_the_pure_python_reader_does(text: str) -> None:
    import kosmos.skills.loader as loader

    assert loader._FAST_LOADER is yaml.CSafeLoader
    assert _read(text) == _read(text, pure=True)
