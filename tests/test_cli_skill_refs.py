"""How `kosmos run` reads the SKILL it is given: a name, a path, a file that is nearly YAML."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_cli
from tests.llmserver import ScriptedLLM

SKILL = "---\nname: {name}\ndescription: Look at one thing\n---\nRun one command and report.\n"


def test_a_bare_name_of_a_folder_here_suggests_its_path(cli_env: dict, tmp_path: Path) -> None:
    (tmp_path / "bad1").mkdir()
    (tmp_path / "bad1/SKILL.md").write_text(SKILL.format(name="bad1"))
    proc = run_cli(["run", "bad1", "--non-interactive"], env=cli_env, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "kosmos: unknown skill 'bad1'; ./bad1/SKILL.md is here: to run it, pass its path: "
        "kosmos run ./bad1"
    ]
    # The suggestion works as given.
    proc = run_cli(["run", "./bad1", "--non-interactive", "--replay", "nope.jsonl"],
                   env=cli_env, cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 2
    assert "nope.jsonl: no such transcript" in proc.stderr


def test_a_name_with_no_folder_here_gets_no_path_suggestion(cli_env: dict, tmp_path: Path) -> None:
    (tmp_path / "bad1").mkdir()  # a folder without a SKILL.md is not a skill
    proc = run_cli(["run", "bad1", "--non-interactive"], env=cli_env, cwd=tmp_path)
    assert proc.returncode == 2
    assert "unknown skill 'bad1'" in proc.stderr and "./bad1" not in proc.stderr


def test_a_path_that_does_not_exist_is_no_such_file(cli_env: dict, tmp_path: Path) -> None:
    for ref in ("./missing/SKILL.md", "./missing", str(tmp_path / "gone/SKILL.md"), "nope.md"):
        proc = run_cli(["run", ref, "--non-interactive"], env=cli_env, cwd=tmp_path)
        assert proc.returncode == 2, ref
        assert proc.stderr.strip().splitlines() == [
            f"kosmos: {ref}: no such file or folder; check the path, or name a skill "
            "(kosmos skills list shows all)"
        ]


def test_a_folder_name_with_a_slash_is_still_looked_up_as_a_skill(
    cli_env: dict, tmp_path: Path
) -> None:
    """kosmos-panel's category folders (`lin/disk`) name skills in a library, not paths."""
    skill = tmp_path / ".kosmos/skills/lin/disk"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(SKILL.format(name="disk-usage"))
    proc = run_cli(["skills", "show", "lin/disk"], env=cli_env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "disk-usage" in proc.stdout


def test_nearly_yaml_frontmatter_runs_with_one_warning_naming_the_line(
    llm: ScriptedLLM, cli_env: dict, tmp_path: Path
) -> None:
    """Lines that all look like `key: value` load as kosmos-panel read them; the first value
    YAML would have refused is named once, with its file and line."""
    (tmp_path / "q").mkdir()
    path = tmp_path / "q/SKILL.md"
    path.write_text(
        '---\ndescription: Check disk: what fills it\nname: "unterminated\n---\nRun df.\n'
    )
    llm.script("[DONE] fine")
    proc = run_cli(["run", "./q", "--non-interactive"], env=cli_env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if "not valid YAML" in line]
    assert len(warnings) == 1, proc.stderr
    assert f"{path}:2: the frontmatter is not valid YAML" in warnings[0]
    assert "description is 'Check disk: what fills it'" in warnings[0]
    assert '--- Active Skill: "unterminated ---' in llm.requests[0].system
