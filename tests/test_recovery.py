"""Recovery as a user meets it: resume after kill -9, an LLM outage or a missing answer; replay."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kosmos.transcript import read_transcript
from tests.conftest import run_cli
from tests.helpers import need
from tests.llmserver import ScriptedLLM, Status, call, calls


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    (path / ".kosmos/skills/probe").mkdir(parents=True)
    (path / ".kosmos/skills/probe/SKILL.md").write_text(
        "---\nname: probe\ndescription: look\n---\nLook around.\n"
    )
    # An LLM outage is one HTTP 500: no retries, no backoff to wait through.
    (path / "kosmos.yaml").write_text("llm_retries: 0\n")
    return path


def _wait_for(path: Path, text: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text():
            return
        time.sleep(0.05)
    raise AssertionError(f"{text!r} never appeared in {path}")


# The second command waits until a flag file exists, so the first run can be killed inside
# it and a re-run after resuming finishes at once.
SLOW = "echo $$ > slow.pid; test -e flag || sleep 30; echo slow-done"


def _killed_mid_command(llm: ScriptedLLM, env: dict, project: Path) -> Path:
    llm.script("[CMD] echo step-one", f"[CMD] {SLOW}")
    transcript = project / "t.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "kosmos", "run", "probe", "--non-interactive", "--yes"]
        + ["--transcript", str(transcript)],
        env=env,
        cwd=project,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    _wait_for(transcript, "slow-done")
    _wait_for(project / "slow.pid", "\n")
    proc.kill()  # kill -9: no chance to write anything more
    proc.communicate(timeout=10)
    # The command's own process group outlives a kill -9 of kosmos; end it by its id.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(int((project / "slow.pid").read_text()), signal.SIGKILL)
    (project / "slow.pid").unlink()
    assert read_transcript(transcript)[-1].type == "command_started"
    return transcript


def test_resume_after_kill_9_headless_does_not_rerun_the_lost_command(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    transcript = _killed_mid_command(llm, cli_env, project)
    before = len(llm.requests)
    llm.script("[DONE] resumed")
    proc = run_cli(
        ["run", "--resume", str(transcript), "--non-interactive", "--yes"],
        env=cli_env,
        cwd=project,
    )
    # The LLM finished without the lost command, which only a person may run again: the
    # run ends needing one (exit 4), not done.
    assert proc.returncode == 4, proc.stderr
    assert "1 command the skill needed was refused and nothing ran in its place" in proc.stderr
    assert len(llm.requests) == before + 1
    messages = llm.requests[-1].messages
    # The whole conversation is back: system, first request, step one and its output...
    assert [m["role"] for m in messages] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    assert messages[3]["content"].startswith("Command output:\nstep-one")
    assert messages[4]["content"] == f"[CMD] {SLOW}"
    # ...and the lost command was not run again: the LLM is told its result is unknown.
    assert messages[5]["content"].startswith("The command was not run: kosmos was interrupted")
    events = read_transcript(transcript)
    starts = [e for e in events if e.type == "run_started"]
    assert len(starts) == 2 and starts[1].resumed_from == str(transcript)
    assert [e.command for e in events if e.type == "command_started"].count(SLOW) == 1
    assert events[-1].type == "result" and events[-1].status == "needs_input"


@pytest.mark.parametrize("fleet", [False, True], ids=["run", "fleet"])
def test_a_command_runs_only_once_the_transcript_holds_its_start(
    llm: ScriptedLLM, cli_env: dict, project: Path, fleet: bool
) -> None:
    """A kill -9 at any moment after a command has started leaves its `command_started` in
    the transcript (so that a resumed run never runs it again): each command counts, as it
    starts, the starts its transcript holds on the disk."""
    if fleet:  # a fleet of one host: its transcript is web1.jsonl in the run's folder
        hosts = project / "hosts.yml"
        hosts.write_text("all:\n  hosts:\n    web1:\n      ansible_host: local\n")
        where = ["-i", str(hosts), "--hosts", "web1", "--transcript", str(project / "runs")]
        transcript = project / "runs" / "web1.jsonl"
    else:
        transcript = project / "t.jsonl"
        where = ["--transcript", str(transcript)]
    count = f'grep -c \'"type": "command_started"\' {transcript}'
    llm.script(*(f"[CMD] {count} # {i}" for i in range(3)), "[DONE] ok")
    proc = run_cli(["run", "probe", "--non-interactive", "--yes", *where], env=cli_env, cwd=project)
    assert proc.returncode == 0, proc.stderr
    events = read_transcript(transcript)
    assert [e.output.strip() for e in events if e.type == "command_finished"] == ["1", "2", "3"]


def test_replay_of_a_resumed_run_does_not_run_the_lost_command(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    transcript = _killed_mid_command(llm, cli_env, project)
    llm.script("[DONE] resumed")
    args = ["--non-interactive", "--yes"]
    proc = run_cli(["run", "--resume", str(transcript), *args], env=cli_env, cwd=project)
    assert proc.returncode == 4, proc.stderr  # finished without the lost command
    # Were the lost command run now, it would finish at once and leave its pid file.
    (project / "flag").write_text("")
    offline = {**cli_env, "AI_KOSMOS_MODEL_BASE_URL": "http://127.0.0.1:9/v1"}
    proc = run_cli(
        ["run", "probe", "--replay", str(transcript), *args, "--json"], env=offline, cwd=project
    )
    assert proc.returncode == 4, proc.stderr
    assert "differs" not in proc.stderr
    assert not (project / "slow.pid").exists()
    lines = [json.loads(x) for x in proc.stdout.splitlines()]
    assert [x["command"] for x in lines if x["type"] == "command_started"] == ["echo step-one"]
    decisions = [
        (x["step"], x["decision"], x["by"]) for x in lines if x["type"] == "command_decision"
    ]
    assert decisions == [(1, "run", "policy"), (2, "refused", "replay")]
    assert [x["text"] for x in lines if x["type"] == "directive"][-1] == "resumed"
    assert lines[-1]["status"] == "needs_input"


def test_resume_in_line_mode_asks_before_rerunning_even_with_yes(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    transcript = _killed_mid_command(llm, cli_env, project)
    (project / "flag").write_text("")
    llm.script("[DONE] resumed")
    proc = run_cli(
        ["run", "--resume", str(transcript), "--yes"], env=cli_env, cwd=project, stdin="y\n"
    )
    assert proc.returncode == 0, proc.stderr
    assert "Run? [y/N/e/a]" in proc.stderr
    assert llm.requests[-1].last_user_text.startswith("Command output:\nslow-done")
    assert (project / "slow.pid").exists()  # it ran again, after the operator said so


def test_replay_of_a_resumed_run_reruns_the_lost_command_only_as_the_operator_did(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    transcript = _killed_mid_command(llm, cli_env, project)
    (project / "flag").write_text("")
    llm.script("[DONE] resumed")
    proc = run_cli(
        ["run", "--resume", str(transcript), "--yes"], env=cli_env, cwd=project, stdin="y\n"
    )
    assert proc.returncode == 0, proc.stderr
    (project / "slow.pid").unlink()
    offline = {**cli_env, "AI_KOSMOS_MODEL_BASE_URL": "http://127.0.0.1:9/v1"}
    replay = ["run", "probe", "--replay", str(transcript), "--json"]
    # Headless, the resuming operator's yes is not this run's: nothing reruns without one.
    proc = run_cli([*replay, "--non-interactive"], env=offline, cwd=project)
    assert proc.returncode == 4, proc.stderr
    assert not (project / "slow.pid").exists()
    # At the terminal the person is asked again, as the resuming operator was.
    proc = run_cli(replay, env=offline, cwd=project, stdin="y\n")
    assert proc.returncode == 0, proc.stderr
    assert (project / "slow.pid").exists()
    lines = [json.loads(x) for x in proc.stdout.splitlines()]
    decisions = [
        (x["step"], x["decision"], x["by"]) for x in lines if x["type"] == "command_decision"
    ]
    # The read runs as recorded (in the lock); the write, by this run's person.
    assert decisions == [(1, "run", "replay"), (2, "run", "operator")]


def test_resume_after_llm_outage_sends_the_same_conversation(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    llm.script("[CMD] echo one", Status(500))
    transcript = project / "t.jsonl"
    args = ["run", "probe", "--non-interactive", "--yes", "--transcript", str(transcript)]
    proc = run_cli(args, env=cli_env, cwd=project)
    assert proc.returncode == 5
    failed = llm.requests[-1].messages
    llm.script("[DONE] ok")
    proc = run_cli(
        ["run", "--resume", str(transcript), "--non-interactive"], env=cli_env, cwd=project
    )
    assert proc.returncode == 0, proc.stderr
    assert llm.requests[-1].messages == failed


def test_resume_into_another_transcript_keeps_it_whole(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    llm.script("[CMD] echo one", Status(500))
    first = project / "first.jsonl"
    args = ["--non-interactive", "--yes"]
    proc = run_cli(["run", "probe", *args, "--transcript", str(first)], env=cli_env, cwd=project)
    assert proc.returncode == 5
    second = project / "second.jsonl"
    llm.script("[CMD] echo two", Status(500))
    proc = run_cli(
        ["run", "--resume", str(first), *args, "--transcript", str(second)],
        env=cli_env,
        cwd=project,
    )
    assert proc.returncode == 5
    sent = llm.requests[-1].messages
    # The second file alone holds the whole conversation: resuming it sends the same.
    llm.script("[DONE] ok")
    proc = run_cli(["run", "--resume", str(second), *args], env=cli_env, cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert llm.requests[-1].messages == sent
    assert [m["content"] for m in sent if m["role"] == "assistant"] == [
        "[CMD] echo one",
        "[CMD] echo two",
    ]


def test_resume_at_a_question_uses_the_recorded_reply(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    llm.script("[ASK] Which port?")
    transcript = project / "t.jsonl"
    proc = run_cli(
        ["run", "probe", "--non-interactive", "--transcript", str(transcript)],
        env=cli_env,
        cwd=project,
    )
    assert proc.returncode == 4
    llm.script("[DONE] ok")
    proc = run_cli(
        ["run", "--resume", str(transcript), "--non-interactive", "--answer", "8080"],
        env=cli_env,
        cwd=project,
    )
    assert proc.returncode == 0, proc.stderr
    assert len(llm.requests) == 2  # the question was not asked of the LLM again
    assert llm.requests[1].last_user_text.startswith("User response: 8080")


def test_resume_of_a_finished_run_or_a_missing_file_is_exit_2(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    llm.script("[DONE] ok")
    transcript = project / "t.jsonl"
    run_cli(
        ["run", "probe", "--non-interactive", "--transcript", str(transcript)],
        env=cli_env,
        cwd=project,
    )
    proc = run_cli(["run", "--resume", str(transcript)], env=cli_env, cwd=project)
    assert proc.returncode == 2 and "already finished" in proc.stderr
    proc = run_cli(["run", "--resume", "nope.jsonl"], env=cli_env, cwd=project)
    assert proc.returncode == 2 and "no such transcript" in proc.stderr


def test_resume_after_sigterm_continues_the_aborted_run(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    llm.script("[CMD] echo $$ > slow.pid; sleep 30")
    transcript = project / "t.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "kosmos", "run", "probe", "--non-interactive", "--yes"]
        + ["--transcript", str(transcript)],
        env=cli_env,
        cwd=project,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    _wait_for(project / "slow.pid", "\n")
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=15)
    assert proc.returncode == 130
    assert read_transcript(transcript)[-1].status == "aborted"
    # The command's process group was ended with the run (zombies awaiting init aside).
    group = int((project / "slow.pid").read_text())
    need("ps", "procps")
    ps = subprocess.run(["ps", "-eo", "pgid=,stat="], capture_output=True, text=True).stdout
    alive = [line for line in ps.splitlines() if line.split()[0] == str(group)]
    assert all(line.split()[1].startswith("Z") for line in alive), alive
    llm.script("[DONE] resumed")
    proc2 = run_cli(
        ["run", "--resume", str(transcript), "--non-interactive"], env=cli_env, cwd=project
    )
    assert proc2.returncode == 4, proc2.stderr  # finished without the lost command
    assert "kosmos was interrupted while it ran" in llm.requests[-1].last_user_text


def test_resume_and_replay_keep_the_tools_protocol(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    llm.script(
        calls(call("run_command", id="c1", command="echo via-tools")),
        Status(500),
    )
    transcript = project / "t.jsonl"
    args = ["--non-interactive", "--yes", "--transcript", str(transcript)]
    proc = run_cli(["run", "probe", "--protocol", "tools", *args], env=cli_env, cwd=project)
    assert proc.returncode == 5
    failed = llm.requests[-1].body["messages"]
    assert failed[-1]["role"] == "tool" and failed[-1]["tool_call_id"] == "c1"
    llm.script(calls(call("finish", id="c2", summary="ok")))
    proc = run_cli(["run", "--resume", str(transcript), *args], env=cli_env, cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert llm.requests[-1].body["messages"] == failed
    assert "tools" in llm.requests[-1].body
    # The two segments replay as one run, with no LLM.
    offline = {**cli_env, "AI_KOSMOS_MODEL_BASE_URL": "http://127.0.0.1:9/v1"}
    proc = run_cli(
        ["run", "probe", "--replay", str(transcript), "--non-interactive", "--json"],
        env=offline,
        cwd=project,
    )
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(x) for x in proc.stdout.splitlines()]
    assert lines[0]["protocol"] == "tools"
    assert [x["command"] for x in lines if x["type"] == "command_started"] == ["echo via-tools"]


# -- replay ---------------------------------------------------------------------------------


def _record(llm: ScriptedLLM, env: dict, project: Path) -> Path:
    (project / "f.txt").write_text("alpha\nbeta\n")
    llm.script(
        "[CMD] echo same",
        "[ASK] Your name?",
        "[CMD] cat f.txt",
        "[CMD] touch skipped-file",
        "[DONE] recorded",
    )
    transcript = project / "recorded.jsonl"
    proc = run_cli(
        ["run", "probe", "--transcript", str(transcript)],
        env=env,
        cwd=project,
        stdin="y\nbob\ny\nn\n",
    )
    assert proc.returncode == 0, proc.stderr
    return transcript


def test_replay_runs_the_commands_again_with_no_llm(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    recorded = _record(llm, cli_env, project)
    offline = {**cli_env, "AI_KOSMOS_MODEL_BASE_URL": "http://127.0.0.1:9/v1"}
    out = project / "replayed.jsonl"
    proc = run_cli(
        ["run", "probe", "--replay", str(recorded), "--non-interactive", "--json"]
        + ["--transcript", str(out)],
        env=offline,
        cwd=project,
    )
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(x) for x in proc.stdout.splitlines()]
    assert lines[0]["replay_of"] == str(recorded)
    finished = [x for x in lines if x["type"] == "command_finished"]
    assert [x["command"] for x in finished] == ["echo same", "cat f.txt"]
    decisions = [(x["decision"], x["by"]) for x in lines if x["type"] == "command_decision"]
    assert decisions == [("run", "replay"), ("run", "replay"), ("skip", "replay")]
    answers = [x["answer"] for x in lines if x["type"] == "answer"]
    assert answers == ["bob"] and lines[-1]["message"] == "recorded"
    assert not (project / "skipped-file").exists()


def test_replay_with_different_output_exits_1_or_warns_when_tolerant(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    recorded = _record(llm, cli_env, project)
    (project / "f.txt").write_text("alpha\nGAMMA\n")
    args = ["run", "probe", "--replay", str(recorded), "--non-interactive"]
    proc = run_cli(args, env=cli_env, cwd=project)
    assert proc.returncode == 1
    assert (
        "replay: step 3: the command output differs from the recording "
        "(line 2: recorded 'beta', now 'GAMMA'); pass --replay-tolerant to only warn"
    ) in proc.stderr
    proc = run_cli([*args, "--replay-tolerant"], env=cli_env, cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert "replay: step 3: the command output differs" in proc.stderr


def test_bundled_recording_replays_on_this_machine(cli_env: dict, project: Path) -> None:
    offline = {**cli_env, "AI_KOSMOS_MODEL_BASE_URL": "http://127.0.0.1:9/v1"}
    proc = run_cli(["run", "system-overview", "--replay", "bundled"], env=offline, cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert "system prompt differs" not in proc.stderr  # the recording matches the skill
    assert proc.stdout.count("(as recorded)") >= 5
    assert "done ·" in proc.stdout


def test_replay_of_another_skill_or_resume_with_params_is_exit_2(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    recorded = _record(llm, cli_env, project)
    proc = run_cli(
        ["run", "system-overview", "--replay", str(recorded), "--non-interactive"],
        env=cli_env,
        cwd=project,
    )
    assert proc.returncode == 2
    assert "records a run of probe, not system-overview; try: kosmos run probe --replay" in (
        proc.stderr
    )
    proc = run_cli(["run", "--resume", str(recorded), "--param", "x=1"], env=cli_env, cwd=project)
    assert proc.returncode == 2 and "keeps the parameters and prompt" in proc.stderr
    # Another skill's name with --resume is refused the same way, before the LLM is asked.
    unfinished = project / "unfinished.jsonl"
    unfinished.write_text("".join(recorded.read_text().splitlines(keepends=True)[:-1]))
    asked = len(llm.requests)
    proc = run_cli(
        ["run", "system-overview", "--resume", str(unfinished), "--non-interactive"],
        env=cli_env,
        cwd=project,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == (
        f"kosmos: {unfinished} is a run of probe, not system-overview: a resumed run keeps its "
        "skill; drop system-overview, or start a new run"
    )
    assert len(llm.requests) == asked


def test_replay_takes_the_recorded_parameters(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    (project / ".kosmos/skills/needs").mkdir(parents=True)
    (project / ".kosmos/skills/needs/SKILL.md").write_text(
        "---\nname: needs\ndescription: d\nparams:\n  - name: target\n    required: true\n"
        "---\nLook at the target.\n"
    )
    llm.script("[CMD] echo checked", "[DONE] ok")
    recorded = project / "r.jsonl"
    args = ["run", "needs", "--non-interactive", "--yes"]
    proc = run_cli(
        [*args, "--param", "target=disk", "--transcript", str(recorded)], env=cli_env, cwd=project
    )
    assert proc.returncode == 0, proc.stderr
    offline = {**cli_env, "AI_KOSMOS_MODEL_BASE_URL": "http://127.0.0.1:9/v1"}
    proc = run_cli([*args, "--replay", str(recorded)], env=offline, cwd=project)
    assert proc.returncode == 0, proc.stderr
    proc = run_cli(
        [*args, "--replay", str(recorded), "--param", "target=cpu"], env=offline, cwd=project
    )
    assert proc.returncode == 1
    assert "replay: step 1: the message to the LLM differs" in proc.stderr
    assert "recorded '- target: disk', now '- target: cpu'" in proc.stderr


def test_resume_after_a_memory_step_sends_its_result_and_does_not_redo_it(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    llm.script("[APPEND_MEMORY] MEMORY_log.md\nonce", "[DONE] ok")
    transcript = project / "t.jsonl"
    args = ["run", "probe", "--non-interactive", "--yes", "--transcript", str(transcript)]
    assert run_cli(args, env=cli_env, cwd=project).returncode == 0
    sent = llm.requests[-1].messages
    # Cut the transcript as a kill -9 would, right after the memory step finished.
    lines = transcript.read_text().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if '"type": "memory"' in line)
    transcript.write_text("".join(lines[: cut + 1]))
    llm.script("[DONE] ok")
    proc = run_cli(
        ["run", "--resume", str(transcript), "--non-interactive"], env=cli_env, cwd=project
    )
    assert proc.returncode == 0, proc.stderr
    assert llm.requests[-1].messages == sent
    assert sent[-1]["content"] == "Memory stored: MEMORY_log.md\n\n[Step 2 of 100]"
    assert (project / ".kosmos-panel/memory/MEMORY_log.md").read_text() == "once\n"


def test_replay_allows_reads_and_notes_as_the_operator_did(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    (project / "f.txt").write_text("alpha\n")
    llm.script(
        "[GET-FILE] f.txt", "[STORE] MEMORY_f.md\nalpha", "[STORE] MEMORY_g.md\nno", "[DONE] ok"
    )
    recorded = project / "recorded.jsonl"
    proc = run_cli(
        ["run", "probe", "--transcript", str(recorded)],
        env=cli_env,
        cwd=project,
        stdin="y\ny\nn\n",
    )
    assert proc.returncode == 0, proc.stderr
    (project / ".kosmos-panel/memory/MEMORY_f.md").unlink()
    offline = {**cli_env, "AI_KOSMOS_MODEL_BASE_URL": "http://127.0.0.1:9/v1"}
    replay = ["run", "probe", "--replay", str(recorded), "--json"]
    # Headless: the read is allowed as recorded; the note written on a yes given in the
    # recording is not written without one given here.
    proc = run_cli([*replay, "--non-interactive"], env=offline, cwd=project)
    assert proc.returncode == 4, proc.stderr
    assert "[STORE] MEMORY_f.md" in proc.stderr
    assert not (project / ".kosmos-panel/memory/MEMORY_f.md").exists()
    proc = run_cli(replay, env=offline, cwd=project, stdin="y\n")
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(x) for x in proc.stdout.splitlines()]
    done = [
        (x["type"], x["status"], x["by"]) for x in lines if x["type"] in ("file_read", "memory")
    ]
    assert done == [
        ("file_read", "done", "replay"),
        ("memory", "done", "operator"),
        ("memory", "skipped", "replay"),
    ]
    assert (project / ".kosmos-panel/memory/MEMORY_f.md").read_text() == "alpha\n"
    assert not (project / ".kosmos-panel/memory/MEMORY_g.md").exists()
