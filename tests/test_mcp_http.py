"""`kosmos mcp --http`: streamable HTTP behind a bearer token, driven by the SDK's own client.

One server (the default locked policy, on this machine's `local` host) serves the module.
"""

from __future__ import annotations

import gc
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
import pytest_asyncio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import run_cli
from tests.llmserver import ScriptedLLM
from tests.mcpkit import McpSession, Person, server_env

pytestmark = [
    pytest.mark.asyncio(loop_scope="module"),
    # The SDK's HTTP client leaves one keep-alive socket to the server for the garbage
    # collector when it closes; that is its own, not kosmos's.
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

TOKEN = "a-test-token-0123456789abcdef"


class HttpServer:
    def __init__(self, proc: subprocess.Popen[str], url: str, root: Path) -> None:
        self.proc = proc
        self.url = url
        self.root = root

    def client(self, token: str | None, person: Person | None = None) -> Client:
        headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
        http = httpx2.AsyncClient(headers=headers, timeout=30)
        return Client(
            streamable_http_client(self.url, http_client=http), elicitation_callback=person
        )


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    root = tmp_path_factory.mktemp("mcp-http")
    (root / "home").mkdir()
    llm = ScriptedLLM().start()
    env = {**server_env(root / "home", llm), "KOSMOS_MCP_TOKEN": TOKEN}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kosmos", "mcp", "--http", "127.0.0.1:0"]
        + ["--transcript-dir", str(root / "runs")],
        env=env,
        cwd=root,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert line.startswith("kosmos mcp: serving http://127.0.0.1:"), line
        yield HttpServer(proc, line.split("serving ", 1)[1].strip(), root)
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=20)
        llm.stop()
    # Nothing but protocol messages on stdout: over HTTP, nothing at all.
    assert out == "", out


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def person_client(served: HttpServer) -> AsyncIterator[tuple[Client, Person]]:
    person = Person()
    session = McpSession(lambda: served.client(TOKEN, person))
    client = await session.start()
    try:
        yield client, person
    finally:
        await session.close()
        gc.collect()  # while this module's filter holds: see pytestmark


def _text(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


async def test_a_missing_or_wrong_token_gets_401(served: HttpServer) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    async with httpx.AsyncClient(timeout=10) as http:
        missing = await http.post(served.url, json=body)
        wrong = await http.post(served.url, json=body, headers={"Authorization": "Bearer nope"})
    assert missing.status_code == 401 and "missing bearer token" in missing.text
    assert wrong.status_code == 401 and "wrong bearer token" in wrong.text
    assert missing.headers["www-authenticate"].startswith("Bearer")
    # The SDK's client does not get in either (it reports the 401 as an error response).
    with pytest.raises(Exception):  # noqa: B017
        async with served.client("wrong-token"):
            pass
    gc.collect()


async def test_with_the_token_a_read_runs_inside_the_lock(
    person_client: tuple[Client, Person],
) -> None:
    client, person = person_client
    assert client.protocol_version in ("2025-11-25", "2025-06-18")
    names = {t.name for t in (await client.list_tools()).tools}
    assert names == {"hosts", "skills", "run_command", "read_file", "run_skill"}
    result = await client.call_tool("run_command", {"host": "local", "command": "uname -s"})
    assert not result.is_error, _text(result)
    out = result.structured_content
    assert out["decided_by"] == "policy" and out["locked"] is True and "Linux" in out["output"]
    assert person.asked == []


async def test_the_locked_policy_lets_a_write_touch_nothing(
    person_client: tuple[Client, Person], served: HttpServer
) -> None:
    client, _ = person_client
    target = served.root / "written-through-mcp"
    result = await client.call_tool("run_command", {"host": "local", "command": f"touch {target}"})
    assert not result.is_error, _text(result)
    out = result.structured_content
    assert out["locked"] is True and out["asked"] is False and out["exit_code"] != 0
    assert not target.exists()


async def test_what_the_lock_cannot_hold_is_asked_over_http(
    person_client: tuple[Client, Person],
) -> None:
    client, person = person_client
    person.will("decline")
    result = await client.call_tool("run_command", {"host": "local", "command": "sudo -n true"})
    assert result.is_error and "declined" in _text(result)
    assert "sudo -n true" in person.asked[-1].message
    assert "policy: locked" in person.asked[-1].message


async def test_http_without_a_token_does_not_start(tmp_path: Path, cli_env: dict) -> None:
    for address in ("127.0.0.1:0", "0.0.0.0:0"):
        proc = run_cli(["mcp", "--http", address], env=cli_env, cwd=tmp_path, timeout=30)
        assert proc.returncode == 2, proc.stderr
        assert "KOSMOS_MCP_TOKEN" in proc.stderr and "--token-file" in proc.stderr
        assert proc.stdout == ""
    empty = tmp_path / "token"
    empty.write_text("\n")
    proc = run_cli(["mcp", "--http", "8765", "--token-file", str(empty)], env=cli_env, cwd=tmp_path)
    assert proc.returncode == 2 and "the file is empty" in proc.stderr
    bad = run_cli(["mcp", "--http", "127.0.0.1:http"], env=cli_env, cwd=tmp_path)
    assert bad.returncode == 2 and "ADDR:PORT" in bad.stderr
