"""Line mode at a real terminal (a pty): what kosmos leaves behind when it is interrupted."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from tests.llmserver import ScriptedLLM


def _read_until(fd: int, text: bytes, timeout: float = 20) -> bytes:
    seen = b""
    deadline = time.monotonic() + timeout
    while text not in seen:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"{text!r} never appeared; the terminal shows {seen!r}")
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            seen += os.read(fd, 4096)
    return seen


@pytest.mark.parametrize(
    ("script", "prompt"),
    [
        (["[CMD] echo one"], b"Run? [y/N/e/a]"),  # readline turns echo off while it reads
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
        _read_until(master, prompt)
        time.sleep(0.3)  # the prompt is written just before the read starts
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 130
        assert termios.tcgetattr(slave)[3] & termios.ECHO, "the terminal was left without echo"
    finally:
        proc.kill()
        os.close(master)
        os.close(slave)
