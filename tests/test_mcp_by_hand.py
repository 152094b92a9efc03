"""`kosmos mcp` started by a person rather than a client: it says what it is, Ctrl-C ends it,
and a missing token is refused before the SDK is loaded."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from tests.conftest import pseudo_terminal, run_cli


def test_started_at_a_terminal_it_says_what_it_is_and_ctrl_c_ends_it(
    cli_env: dict, tmp_path: Path
) -> None:
    with (
        pseudo_terminal() as (_keyboard, tty),
        subprocess.Popen(
            [sys.executable, "-m", "kosmos", "mcp"],
            env=cli_env,
            cwd=tmp_path,
            stdin=tty,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        ) as proc,
    ):
        try:
            assert proc.stderr is not None
            line = proc.stderr.readline().decode()
            assert line.startswith("kosmos mcp: an MCP server on standard input and output")
            entry = json.loads(line[line.index("{") : line.rindex("}") + 1])
            # What a client is given runs this kosmos wherever the client's PATH leads.
            assert Path(entry["command"]).is_absolute() and entry["args"][-1] == "mcp"
            proc.send_signal(signal.SIGINT)
            assert proc.wait(timeout=15) == 130
        finally:
            if proc.poll() is None:
                proc.kill()


def test_from_a_client_it_says_nothing_on_stderr(cli_env: dict, tmp_path: Path) -> None:
    # A client's stdin is a pipe: the server answers, and the notice is not printed.
    proc = subprocess.run(
        [sys.executable, "-m", "kosmos", "mcp"],
        env=cli_env,
        cwd=tmp_path,
        input="",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "waiting for a client" not in proc.stderr


def test_http_without_a_token_is_refused_before_the_sdk_loads(
    cli_env: dict, tmp_path: Path
) -> None:
    env = {k: v for k, v in cli_env.items() if k != "KOSMOS_MCP_TOKEN"}
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "kosmos", "mcp", "--http", "127.0.0.1:0"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    loaded = {line.split("|")[-1].strip() for line in proc.stderr.splitlines() if "|" in line}
    assert "kosmos.mcp.address" in loaded and "mcp" not in loaded
    [refusal] = [line for line in proc.stderr.splitlines() if line.startswith("kosmos:")]
    assert "needs a bearer token: set KOSMOS_MCP_TOKEN" in refusal
    # The same check, as a person sees it.
    assert run_cli(["mcp", "--http", "127.0.0.1:0"], env=env, cwd=tmp_path).returncode == 2
