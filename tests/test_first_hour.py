"""What a newcomer meets in the first hour at the command line: each as a real `kosmos`
process with a scripted LLM, real files and, where a person types, a real terminal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.llmserver import ScriptedLLM
from tests.test_fleet_cli import converse

SKILL = "---\nname: probe\ndescription: a test skill\n---\nCheck the host.\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    (path / ".kosmos/skills/probe").mkdir(parents=True)
    (path / ".kosmos/skills/probe/SKILL.md").write_text(SKILL)
    return path


def test_json_at_a_terminal_shows_the_command_and_question_before_asking(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    llm.script("[CMD] echo hello-json", "[ASK] Which colour?", "[DONE] ok")
    code, out, err = converse(
        ["run", "probe", "--json", "--transcript", str(project / "t.jsonl")],
        env=cli_env,
        cwd=project,
        replies=[("Run? [y/N/e/a]", "y"), ("Which colour?\n> ", "blue-42")],
    )
    assert code == 0, err
    # What is asked about is on the terminal (stderr), before the question.
    assert err.index("[1] $ echo hello-json") < err.index("<Run? [y/N/e/a]>")
    assert "[2] ASK <Which colour?\n> >" in err
    # The terminal echoes what is typed; kosmos does not echo it a second time.
    assert "blue-42" not in err
    assert [json.loads(line)["type"] for line in out.splitlines()][-1] == "result"
