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


def test_only_a_skill_file_is_taken_as_a_skill(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    llm.default = "[DONE] ran"
    (project / "notes.md").write_text("# Notes\nNothing to run here.\n")
    (project / "binary.bin").write_bytes(b"\x7fELF\x00\x01")
    line = (
        "not a skill file: a skill is a SKILL.md, or a Markdown file that opens with a --- "
        "frontmatter block giving its name; pass one, or its folder"
    )
    for ref in ("/etc/passwd", "./notes.md", "./binary.bin"):
        proc = run_cli(["run", ref, "--non-interactive"], env=cli_env, cwd=project)
        assert proc.returncode == 2, ref
        assert proc.stderr.strip().splitlines()[-1].endswith(line), proc.stderr
        assert "Traceback" not in proc.stderr
    assert llm.requests == []  # nothing was sent to the LLM
    # A Markdown file with a skill's frontmatter is one; so is any SKILL.md.
    (project / "mine.md").write_text("---\nname: mine\ndescription: x\n---\nDo it.\n")
    (project / "bare").mkdir()
    (project / "bare/SKILL.md").write_text("Just steps, as kosmos-panel wrote them.\n")
    for ref in ("./mine.md", "./bare/SKILL.md", "./bare"):
        proc = run_cli(["run", ref, "--non-interactive"], env=cli_env, cwd=project)
        assert proc.returncode == 0, (ref, proc.stderr)


def test_the_header_names_the_memory_folder_of_the_directory_it_runs_in(
    llm: ScriptedLLM, cli_env: dict, project: Path, tmp_path: Path
) -> None:
    llm.default = "[DONE] ok"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    skills = ["--skills-dir", str(project / ".kosmos/skills")]
    for where in (project, elsewhere):
        proc = run_cli(
            ["run", "probe", "--memory", "--non-interactive", *skills], env=cli_env, cwd=where
        )
        assert proc.returncode == 0, proc.stderr
        assert f"memory on · notes in {where}/.kosmos-panel/memory · target OS: " in proc.stdout
        started = json.loads(
            run_cli(
                ["run", "probe", "--memory", "--non-interactive", "--json", *skills],
                env=cli_env,
                cwd=where,
            ).stdout.splitlines()[0]
        )
        assert started["memory_dir"] == f"{where}/.kosmos-panel/memory"
