"""The LLM API key from a file or a command (`api_key_file`, `api_key_command`), so that no
process environment holds it; and a notice, once, when it did come from the environment."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.llmserver import ScriptedLLM

KEY = "sk-from-a-file-or-command-0123456789"
NOTICE = "the API key came from the environment"
RUN = ["run", "probe", "--non-interactive"]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    (path / ".kosmos/skills/probe").mkdir(parents=True)
    (path / ".kosmos/skills/probe/SKILL.md").write_text(
        "---\nname: probe\ndescription: look\n---\nLook around.\n"
    )
    return path


def _sent_key(llm: ScriptedLLM) -> str:
    return llm.requests[0].headers["authorization"].removeprefix("Bearer ")


def test_the_key_is_read_from_the_file_beside_the_config(
    llm: ScriptedLLM, cli_env: dict, project: Path, tmp_path: Path
) -> None:
    (project / "secrets").mkdir()
    (project / "secrets/llm.key").write_text(f"\n  {KEY}  \n")
    (project / "kosmos.yaml").write_text("api_key_file: secrets/llm.key\n")
    llm.script("[DONE] ok")
    proc = run_cli(RUN, env=cli_env, cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert _sent_key(llm) == KEY
    assert NOTICE not in proc.stderr


def test_the_key_is_what_the_command_prints_and_it_runs_once(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    (project / "kosmos.yaml").write_text(
        f"api_key_command: \"echo run >> {project}/count; printf '  {KEY}\\\\n'\"\n"
    )
    llm.script("[CMD] echo hi", "[DONE] ok")
    proc = run_cli([*RUN, "--yes"], env=cli_env, cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert [r.headers["authorization"] for r in llm.requests] == [f"Bearer {KEY}"] * 2
    assert (project / "count").read_text() == "run\n"
    assert NOTICE not in proc.stderr


def test_a_providers_own_key_command_applies_to_that_provider(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    (project / "kosmos.yaml").write_text(
        "provider: gemini\n"
        f"providers:\n  gemini:\n    base_url: {llm.gemini_base_url}\n"
        f"    api_key_command: echo AIza-from-the-command\n"
        "  openai:\n    api_key_command: exit 9\n"
    )
    llm.script("[DONE] ok")
    proc = run_cli(RUN, env=cli_env, cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert llm.requests[0].headers["x-goog-api-key"] == "AIza-from-the-command"


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ("api_key_command: 'echo no such key >&2; exit 3'\n", "api_key_command"),
        ("api_key_command: 'true'\n", "api_key_command"),
        ("api_key_file: missing.key\n", "api_key_file"),
        (
            "providers:\n  openai:\n    api_key_command: exit 4\n",
            "providers.openai.api_key_command",
        ),
        (f"api_key: {KEY}\napi_key_command: echo x\n", "api_key and api_key_command"),
    ],
)
def test_a_key_that_cannot_be_had_is_one_line_naming_the_setting(
    llm: ScriptedLLM, cli_env: dict, project: Path, config: str, named: str
) -> None:
    (project / "kosmos.yaml").write_text(config)
    proc = run_cli(RUN, env=cli_env, cwd=project)
    assert proc.returncode == 2, proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith(f"kosmos: {named}"), line
    assert llm.requests == []


def test_the_environment_wins_and_is_said_once_on_stderr_only(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    (project / "kosmos.yaml").write_text(f"api_key_command: echo run >> {project}/count\n")
    llm.script("[DONE] ok")
    env = {**cli_env, "KOSMOS_API_KEY": KEY}
    proc = run_cli([*RUN, "--json"], env=env, cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert _sent_key(llm) == KEY
    assert not (project / "count").exists()  # the command was not run
    assert proc.stderr.count(NOTICE) == 1
    assert "(KOSMOS_API_KEY)" in proc.stderr and "api_key_file" in proc.stderr
    assert NOTICE not in proc.stdout
    assert all(json.loads(line) for line in proc.stdout.splitlines())
    assert KEY not in proc.stderr + proc.stdout


def test_commands_that_talk_to_no_llm_run_no_key_command(cli_env: dict, project: Path) -> None:
    (project / "kosmos.yaml").write_text(f"api_key_command: echo run >> {project}/count\n")
    proc = run_cli(["skills", "list"], env={**cli_env, "KOSMOS_API_KEY": KEY}, cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert not (project / "count").exists()
    assert NOTICE not in proc.stderr
