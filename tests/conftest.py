"""Shared fixtures: a scripted LLM server on loopback, a clean HOME, a way to run the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.llmserver import ScriptedLLM

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    server = ScriptedLLM().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def cli_env(home: Path, llm: ScriptedLLM) -> dict[str, str]:
    """An environment for the CLI: its own HOME, the scripted LLM, no keys or configs of ours."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("KOSMOS_", "OPENAI_", "GEMINI_", "AI_", "XDG_"))
    }
    env.update(
        HOME=str(home),
        AI_KOSMOS_MODEL_BASE_URL=llm.base_url,
        PYTHONPATH=str(ROOT),
        PYTHONUNBUFFERED="1",
    )
    return env


def run_cli(
    args: list[str],
    *,
    env: dict[str, str],
    cwd: Path,
    stdin: str | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """Run `python -m kosmos ARGS` as a user would, and collect what it printed."""
    return subprocess.run(
        [sys.executable, "-m", "kosmos", *args],
        env=env,
        cwd=cwd,
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        timeout=timeout,
    )
