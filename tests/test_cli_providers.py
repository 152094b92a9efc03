"""`kosmos run` with each provider and protocol, and the parameter dialogue, as a user runs it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kosmos.transcript import read_transcript
from tests.conftest import run_cli
from tests.llmserver import ScriptedLLM, Status, call, calls

PROBE = """---
name: probe
description: Look at one thing
params:
  - name: target
    description: what to look at
    required: true
---
## What I do
Run one command and report.
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    (path / ".kosmos/skills/probe").mkdir(parents=True)
    (path / ".kosmos/skills/probe/SKILL.md").write_text(PROBE)
    return path


def json_lines(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def test_gemini_tools_end_to_end(llm: ScriptedLLM, cli_env: dict, project: Path) -> None:
    llm.script(
        calls(call("run_command", command="echo from-gemini"), content="Checking."),
        calls(call("finish", summary="Looked.")),
    )
    env = {**cli_env, "GEMINI_API_KEY": "AIza-canary-777"}
    transcript = project / "run.jsonl"
    proc = run_cli(
        [
            "run",
            "probe",
            "--param",
            "target=x",
            "--provider",
            "gemini",
            "--base-url",
            llm.gemini_base_url,
            "--protocol",
            "tools",
            "--non-interactive",
            "--yes",
            "--json",
            "--transcript",
            str(transcript),
        ],
        env=env,
        cwd=project,
    )
    assert proc.returncode == 0, proc.stderr
    lines = json_lines(proc.stdout)
    assert lines[0]["type"] == "run_started" and lines[0]["protocol"] == "tools"
    assert lines[-1]["status"] == "done" and lines[-1]["message"] == "Looked."
    req = llm.requests[1]
    assert req.path == "/v1beta/models/gemini-2.0-flash:generateContent"
    assert req.headers["x-goog-api-key"] == "AIza-canary-777"
    response = req.contents[-1]["parts"][0]["functionResponse"]
    assert response == {
        "name": "run_command",
        "response": {"result": "Command output:\nfrom-gemini\n\n[Step 2 of 100]"},
    }
    text = transcript.read_text() + proc.stdout + proc.stderr
    assert "AIza-canary-777" not in text


@pytest.mark.parametrize("where", ["flag", "frontmatter"])
def test_json_protocol_by_flag_or_frontmatter(
    llm: ScriptedLLM, cli_env: dict, project: Path, where: str
) -> None:
    llm.script('{"action": "cmd", "text": "echo j"}', '{"action": "done", "text": "ok"}')
    args = ["run", "probe", "--param", "target=x", "--non-interactive", "--yes", "--json"]
    if where == "flag":
        args += ["--protocol", "json"]
    else:
        skill = project / ".kosmos/skills/probe/SKILL.md"
        skill.write_text(PROBE.replace("---\n## What", "protocol: json\n---\n## What"))
    proc = run_cli(args, env=cli_env, cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert json_lines(proc.stdout)[0]["protocol"] == "json"
    assert llm.requests[0].body["response_format"]["type"] == "json_schema"
    assert any(line["type"] == "structured_request" for line in json_lines(proc.stdout))


def test_bad_protocol_flag_is_exit_2(cli_env: dict, project: Path) -> None:
    proc = run_cli(["run", "probe", "--protocol", "xml"], env=cli_env, cwd=project)
    assert proc.returncode == 2
    assert "invalid choice: 'xml'" in proc.stderr


def test_line_mode_collects_a_missing_param_by_dialogue(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    llm.script(
        "What should I look at?",
        calls(call("update_params", target="memory"), content="– **target:** memory"),
        "[DONE] memory is fine",
    )
    transcript = project / "run.jsonl"
    proc = run_cli(
        ["run", "probe", "--yes", "--transcript", str(transcript)],
        env=cli_env,
        cwd=project,
        stdin="memory please\n\n",
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout + proc.stderr
    assert "AI: What should I look at?" in out
    assert "Run with these parameters? [Y/n]" in out
    assert llm.requests[1].messages[-1] == {"role": "user", "content": "memory please"}
    assert "- target: memory" in llm.requests[2].messages[1]["content"]
    events = read_transcript(transcript)
    assert events[0].type == "run_started" and events[0].params == {"target": "memory"}
    kinds = [e.kind for e in events if e.type == "params_update"]
    assert kinds == ["turn", "update", "turn", "confirm"]
    # What the operator typed is in the transcript.
    assert [e.typed for e in events if e.type == "params_update" and e.kind == "turn"] == [
        "memory please",
        None,
    ]


def test_line_mode_dialogue_falls_back_to_the_prompt_on_a_400(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    llm.reject("tools")
    llm.script("[DONE] ok")
    proc = run_cli(["run", "probe"], env=cli_env, cwd=project, stdin="disk\n")
    assert proc.returncode == 0, proc.stderr
    assert "does not take tool calls; asking plainly" in proc.stderr
    assert "- target: disk" in llm.requests[-1].messages[1]["content"]


def test_line_mode_dialogue_with_a_model_that_ignores_tools_asks_plainly(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    llm.script("Hello!", "What target?", "Tell me the target.", "[DONE] ok")
    proc = run_cli(["run", "probe"], env=cli_env, cwd=project, stdin="disk\ndisk\ndisk\n")
    assert proc.returncode == 0, proc.stderr
    assert "asking plainly (3 replies in a row without a tool call)" in proc.stderr
    assert "- target: disk" in llm.requests[-1].messages[1]["content"]


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (None, "check --base-url / GEMINI_BASE_URL"),  # nothing listens there
        (Status(404), "check --base-url (Gemini's ends in /v1beta) and --model"),
    ],
)
def test_gemini_errors_say_what_to_check_for_gemini(
    llm: ScriptedLLM, cli_env: dict, project: Path, answer: Status | None, expected: str
) -> None:
    base = "http://127.0.0.1:9/v1beta" if answer is None else llm.gemini_base_url
    if answer is not None:
        llm.script(answer)
    proc = run_cli(
        ["run", "probe", "--param", "target=x", "--non-interactive", "--provider", "gemini"],
        env={**cli_env, "GEMINI_BASE_URL": base, "GEMINI_API_KEY": "k"},
        cwd=project,
    )
    assert proc.returncode == 5
    lines = proc.stderr.splitlines()
    assert lines[0].startswith("kosmos: the API key came from the environment (GEMINI_API_KEY)")
    error = next(line for line in lines[1:] if line.startswith("kosmos: "))
    assert expected in error
    assert "ollama" not in error and "AI_KOSMOS_MODEL_BASE_URL" not in error and "/v1)" not in error
