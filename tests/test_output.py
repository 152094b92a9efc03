"""What the LLM sees of real command output: cleaned, capped, with a status line."""

from __future__ import annotations

import subprocess
import tracemalloc
import uuid
from pathlib import Path

from kosmos.engine.session import LLM_MAX_BYTES, LLM_MAX_LINES, SessionOptions
from kosmos.events import CommandFinished
from tests.helpers import need, run_session
from tests.llmserver import ScriptedLLM


def output_part(message: str) -> str:
    """The cleaned output inside a 'Command output:' user message."""
    assert message.startswith("Command output:\n")
    body = message.removeprefix("Command output:\n")
    return body.rsplit("\n\n[Step ", 1)[0]


async def test_colours_progress_bars_and_invalid_utf8(llm: ScriptedLLM) -> None:
    command = (
        r"printf '\033[1;32mOK\033[0m build\n'; "
        r"printf 'Downloading  10%%\r\033[KDownloading  55%%\r\033[KDownloading 100%%\n'; "
        r"printf '\033]0;window title\007plain\n'; "
        r"printf 'bad \377\376 bytes\n'"
    )
    llm.script(f"[CMD] {command}", "[DONE] ok")
    run = await run_session(llm.base_url)
    seen = output_part(llm.requests[1].last_user_text)
    assert seen == "OK build\nDownloading 100%\nplain\nbad \ufffd\ufffd bytes"
    raw = run.of(CommandFinished)[0].output
    assert "\x1b[1;32m" in raw  # the transcript keeps the raw output


async def test_pager_commands_do_not_block(llm: ScriptedLLM, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@e"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "first commit"], check=True)
    llm.script(f"[CMD] git -C {repo} log", "[DONE] ok")
    run = await run_session(llm.base_url, options=SessionOptions(command_timeout=20))
    finished = run.of(CommandFinished)[0]
    assert not finished.timed_out and finished.exit_code == 0
    assert "first commit" in output_part(llm.requests[1].last_user_text)


async def test_command_reading_stdin_ends_and_reports(llm: ScriptedLLM) -> None:
    llm.script("[CMD] read -r answer && echo got=$answer || echo no-input", "[DONE] ok")
    run = await run_session(llm.base_url, options=SessionOptions(command_timeout=20))
    assert not run.of(CommandFinished)[0].timed_out
    assert output_part(llm.requests[1].last_user_text) == "no-input"


async def test_hanging_command_times_out_and_leaves_nothing(llm: ScriptedLLM) -> None:
    marker = f"sleep 31{uuid.uuid4().int % 1000:03d}"
    llm.script(f"[CMD] echo begun; {marker} & {marker}", "[DONE] ok")
    run = await run_session(llm.base_url, options=SessionOptions(command_timeout=0.5))
    finished = run.of(CommandFinished)[0]
    assert finished.timed_out
    assert llm.requests[1].last_user_text == (
        "Command output:\nbegun\n[timed out after 0.5 s; the command was stopped]\n\n[Step 2 of 100]"
    )
    need("ps", "procps")
    ps = subprocess.run(["ps", "-eo", "args="], capture_output=True, text=True).stdout
    assert marker not in ps


async def test_fifty_megabytes_stay_bounded_and_within_the_cap(llm: ScriptedLLM) -> None:
    command = (
        "i=0; while [ $i -lt 3 ]; do echo head-$i; i=$((i+1)); done; seq 1 6000000; echo the-end"
    )
    llm.script(f"[CMD] {command}", "[DONE] ok")
    tracemalloc.start()
    try:
        run = await run_session(
            llm.base_url, options=SessionOptions(command_timeout=120), keep_output=False
        )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    finished = run.of(CommandFinished)[0]
    assert finished.bytes > 45_000_000
    assert peak < 24 * 1024 * 1024, f"peak Python memory {peak / 1e6:.1f} MB"
    seen = output_part(llm.requests[1].last_user_text)
    assert len(seen.encode()) <= LLM_MAX_BYTES
    assert len(seen.splitlines()) <= LLM_MAX_LINES
    lines = seen.splitlines()
    assert lines[0] == "head-0" and lines[-1] == "the-end"
    assert any("omitted" in line for line in lines)
    assert len(finished.output.encode()) <= 1024 * 1024 + 100
    assert finished.output_truncated
