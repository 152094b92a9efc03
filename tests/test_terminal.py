"""Line mode at a real terminal (a pty): what kosmos leaves behind when it is interrupted."""

from __future__ import annotations

import os
import pty
import signal
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from tests.helpers import read_until, wait_until
from tests.llmserver import ScriptedLLM


@pytest.mark.parametrize(
    ("script", "prompt"),
    [
        (["[CMD] echo one"], b"Run? [y/N/e/a]"),
        (["[CMD] rm -rf --no-preserve-root /"], b"Type the host name"),
    ],
)
def test_ctrl_c_at_a_prompt_gives_the_terminal_back_with_echo(
    llm: ScriptedLLM, cli_env: dict, tmp_path: Path, script: list[str], prompt: bytes
) -> None:
    llm.script(*script)
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "kosmos", "run", "system-overview"],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env={**cli_env, "TERM": "xterm"},
        cwd=tmp_path,
    )
    try:
        read_until(master, prompt)
        # readline turns echo off while it reads: the prompt alone is shown a moment before.
        wait_until(
            lambda: not termios.tcgetattr(slave)[3] & termios.ECHO,
            what="the prompt's read to turn the terminal's echo off",
        )
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 130
        assert termios.tcgetattr(slave)[3] & termios.ECHO, "the terminal was left without echo"
    finally:
        proc.kill()
        os.close(master)
        os.close(slave)
