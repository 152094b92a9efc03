"""Config layering, end to end through the CLI: defaults < the user's config < ./kosmos.yaml <
each --config in order < environment < flags, mappings merged key by key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.llmserver import ScriptedLLM

SKILL = "---\nname: probe\ndescription: Look at one thing\n---\nRun one command and report.\n"
RUN = ["run", "probe", "--non-interactive"]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    (path / ".kosmos/skills/probe").mkdir(parents=True)
    (path / ".kosmos/skills/probe/SKILL.md").write_text(SKILL)
    return path


@pytest.fixture
def env(cli_env: dict[str, str], home: Path, llm: ScriptedLLM) -> dict[str, str]:
    """The CLI's environment with the LLM's URL in the user's config, not in a variable."""
    user = home / ".config" / "kosmos" / "config.yaml"
    user.parent.mkdir(parents=True)
    user.write_text(f"base_url: {llm.base_url}\nllm_retries: 0\n")
    return {k: v for k, v in cli_env.items() if k != "AI_KOSMOS_MODEL_BASE_URL"}


def model_sent(llm: ScriptedLLM, args: list[str], env: dict[str, str], cwd: Path) -> str:
    """Run the skill once and say which model the LLM was asked for."""
    llm.script("[DONE] reached")
    before = len(llm.requests)
    proc = run_cli([*RUN, *args], env=env, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    assert len(llm.requests) == before + 1
    model: str = llm.requests[-1].body["model"]
    return model


def test_a_config_file_layers_over_the_users_config(
    llm: ScriptedLLM, env: dict[str, str], project: Path, tmp_path: Path
) -> None:
    extra = tmp_path / "extra.yaml"
    extra.write_text("model: from-extra\n")
    # The user's base_url still reaches the LLM; the --config file's model is the one asked for.
    assert model_sent(llm, ["--config", str(extra)], env, project) == "from-extra"


def test_config_files_layer_in_order_and_sections_merge_key_by_key(
    llm: ScriptedLLM, env: dict[str, str], project: Path, tmp_path: Path
) -> None:
    (project / "kosmos.yaml").write_text("model: from-project\n")
    first, second = tmp_path / "first.yaml", tmp_path / "second.yaml"
    first.write_text(f"providers:\n  openai:\n    base_url: {llm.base_url}\n    model: first\n")
    second.write_text("providers:\n  openai:\n    model: second\n")
    args = ["--config", str(first), "--config", str(second)]
    assert model_sent(llm, args, env, project) == "second"
    args = ["--config", str(second), "--config", str(first)]
    assert model_sent(llm, args, env, project) == "first"
    assert model_sent(llm, [], env, project) == "from-project"


def test_config_dev_null_is_an_empty_layer(
    llm: ScriptedLLM, env: dict[str, str], project: Path
) -> None:
    assert model_sent(llm, ["--config", "/dev/null"], env, project) == "CHEAP"


def test_a_config_file_that_is_not_there_is_named(
    env: dict[str, str], project: Path, tmp_path: Path
) -> None:
    missing = tmp_path / "typo.yaml"
    proc = run_cli([*RUN, "--config", str(missing)], env=env, cwd=project)
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"kosmos: {missing}: config file not found; check --config"


def test_the_environment_beats_the_files_and_flags_beat_the_environment(
    llm: ScriptedLLM, env: dict[str, str], project: Path, tmp_path: Path
) -> None:
    extra = tmp_path / "extra.yaml"
    extra.write_text("model: from-file\n")
    with_model = {**env, "AI_MODEL": "from-env"}
    assert model_sent(llm, ["--config", str(extra)], with_model, project) == "from-env"
    args = ["--config", str(extra), "--model", "from-flag"]
    assert model_sent(llm, args, with_model, project) == "from-flag"


def test_an_error_in_a_later_layer_names_that_file(
    env: dict[str, str], project: Path, tmp_path: Path
) -> None:
    extra = tmp_path / "extra.yaml"
    extra.write_text("hosts:\n  web1:\n    policy: sometimes\n")
    proc = run_cli([*RUN, "--config", str(extra)], env=env, cwd=project)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"kosmos: {extra}: hosts.web1.policy: ")


def test_an_unreachable_llm_names_the_layer_that_set_its_url(
    env: dict[str, str], home: Path, project: Path, tmp_path: Path
) -> None:
    user = home / ".config" / "kosmos" / "config.yaml"
    user.write_text("base_url: http://127.0.0.1:1/v1\nllm_retries: 0\n")
    extra = tmp_path / "extra.yaml"
    extra.write_text("model: from-extra\n")
    proc = run_cli([*RUN, "--config", str(extra)], env=env, cwd=project)
    assert proc.returncode == 5
    error = next(line for line in proc.stderr.splitlines() if line.startswith("kosmos:"))
    assert f"base_url in {user}" in error and str(extra) not in error


def origins_shown(stdout: str) -> dict[str, tuple[str, str]]:
    """`kosmos config --show-origin`'s lines as key -> (origin, value)."""
    found = {}
    for line in stdout.splitlines():
        origin, setting = line.rsplit("  ", 1)
        key, value = setting.split("=", 1)
        found[key] = (origin.strip(), value)
    return found


def test_kosmos_config_shows_each_value_and_where_it_came_from(
    env: dict[str, str], home: Path, project: Path, tmp_path: Path, llm: ScriptedLLM
) -> None:
    user = home / ".config" / "kosmos" / "config.yaml"
    (project / "kosmos.yaml").write_text("model: from-project\nhosts:\n  web1:\n    policy: ask\n")
    extra = tmp_path / "extra.yaml"
    extra.write_text("hosts:\n  web1:\n    lock_ports: [443]\nmax_steps: 7\n")
    args = ["config", "--show-origin", "--config", str(extra), "--protocol", "json"]
    proc = run_cli(args, env={**env, "AI_MODEL": "from-env"}, cwd=project)
    assert proc.returncode == 0, proc.stderr
    shown = origins_shown(proc.stdout)
    assert shown["base_url"] == (str(user), llm.base_url)
    assert shown["llm_retries"] == (str(user), "0")
    assert shown["hosts.web1.policy"] == (str(project / "kosmos.yaml"), "ask")
    assert shown["hosts.web1.lock_ports"] == (str(extra), "[443]")
    assert shown["max_steps"] == (str(extra), "7")
    assert shown["model"] == ("env AI_MODEL", "from-env")
    assert shown["protocol"] == ("--protocol", "json")
    assert shown["temperature"] == ("default", "0.3")
    # Without --show-origin: the same settings, one key=value a line.
    proc = run_cli(["config", "--config", str(extra)], env=env, cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert "model=from-project" in proc.stdout.splitlines()
    assert "max_steps=7" in proc.stdout.splitlines()


def test_kosmos_config_never_shows_a_key(
    env: dict[str, str], project: Path, tmp_path: Path
) -> None:
    (project / "kosmos.yaml").write_text(
        "providers:\n  openai:\n    api_key: sk-from-the-file-0123456789\n"
        "chat:\n  tools:\n    - name: search\n      description: Search\n"
        "      base_url: http://user:pw-in-the-url-42@127.0.0.1:1\n      path: /search\n"
    )
    env = {**env, "KOSMOS_API_KEY": "sk-from-the-env-9876543210", "KOSMOS_SEAL_KEY": "seal-0042"}
    for extra in ([], ["--show-origin"], ["--json"], ["--json", "--show-origin"]):
        proc = run_cli(["config", *extra], env=env, cwd=project)
        assert proc.returncode == 0, proc.stderr
        out = proc.stdout + proc.stderr
        for secret in ("sk-from-the-file", "sk-from-the-env", "pw-in-the-url-42", "seal-0042"):
            assert secret not in out, (extra, secret)
        assert "****" in proc.stdout
    data = json.loads(proc.stdout)
    assert data["settings"]["api_key"] == "****"
    assert data["settings"]["providers"]["openai"]["api_key"] == "****"
    assert data["origins"]["api_key"] == "env KOSMOS_API_KEY"
    assert data["origins"]["seal_key"] == "env KOSMOS_SEAL_KEY"


def test_a_later_file_that_names_the_keys_source_replaces_the_earlier_ones(
    llm: ScriptedLLM, env: dict[str, str], home: Path, project: Path, tmp_path: Path
) -> None:
    user = home / ".config" / "kosmos" / "config.yaml"
    user.write_text(f"base_url: {llm.base_url}\napi_key_command: echo key-from-the-command\n")
    key_file = tmp_path / "key"
    key_file.write_text("key-from-the-file\n")
    extra = tmp_path / "extra.yaml"
    extra.write_text(f"api_key_file: {key_file}\n")
    model_sent(llm, ["--config", str(extra)], env, project)
    assert llm.requests[-1].headers["authorization"] == "Bearer key-from-the-file"
    model_sent(llm, [], env, project)
    assert llm.requests[-1].headers["authorization"] == "Bearer key-from-the-command"
    # Two sources in one file are still one too many, and the error names that file.
    extra.write_text(f"api_key_file: {key_file}\napi_key_command: echo again\n")
    proc = run_cli([*RUN, "--config", str(extra)], env=env, cwd=project)
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        f"kosmos: api_key_file and api_key_command in {extra}: the API key comes from one "
        "of them; keep one"
    )


def test_the_users_config_is_found_under_xdg_config_home(
    env: dict[str, str], project: Path, tmp_path: Path
) -> None:
    xdg = tmp_path / "xdg"
    (xdg / "kosmos").mkdir(parents=True)
    (xdg / "kosmos" / "config.yaml").write_text("max_steps: 9\n")
    proc = run_cli(
        ["config", "--show-origin"], env={**env, "XDG_CONFIG_HOME": str(xdg)}, cwd=project
    )
    assert proc.returncode == 0, proc.stderr
    assert origins_shown(proc.stdout)["max_steps"] == (str(xdg / "kosmos" / "config.yaml"), "9")
