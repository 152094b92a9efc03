"""The LLM's base URL from kosmos.yaml, the environment or a flag: checked when read, and named
where it was set when the LLM cannot be reached."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.llmserver import ScriptedLLM

SKILL = "---\nname: probe\ndescription: Look at one thing\n---\nRun one command and report.\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    (path / ".kosmos/skills/probe").mkdir(parents=True)
    (path / ".kosmos/skills/probe/SKILL.md").write_text(SKILL)
    return path


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


RUN = ["run", "probe", "--non-interactive"]


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("base_url: notaurl\n", "base_url"),
        ("base_url: localhost:11434/v1\n", "base_url"),
        ("base_url: 'http://host:port/v1'\n", "base_url"),
        ("providers:\n  openai:\n    base_url: ollama\n", "providers.openai.base_url"),
    ],
)
def test_a_base_url_that_is_no_url_fails_when_the_file_is_read(
    text: str, key: str, cli_env: dict, project: Path
) -> None:
    (project / "kosmos.yaml").write_text(text)
    proc = run_cli(RUN, env=cli_env, cwd=project)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"kosmos: {project / 'kosmos.yaml'}: {key}: "), lines[0]
    assert "http://localhost:11434/v1" in lines[0]


def test_a_base_url_that_is_no_url_in_the_environment_or_a_flag_names_it(
    cli_env: dict, project: Path
) -> None:
    env = {**cli_env, "AI_KOSMOS_MODEL_BASE_URL": "notaurl"}
    proc = run_cli(RUN, env=env, cwd=project)
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "kosmos: AI_KOSMOS_MODEL_BASE_URL: 'notaurl' is not an http(s) URL; "
        "give one such as http://localhost:11434/v1"
    )
    proc = run_cli([*RUN, "--base-url", "ftp://x/v1"], env=cli_env, cwd=project)
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("kosmos: --base-url: 'ftp://x/v1' is not an http(s) URL")


def test_only_kosmos_says_where_the_base_url_came_from(cli_env: dict, project: Path) -> None:
    (project / "kosmos.yaml").write_text("base_url_from: here\n")
    proc = run_cli(RUN, env=cli_env, cwd=project)
    assert proc.returncode == 2
    assert "unknown key 'base_url_from'" in proc.stderr


def test_an_unreachable_llm_set_in_the_file_names_the_file(cli_env: dict, project: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    (project / "kosmos.yaml").write_text(f"base_url: {url}\nllm_retries: 0\n")
    env = {k: v for k, v in cli_env.items() if k != "AI_KOSMOS_MODEL_BASE_URL"}
    proc = run_cli(RUN, env=env, cwd=project)
    assert proc.returncode == 5
    error = next(line for line in proc.stderr.splitlines() if line.startswith("kosmos:"))
    assert f"cannot reach the LLM at {url} (connection refused" in error
    assert f"base_url in {project / 'kosmos.yaml'}" in error
    assert "AI_KOSMOS_MODEL_BASE_URL" not in error


def test_an_unreachable_llm_from_the_providers_section_names_that_key(
    cli_env: dict, project: Path
) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    (project / "kosmos.yaml").write_text(
        f"llm_retries: 0\nproviders:\n  openai:\n    base_url: {url}\n"
    )
    env = {k: v for k, v in cli_env.items() if k != "AI_KOSMOS_MODEL_BASE_URL"}
    proc = run_cli(RUN, env=env, cwd=project)
    assert proc.returncode == 5
    assert f"providers.openai.base_url in {project / 'kosmos.yaml'}" in proc.stderr


def test_the_environment_beats_the_file_and_the_hint_says_so(cli_env: dict, project: Path) -> None:
    (project / "kosmos.yaml").write_text("base_url: http://127.0.0.1:1/v1\nllm_retries: 0\n")
    url = f"http://127.0.0.1:{closed_port()}/v1"
    proc = run_cli(RUN, env={**cli_env, "AI_KOSMOS_MODEL_BASE_URL": url}, cwd=project)
    assert proc.returncode == 5
    error = next(line for line in proc.stderr.splitlines() if line.startswith("kosmos:"))
    assert f"cannot reach the LLM at {url}" in error
    assert "or set AI_KOSMOS_MODEL_BASE_URL" in error and "kosmos.yaml" not in error


def test_openai_base_url_is_honoured_as_openais_clients_honour_it(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    llm.script("[DONE] reached")
    env = {k: v for k, v in cli_env.items() if k != "AI_KOSMOS_MODEL_BASE_URL"}
    proc = run_cli([*RUN, "--json"], env={**env, "OPENAI_BASE_URL": llm.base_url}, cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert len(llm.requests) == 1
    # kosmos-panel's own name wins where both are set.
    url = f"http://127.0.0.1:{closed_port()}/v1"
    both = {**cli_env, "OPENAI_BASE_URL": url}
    llm.script("[DONE] reached")
    proc = run_cli(RUN, env=both, cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert len(llm.requests) == 2
