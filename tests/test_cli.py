"""`kosmos run` and `kosmos skills` as a user runs them: a subprocess, real files, real HTTP."""

from __future__ import annotations

import json
import os
import platform
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kosmos.transcript import read_transcript
from tests.conftest import ROOT, pseudo_terminal, run_cli
from tests.helpers import need, read_until, running, wait_until
from tests.llmserver import ScriptedLLM, Status

PROBE = """---
name: probe
description: Look at one thing
params:
  - name: target
    description: what to look at
    required: true
  - name: mode
    choices: [fast, slow]
    default: fast
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


def test_headless_json_run_end_to_end(llm: ScriptedLLM, cli_env: dict, project: Path) -> None:
    llm.script("[CMD] echo hello-from-kosmos", "[ASK] Which one?", "[DONE] all good")
    transcript = project / "run.jsonl"
    proc = run_cli(
        [
            "run",
            "probe",
            "--param",
            "target=disk",
            "--non-interactive",
            "--yes",
            "--json",
            "--answer",
            "the first",
            "--transcript",
            str(transcript),
        ],
        env=cli_env,
        cwd=project,
    )
    assert proc.returncode == 0, proc.stderr
    lines = json_lines(proc.stdout)
    assert all("type" in line for line in lines)
    assert lines[-1]["type"] == "result"
    assert lines[-1]["status"] == "done"
    assert lines[-1]["steps"] == 3
    assert lines[-1]["message"] == "all good"
    finished = next(line for line in lines if line["type"] == "command_finished")
    assert finished["exit_code"] == 0 and finished["sent_to_llm"] == "hello-from-kosmos"
    assert llm.requests[0].messages[1]["content"] == (
        "Execute skill: probe\n\nParameters:\n- target: disk\n- mode: fast\n\n[Step 1 of 100]"
    )
    assert llm.requests[2].last_user_text == "User response: the first\n\n[Step 3 of 100]"
    events = read_transcript(transcript)
    assert [e.type for e in events][0] == "run_started"
    assert events[-1].type == "result"
    cmd = next(e for e in events if e.type == "command_finished")
    assert cmd.output == "hello-from-kosmos\n"


def test_transcript_goes_to_the_state_dir_and_its_path_is_printed(
    llm: ScriptedLLM, cli_env: dict, project: Path, home: Path
) -> None:
    llm.script("[DONE] ok")
    proc = run_cli(
        ["run", "probe", "--param", "target=x", "--non-interactive"], env=cli_env, cwd=project
    )
    assert proc.returncode == 0, proc.stderr
    runs = list((home / ".local/state/kosmos/runs").glob("*.jsonl"))
    assert len(runs) == 1
    assert str(runs[0]) in proc.stderr


def test_command_without_yes_in_non_interactive_mode_is_exit_4(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    llm.script("[CMD] touch should-not-exist")
    proc = run_cli(
        ["run", "probe", "--param", "target=x", "--non-interactive", "--json"],
        env=cli_env,
        cwd=project,
    )
    assert proc.returncode == 4
    assert "--yes" in proc.stderr
    assert json_lines(proc.stdout)[-1]["status"] == "needs_input"
    assert not (project / "should-not-exist").exists()


def test_required_ask_without_answer_is_exit_4(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    llm.script("[ASK] Commit message?")
    proc = run_cli(
        ["run", "probe", "--param", "target=x", "--non-interactive", "--yes"],
        env=cli_env,
        cwd=project,
    )
    assert proc.returncode == 4
    assert "Commit message?" in proc.stderr and "--answer" in proc.stderr
    # The run stopped at its first step: the count is the steps reached, not the next one.
    assert "■ needs input · 1 step ·" in proc.stderr


def test_optional_ask_without_answer_is_skipped(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    llm.script("[ASK:optional] Tag?", "[DONE] ok")
    proc = run_cli(
        ["run", "probe", "--param", "target=x", "--non-interactive"], env=cli_env, cwd=project
    )
    assert proc.returncode == 0, proc.stderr
    assert llm.requests[1].last_user_text == "User response: \n\n[Step 2 of 100]"


def test_missing_required_param_non_interactive_is_exit_2(cli_env: dict, project: Path) -> None:
    proc = run_cli(["run", "probe", "--non-interactive", "--json"], env=cli_env, cwd=project)
    assert proc.returncode == 2
    assert "target" in proc.stderr and "--param" in proc.stderr
    assert json_lines(proc.stdout)[-1]["status"] == "error"


def test_missing_required_param_is_asked_in_line_mode(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    # Without tool calling the plain prompt asks for it (with it, a dialogue does: seed 003).
    (project / "kosmos.yaml").write_text("providers: {openai: {capabilities: {tools: false}}}\n")
    llm.script("[DONE] ok")
    proc = run_cli(["run", "probe"], env=cli_env, cwd=project, stdin="memory\n")
    assert proc.returncode == 0, proc.stderr
    assert "target" in proc.stderr
    assert "- target: memory" in llm.requests[0].messages[1]["content"]


def test_bad_choice_is_exit_2(cli_env: dict, project: Path) -> None:
    proc = run_cli(
        ["run", "probe", "--param", "target=x", "--param", "mode=turbo", "--non-interactive"],
        env=cli_env,
        cwd=project,
    )
    assert proc.returncode == 2
    assert "fast" in proc.stderr and "slow" in proc.stderr


def test_unknown_skill_names_the_closest(cli_env: dict, project: Path) -> None:
    proc = run_cli(["run", "prob", "--non-interactive"], env=cli_env, cwd=project)
    assert proc.returncode == 2
    assert "probe" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_broken_skill_file_is_path_line_and_exit_2(cli_env: dict, project: Path) -> None:
    broken = project / ".kosmos/skills/broken"
    broken.mkdir()
    (broken / "SKILL.md").write_text("---\nname: broken\nhistory_mode: sometimes\n---\nBody\n")
    proc = run_cli(["run", "broken", "--non-interactive"], env=cli_env, cwd=project)
    assert proc.returncode == 2
    assert f"{broken / 'SKILL.md'}:3:" in proc.stderr


def test_bad_config_value_is_exit_2_with_file_and_key(cli_env: dict, project: Path) -> None:
    (project / "kosmos.yaml").write_text("model: x\ntemperature: hot\n")
    proc = run_cli(
        ["run", "probe", "--param", "target=x", "--non-interactive"], env=cli_env, cwd=project
    )
    assert proc.returncode == 2
    assert "kosmos.yaml" in proc.stderr and "temperature" in proc.stderr and "0 to 2" in proc.stderr


def test_flags_beat_environment_beat_config(llm: ScriptedLLM, cli_env: dict, project: Path) -> None:
    (project / "kosmos.yaml").write_text("model: from-file\nmax_tokens: 99\n")
    llm.script("[DONE] ok", "[DONE] ok", "[DONE] ok")
    args = ["run", "probe", "--param", "target=x", "--non-interactive"]
    run_cli(args, env=cli_env, cwd=project)
    run_cli(args, env={**cli_env, "AI_MODEL": "from-env"}, cwd=project)
    run_cli([*args, "--model", "from-flag"], env={**cli_env, "AI_MODEL": "from-env"}, cwd=project)
    assert [r.body["model"] for r in llm.requests] == ["from-file", "from-env", "from-flag"]
    assert llm.requests[0].body["max_tokens"] == 99


def test_unreadable_knowledge_file_is_a_warning_not_a_crash(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    """A knowledge file that is a symbolic link loop: one warning naming it, the run goes on."""
    (project / ".kosmos-panel").mkdir()
    (project / ".kosmos-panel/ai_system_promt.md").symlink_to("ai_system_promt.md")
    llm.script("[CMD] echo still-running", "[DONE] fine")
    transcript = project / "run.jsonl"
    proc = run_cli(
        ["run", "probe", "--param", "target=x", "--non-interactive", "--yes",
         "--transcript", str(transcript)],
        env=cli_env,
        cwd=project,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if "knowledge file skipped" in line]
    assert len(warnings) == 1
    assert "./.kosmos-panel/ai_system_promt.md: a symbolic link that leads nowhere" in warnings[0]
    assert "--- System Context ---" not in llm.requests[0].system
    events = read_transcript(transcript)
    assert any(e.type == "warning" and "knowledge file skipped" in e.message for e in events)
    assert events[-1].type == "result" and events[-1].status == "done"


def test_llm_down_is_exit_5_with_how_to_fix(cli_env: dict, project: Path) -> None:
    env = {**cli_env, "AI_KOSMOS_MODEL_BASE_URL": "http://127.0.0.1:9/v1"}
    proc = run_cli(
        ["run", "probe", "--param", "target=x", "--non-interactive"], env=env, cwd=project
    )
    assert proc.returncode == 5
    assert "connection refused" in proc.stderr and "ollama" in proc.stderr


def test_api_key_never_reaches_output_or_transcript(
    llm: ScriptedLLM, cli_env: dict, project: Path, home: Path
) -> None:
    llm.script(Status(401, {"error": {"message": "bad key"}}))
    env = {**cli_env, "KOSMOS_API_KEY": "sk-canary-9f8e7d"}
    proc = run_cli(
        ["run", "probe", "--param", "target=x", "--non-interactive", "--json"], env=env, cwd=project
    )
    assert proc.returncode == 5
    assert llm.requests[0].headers["authorization"] == "Bearer sk-canary-9f8e7d"
    assert "sk-canary-9f8e7d" not in proc.stdout + proc.stderr
    for path in (home / ".local/state/kosmos/runs").glob("*.jsonl"):
        assert "sk-canary-9f8e7d" not in path.read_text()


def test_line_mode_run_skip_edit(llm: ScriptedLLM, cli_env: dict, project: Path) -> None:
    llm.script("[CMD] echo one", "[CMD] echo two", "[CMD] echo three", "[DONE] ok")
    proc = run_cli(
        ["run", "probe", "--param", "target=x"],
        env=cli_env,
        cwd=project,
        stdin="y\nn\ne\necho edited\n",
    )
    assert proc.returncode == 0, proc.stderr
    assert "Run? [y/N/e/a]" in proc.stderr
    assert llm.requests[1].last_user_text.startswith("Command output:\none\n")
    assert llm.requests[2].last_user_text.startswith("User skipped the command.")
    assert llm.requests[3].messages[-2]["content"] == "[CMD] echo edited"
    assert llm.requests[3].last_user_text.startswith("Command output:\nedited\n")
    assert "one" in proc.stdout and "edited" in proc.stdout


def test_line_mode_end_of_input_is_exit_4(llm: ScriptedLLM, cli_env: dict, project: Path) -> None:
    llm.script("[CMD] echo one")
    proc = run_cli(["run", "probe", "--param", "target=x"], env=cli_env, cwd=project, stdin="")
    assert proc.returncode == 4
    assert "· 1 step ·" in proc.stderr


def _wait_for(path: Path, text: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text():
            return
        time.sleep(0.05)
    raise AssertionError(f"{text!r} never appeared in {path}")


def _start(args: list[str], env: dict, cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "kosmos", *args],
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_killed_run_leaves_an_intact_transcript(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    llm.script("[CMD] echo step-one", "[CMD] sleep 30")
    transcript = project / "t.jsonl"
    proc = _start(
        [
            "run",
            "probe",
            "--param",
            "target=x",
            "--non-interactive",
            "--yes",
            "--transcript",
            str(transcript),
        ],
        cli_env,
        project,
    )
    _wait_for(transcript, '"command_started", "ts"')
    _wait_for(transcript, '"command": "sleep 30","seal":"')  # its command_started line
    proc.kill()
    proc.communicate(timeout=10)
    events = read_transcript(transcript)
    types = [e.type for e in events]
    assert types[0] == "run_started"
    assert "command_finished" in types
    assert types[-1] == "command_started"
    assert all(line.endswith("}") for line in transcript.read_text().splitlines())


def test_a_transcript_another_run_is_writing_is_refused(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    # The first run's command waits, holding its transcript open, until the test lets it go.
    llm.script("[CMD] until test -e flag; do sleep 0.05; done; echo released", "[DONE] first")
    transcript = project / "t.jsonl"
    args = ["run", "probe", "--param", "target=x", "--non-interactive", "--yes"]
    args += ["--transcript", str(transcript)]
    first = _start(args, cli_env, project)
    try:
        _wait_for(transcript, '"command_started", "ts"')
        second = run_cli(args, env=cli_env, cwd=project)
        (project / "flag").touch()
        _, err = first.communicate(timeout=60)
    finally:
        if first.poll() is None:
            first.kill()
            first.communicate(timeout=10)
    assert second.returncode == 2
    assert second.stderr.splitlines() == [
        f"kosmos: the transcript {transcript} is being written by another kosmos run; wait "
        "for it to end, or give --transcript another path"
    ]
    assert first.returncode == 0, err
    events = read_transcript(transcript)
    assert [e.type for e in events].count("run_started") == 1
    assert events[-1].type == "result" and events[-1].message == "first"
    # Closed by its run, the file is free for the next one.
    llm.script("[DONE] second")
    third = run_cli(args, env=cli_env, cwd=project)
    assert third.returncode == 0, third.stderr
    assert [e.type for e in read_transcript(transcript)].count("run_started") == 2


def test_sigterm_stops_the_command_and_exits_130(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    marker = "sleep 4242"
    llm.script(f"[CMD] {marker}")
    transcript = project / "t.jsonl"
    proc = _start(
        [
            "run",
            "probe",
            "--param",
            "target=x",
            "--non-interactive",
            "--yes",
            "--transcript",
            str(transcript),
        ],
        cli_env,
        project,
    )
    _wait_for(transcript, marker)
    wait_until(lambda: running(marker), what=f"the command's {marker} to run")
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=15)
    assert proc.returncode == 130, err
    events = read_transcript(transcript)
    assert events[-1].type == "result" and events[-1].status == "aborted"
    need("ps", "procps")
    ps = subprocess.run(["ps", "-eo", "args="], capture_output=True, text=True).stdout
    assert marker not in ps


def test_skills_list_and_show(cli_env: dict, project: Path) -> None:
    proc = run_cli(["skills", "list"], env=cli_env, cwd=project)
    assert proc.returncode == 0, proc.stderr
    probe = next(line for line in proc.stdout.splitlines() if line.startswith("probe "))
    assert "Look at one thing" in probe and "project" in probe
    assert any(line.startswith("system-overview ") for line in proc.stdout.splitlines())
    proc = run_cli(["skills", "show", "probe"], env=cli_env, cwd=project)
    assert proc.returncode == 0
    assert "target" in proc.stdout and "required" in proc.stdout
    assert "## What I do" in proc.stdout
    assert "name: probe" not in proc.stdout


def test_skills_from_the_wild_list_on_one_line_each_with_one_warning(
    cli_env: dict, project: Path
) -> None:
    skills = project / ".kosmos-panel/skills"
    (skills / "block").mkdir(parents=True)
    (skills / "block/SKILL.md").write_text(
        "---\nname: block\ndescription: |\n  Shows what fills\n  the disk.\n---\nRun df.\n"
    )
    (skills / "lost").mkdir()
    (skills / "lost/SKILL.md").write_bytes(
        "\ufeffname: lost-opening\ndescription: Its opening line is lost\n---\nRun df.\n".encode()
    )
    (skills / "quote").mkdir()
    (skills / "quote/SKILL.md").write_text('---\nname: "quoted\n---\nRun df.\n')
    proc = run_cli(["skills", "list"], env=cli_env, cwd=project)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert any(line.startswith("block ") and "Shows what fills the disk." in line for line in lines)
    assert not any(line.startswith("the disk.") or line.strip() == "the disk." for line in lines)
    assert any(line.startswith("lost-opening ") and "lost" in line for line in lines)
    warnings = [line for line in proc.stderr.splitlines() if "quote/SKILL.md:2:" in line]
    assert len(warnings) == 1 and warnings[0].startswith("warning: ")


def test_skills_flags_have_help(cli_env: dict, project: Path) -> None:
    for args, host_help in [
        (["skills", "list"], "also list the skills on this host"),
        (["skills", "show"], "also look for the skill on this host"),
    ]:
        proc = run_cli([*args, "--help"], env=cli_env, cwd=project)
        assert proc.returncode == 0, proc.stderr
        flat = " ".join(proc.stdout.split())
        assert "--skills-dir DIR look for skills here first (repeatable)" in flat
        assert f"--host TARGET {host_help}" in flat


def test_python_dash_m_and_version(cli_env: dict, project: Path) -> None:
    proc = run_cli(["--version"], env=cli_env, cwd=project)
    assert proc.returncode == 0 and proc.stdout.startswith("kosmos ")


def test_version_names_the_python_and_the_key_libraries(cli_env: dict, project: Path) -> None:
    from importlib import metadata

    proc = run_cli(["--version"], env=cli_env, cwd=project)
    assert proc.returncode == 0 and proc.stderr == ""
    first, python, libraries = proc.stdout.splitlines()
    assert python.startswith(f"CPython {platform.python_version()} on ")
    assert sys.executable in python
    for name in ("asyncssh", "cryptography", "httpx", "mcp", "pydantic", "textual"):
        assert f"{name} {metadata.version(name)}" in libraries.split(", ")


@pytest.mark.slow
def test_plain_pip_install_runs_a_bundled_skill(
    tmp_path: Path, llm: ScriptedLLM, cli_env: dict
) -> None:
    """A non-editable install into a fresh venv ships prompts.json and the bundled skills."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    # The dependencies (and hatchling, to build) come from the venv running the tests.
    site = next(venv.glob("lib/python*/site-packages"))
    outer = [p for p in sys.path if p.endswith("site-packages")]
    (site / "outer.pth").write_text("\n".join(outer) + "\n")
    pip = subprocess.run(
        [str(venv / "bin/pip"), "install", "-q", "--no-deps", "--no-build-isolation", str(ROOT)],
        capture_output=True,
        text=True,
    )
    assert pip.returncode == 0, pip.stderr
    where = tmp_path / "elsewhere"
    where.mkdir()
    env = {k: v for k, v in cli_env.items() if k != "PYTHONPATH"}
    located = subprocess.run(
        [
            str(venv / "bin/python"),
            "-c",
            "import kosmos, kosmos.resources as r; print(kosmos.__file__); print(r.data_dir())",
        ],
        env=env,
        cwd=where,
        capture_output=True,
        text=True,
    )
    assert str(venv) in located.stdout.splitlines()[0]
    assert located.stdout.splitlines()[1].endswith("kosmos/data")
    llm.script("[CMD] uname -s", "[DONE] Linux box")
    proc = subprocess.run(
        [
            str(venv / "bin/kosmos"),
            "run",
            "system-overview",
            "--non-interactive",
            "--yes",
            "--json",
        ],
        env=env,
        cwd=where,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert json_lines(proc.stdout)[-1]["message"] == "Linux box"
    assert "--- Active Skill: system-overview ---" in llm.requests[0].system
    assert os.path.basename(json_lines(proc.stdout)[0]["skill_path"]) == "SKILL.md"
    # The README's first command: the bundled recording ships in the wheel; no LLM needed.
    offline = {**env, "AI_KOSMOS_MODEL_BASE_URL": "http://127.0.0.1:9/v1"}
    proc = subprocess.run(
        [str(venv / "bin/kosmos"), "run", "system-overview", "--replay", "bundled"],
        env=offline,
        cwd=where,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "kosmos/data/recordings/system-overview.jsonl (no LLM)" in proc.stdout
    # Honest about whose report it is, and one notice for the expected differences at most.
    assert "DONE OK (this report is the recorded one, about the demo host;" in proc.stdout
    assert (proc.stdout + proc.stderr).count("differs from the recording") <= 1


def test_ctrl_c_in_line_mode_stops_the_command_and_the_run_goes_on(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    llm.script("[CMD] echo before; sleep 4344", "[DONE] stopped it")
    transcript = project / "t.jsonl"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kosmos",
            "run",
            "probe",
            "--param",
            "target=x",
            "--transcript",
            str(transcript),
        ],
        env=cli_env,
        cwd=project,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None
    proc.stdin.write("y\n")
    proc.stdin.flush()
    _wait_for(transcript, "sleep 4344")
    wait_until(lambda: running("sleep 4344"), what="the command's sleep 4344 to run")
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert "stopping the command" in err
    told = llm.requests[1].last_user_text
    assert told.startswith("Command output:\nbefore\n[stopped by the operator after ")
    need("ps", "procps")
    ps = subprocess.run(["ps", "-eo", "args="], capture_output=True, text=True).stdout
    assert "sleep 4344" not in ps


def test_ctrl_c_while_waiting_for_the_operator_ends_the_run(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    llm.script("[ASK] Which one?")
    transcript = project / "t.jsonl"
    with pseudo_terminal() as (_, tty):  # a person at a terminal, who types nothing
        proc = subprocess.Popen(
            [sys.executable, "-m", "kosmos", "run", "probe", "--param", "target=x",
             "--transcript", str(transcript)],
            env=cli_env,
            cwd=project,
            stdin=tty,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )  # fmt: skip
        assert proc.stderr is not None
        _wait_for(transcript, '"kind": "ask"')
        shown = read_until(proc.stderr.fileno(), b"> ")  # the answer's prompt: its line is open
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=20)  # the terminal stays open: the run must end by the signal alone
        _, rest = proc.communicate(timeout=5)
    err = (shown + rest).decode()
    assert proc.returncode == 130, err
    assert read_transcript(transcript)[-1].status == "aborted"
    # The open prompt's line is ended: the summary starts a line of its own.
    assert any(line.startswith("■ aborted · 1 step ·") for line in err.splitlines()), err


def test_sigterm_while_connecting_exits_130_with_one_line(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    # A port that accepts and never says a word: kosmos waits for the SSH banner.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        silent.settimeout(20)
        port = silent.getsockname()[1]
        proc = _start(
            [
                "run",
                "probe",
                "--param",
                "target=x",
                "--host",
                f"127.0.0.1:{port}",
                "--json",
                "--non-interactive",
            ],
            cli_env,
            project,
        )
        conn, _ = silent.accept()
        with conn:
            # kosmos's SSH client says its version first: it is in the handshake, waiting.
            assert read_until(conn.fileno(), b"\r\n").startswith(b"SSH-2.0-")
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=20)
    assert proc.returncode == 130, err
    assert err.strip() == "kosmos: interrupted before the run started; nothing was run"
    result = json_lines(out)[-1]
    assert (result["status"], result["exit_code"]) == ("aborted", 130)
    assert llm.requests == []
