"""What a newcomer meets in the first hour at the command line: each as a real `kosmos`
process with a scripted LLM, real files and, where a person types, a real terminal."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.llmserver import ScriptedLLM, Status, call, calls
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


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback port whose listener never takes another connection: its accept queue is
    full, so the kernel drops new SYNs and a connect waits, as for a host that is down."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    port = server.getsockname()[1]
    fillers = []
    for _ in range(4):
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex(("127.0.0.1", port))
        fillers.append(s)
    try:
        yield port
    finally:
        for s in [*fillers, server]:
            s.close()


def test_an_llm_that_takes_no_connection_fails_fast_and_names_the_setting(
    cli_env: dict, project: Path, silent_port: int
) -> None:
    (project / "kosmos.yaml").write_text("llm_connect_timeout: 1\nllm_retries: 2\n")
    env = {**cli_env, "AI_KOSMOS_MODEL_BASE_URL": f"http://127.0.0.1:{silent_port}/v1"}
    proc = run_cli(["run", "probe", "--non-interactive", "--json"], env=env, cwd=project)
    assert proc.returncode == 5
    assert proc.stderr.splitlines()[0] == (
        f"kosmos: the LLM at http://127.0.0.1:{silent_port}/v1 took no connection within 1 s; "
        "check that it is up and reachable from here (a firewall that drops packets looks the "
        "same), or raise llm_connect_timeout in kosmos.yaml"
    )
    # Not retried: a dead connect does not wait again for each of the retries.
    assert "llm_retry" not in [json.loads(line)["type"] for line in proc.stdout.splitlines()]


def test_gemini_without_a_key_says_so_before_any_request(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    # No network is needed to know: Google's API takes no request without a key.
    proc = run_cli(
        ["run", "probe", "--provider", "gemini", "--non-interactive"], env=cli_env, cwd=project
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "kosmos: the Gemini API at https://generativelanguage.googleapis.com/v1beta needs an API "
        "key and none is set: set KOSMOS_API_KEY or GEMINI_API_KEY (or providers.gemini.api_key "
        "in kosmos.yaml)"
    ]
    # A Gemini-speaking server of one's own may need none.
    llm.script("[DONE] ok")
    env = {**cli_env, "GEMINI_BASE_URL": llm.gemini_base_url}
    proc = run_cli(
        ["run", "probe", "--provider", "gemini", "--non-interactive"], env=env, cwd=project
    )
    assert proc.returncode == 0, proc.stderr


def test_an_error_with_an_empty_body_says_so(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    llm.script(Status(404, body=b""))
    proc = run_cli(["run", "probe", "--non-interactive"], env=cli_env, cwd=project)
    assert proc.returncode == 5
    assert f"the LLM at {llm.base_url} answered HTTP 404, with an empty body; check" in (
        proc.stderr
    )
    assert "()" not in proc.stderr


def test_the_line_dialogue_shows_markdown_plainly_and_a_refused_value(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    (project / ".kosmos/skills/logs").mkdir(parents=True)
    (project / ".kosmos/skills/logs/SKILL.md").write_text(
        "---\nname: logs\ndescription: read logs\nparams:\n"
        "  - {name: lines, required: true, choices: ['20', '50', '100', '200']}\n---\nRead.\n"
    )
    llm.script(
        calls(call("update_params", id="u1", lines="500"), content="**lines:** how many?"),
        calls(call("update_params", id="u2", lines="50"), content="## Got it\n50 lines."),
        "[DONE] read",
    )
    code, out, err = converse(
        ["run", "logs", "--transcript", str(project / "t.jsonl")],
        env=cli_env,
        cwd=project,
        replies=[("> ", "50"), ("Run with these parameters? [Y/n]", "")],
    )
    assert code == 0, err
    assert "AI: lines: how many?" in out and "**" not in out
    assert "not taken: lines = 500: must be one of: 20, 50, 100, 200 (got '500')" in out
    assert "AI: Got it\n50 lines." in out


@pytest.mark.parametrize(
    "command", [["run", "probe", "--non-interactive"], ["skills", "list"], ["tui"], ["chat"]]
)
def test_a_skills_dir_that_is_not_there_is_said(
    command: list[str], cli_env: dict, project: Path
) -> None:
    proc = run_cli([*command, "--skills-dir", "/nonexistent"], env=cli_env, cwd=project)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == (
        "kosmos: --skills-dir /nonexistent: no such directory; give a directory that holds "
        "skill folders (each with a SKILL.md)"
    )
