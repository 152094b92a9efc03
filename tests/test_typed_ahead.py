"""Keys typed at the terminal before a prompt is shown do not answer it: a `y` and Enter typed
while the LLM was thinking are discarded, as sudo and ssh discard them."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

from tests.conftest import pseudo_terminal
from tests.helpers import read_until, wait_until
from tests.llmserver import Recorded, ScriptedLLM


def test_keys_typed_before_the_approval_prompt_do_not_answer_it(
    llm: ScriptedLLM, cli_env: dict, tmp_path: Path
) -> None:
    typed = threading.Event()

    def thinking(_: Recorded) -> str:
        # The LLM answers only once the operator's early keys are in the terminal's queue.
        typed.wait(timeout=20)
        return "[CMD] touch early.txt"

    llm.script(thinking, "[CMD] touch late.txt", "[DONE] one file")
    with pseudo_terminal() as (keyboard, tty):
        proc = subprocess.Popen(
            [sys.executable, "-m", "kosmos", "run", "system-overview"],
            env=cli_env,
            cwd=tmp_path,
            stdin=tty,
            stdout=tty,
            stderr=tty,
        )
        try:
            wait_until(lambda: llm.requests, what="the first question to the LLM")
            os.write(keyboard, b"y\n")  # typed ahead, before anything was proposed
            typed.set()
            shown = read_until(keyboard, b"Run? [y/N/e/a] ")
            # The early `y` was thrown away: the prompt is still open and nothing ran.
            assert b"touch early.txt" in shown
            assert not (tmp_path / "early.txt").exists()
            os.write(keyboard, b"n\n")
            shown += read_until(keyboard, b"Run? [y/N/e/a] ")
            assert b"touch late.txt" in shown
            os.write(keyboard, b"y\n")  # an answer typed at the prompt is taken
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 0
    assert (tmp_path / "late.txt").exists()
    assert not (tmp_path / "early.txt").exists()
