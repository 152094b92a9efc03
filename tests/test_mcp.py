"""`kosmos mcp` on stdio, driven by the MCP SDK's own client against the loopback sshd.

One server (policy read-only, so a write is asked for) and one client serve the whole module;
the client's person answers elicitations from a script. A second server's client offers no
elicitation, as a client that cannot ask anyone.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from mcp import Client

from kosmos.transcript import read_transcript
from tests.llmserver import Recorded, ScriptedLLM
from tests.mcpkit import (
    McpSession,
    Person,
    fleet_home,
    gone_within,
    local_processes,
    running,
    server_env,
    skills_dir,
    stdio_client,
)
from tests.sshd import Sshd

pytestmark = pytest.mark.asyncio(loop_scope="module")


class Served:
    def __init__(self, client: Client, person: Person, llm: ScriptedLLM, root: Path) -> None:
        self.client = client
        self.person = person
        self.llm = llm
        self.root = root


@pytest.fixture(scope="module")
def module_llm() -> Any:
    server = ScriptedLLM().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory, sshd: Sshd) -> Path:
    root = tmp_path_factory.mktemp("mcp")
    (root / "home").mkdir()
    fleet_home(root / "home", sshd)
    skills_dir(root)
    return root


def _args(root: Path, *extra: str) -> list[str]:
    return ["--skills-dir", str(root / "skills"), "--transcript-dir", str(root / "runs"), *extra]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def served(root: Path, module_llm: ScriptedLLM) -> AsyncIterator[Served]:
    person = Person()
    env = server_env(root / "home", module_llm)
    session = McpSession(
        lambda: stdio_client(_args(root, "--policy", "read-only"), env, root, person)
    )
    client = await session.start()
    try:
        yield Served(client, person, module_llm, root)
    finally:
        await session.close()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def unasking(root: Path, module_llm: ScriptedLLM) -> AsyncIterator[Client]:
    """A client that offers no elicitation: nobody can be asked."""
    env = server_env(root / "home", module_llm)
    session = McpSession(
        lambda: stdio_client(_args(root, "--policy", "read-only"), env, root, None)
    )
    client = await session.start()
    try:
        yield client
    finally:
        await session.close()


@pytest.fixture(autouse=True)
def clean(sshd: Sshd, module_llm: ScriptedLLM) -> Any:
    yield
    sshd.clean_remote()
    module_llm.default = None


def _text(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


async def test_the_tools_are_listed_with_their_schemas(served: Served) -> None:
    tools = {tool.name: tool for tool in (await served.client.list_tools()).tools}
    assert set(tools) == {"hosts", "skills", "run_command", "read_file", "run_skill"}
    assert set(tools["run_command"].input_schema["required"]) == {"host", "command"}
    assert set(tools["read_file"].input_schema["required"]) == {"host", "path"}
    assert "canary" in tools["run_skill"].input_schema["properties"]
    for tool in tools.values():
        assert tool.output_schema is not None and tool.output_schema["type"] == "object"
        assert tool.description and "\n" not in tool.description
    assert tools["read_file"].annotations.read_only_hint is True
    assert "decided_by" in tools["run_command"].output_schema["properties"]


async def test_hosts_lists_local_and_the_aliases_and_checks_them(served: Served) -> None:
    result = await served.client.call_tool("hosts", {"check": True})
    hosts = {h["name"]: h for h in result.structured_content["hosts"]}
    assert list(hosts)[:4] == ["local", "box", "box2", "box3"]
    assert hosts["box"]["sources"] == ["ssh_config"] and hosts["box"]["policy"] == "read-only"
    check = hosts["box"]["check"]
    assert check["reachable"] == "yes" and check["trust"] == "ok"
    assert check["os"].startswith("Linux") and check["lock"].startswith("held")


async def test_skills_lists_the_skills_dir_and_the_bundled_ones(served: Served) -> None:
    result = await served.client.call_tool("skills", {})
    skills = {s["name"]: s for s in result.structured_content["skills"]}
    assert skills["probe"]["params"][0]["name"] == "what"
    assert skills["probe"]["params"][0]["default"] == "kernel"
    assert "system-overview" in skills


async def test_a_read_only_command_runs_unasked_inside_the_lock(served: Served) -> None:
    result = await served.client.call_tool("run_command", {"host": "box", "command": "uname -s"})
    assert not result.is_error, _text(result)
    out = result.structured_content
    assert out["exit_code"] == 0 and "Linux" in out["output"]
    assert out["verdict"] == "read_only" and out["decided_by"] == "policy"
    assert out["locked"] is True and out["asked"] is False
    assert served.person.asked == []
    events = read_transcript(Path(out["transcript"]))
    decision = next(e for e in events if e.type == "command_decision")
    assert decision.by == "policy" and decision.command == "uname -s"


async def test_a_write_is_asked_and_runs_when_the_person_accepts(
    served: Served, sshd: Sshd
) -> None:
    served.person.will("accept", {"run": True})
    result = await served.client.call_tool(
        "run_command", {"host": "box", "command": "touch ~/made-by-mcp"}
    )
    assert not result.is_error, _text(result)
    asked = served.person.asked[-1]
    assert "touch ~/made-by-mcp" in asked.message and "box" in asked.message
    assert "write" in asked.message and "not on the read-only list: touch" in asked.message
    out = result.structured_content
    assert out["decided_by"] == "operator" and out["asked"] is True and out["locked"] is False
    assert (sshd.remote_home / "made-by-mcp").exists()
    events = read_transcript(Path(out["transcript"]))
    assert any("asked through MCP elicitation" in getattr(e, "message", "") for e in events)
    assert next(e for e in events if e.type == "command_decision").by == "operator"


async def test_a_write_the_person_declines_does_not_run(served: Served, sshd: Sshd) -> None:
    served.person.will("decline")
    result = await served.client.call_tool(
        "run_command", {"host": "box", "command": "touch ~/declined"}
    )
    assert result.is_error and "declined" in _text(result)
    assert not (sshd.remote_home / "declined").exists()


async def test_the_person_sees_a_commands_control_characters(served: Served, sshd: Sshd) -> None:
    # An erase-line sequence that, drawn raw, would hide `rm -f ~/keep` behind what follows.
    command = "rm -f ~/keep \x1b[2K\rtouch ~/harmless"
    sshd.write_remote("keep", "kept\n")
    served.person.will("decline")
    result = await served.client.call_tool("run_command", {"host": "box", "command": command})
    assert result.is_error and "declined" in _text(result)
    asked = served.person.asked[-1].message
    assert "rm -f ~/keep ␛[2K␍touch ~/harmless" in asked and "\x1b" not in asked
    assert "␛[2K␍" in _text(result) and "\x1b" not in _text(result)
    assert (sshd.remote_home / "keep").exists()


async def test_a_dangerous_command_runs_only_with_the_host_name_typed(served: Served) -> None:
    # Signals init: dangerous, and harmless for the test user, whom the kernel refuses.
    command = "kill -9 1"
    served.person.will("accept", {"host": "web1"})
    wrong = await served.client.call_tool("run_command", {"host": "box", "command": command})
    assert wrong.is_error and "'web1' was typed" in _text(wrong)
    asked = served.person.asked[-1]
    assert asked.requested_schema["required"] == ["host"] and "dangerous" in asked.message
    served.person.will("accept", {"host": "box"})
    right = await served.client.call_tool("run_command", {"host": "box", "command": command})
    assert not right.is_error, _text(right)
    out = right.structured_content
    assert out["verdict"] == "dangerous" and out["decided_by"] == "operator"
    assert out["exit_code"] != 0 and "not permitted" in out["output"]


async def test_read_file_masks_secrets(served: Served, sshd: Sshd) -> None:
    sshd.write_remote("app.conf", "port = 8080\ndb_password = hunter2-very-secret\n")
    result = await served.client.call_tool("read_file", {"host": "box", "path": "app.conf"})
    assert not result.is_error, _text(result)
    out = result.structured_content
    assert "port = 8080" in out["content"] and "hunter2" not in out["content"]
    assert "db_password = [REDACTED]" in out["content"]
    assert "hunter2" not in Path(out["transcript"]).read_text()


async def test_bad_arguments_get_an_error_naming_the_parameter(served: Served) -> None:
    missing = await served.client.call_tool("run_command", {"host": "box"})
    assert missing.is_error and "command" in _text(missing)
    both = await served.client.call_tool(
        "run_skill", {"skill": "probe", "host": "box", "hosts": ["box2"]}
    )
    assert both.is_error and "host, hosts: give one of them" in _text(both)
    unknown = await served.client.call_tool(
        "run_skill", {"skill": "probe", "host": "box", "params": {"colour": "red"}}
    )
    assert unknown.is_error and "'colour'" in _text(unknown)
    nohost = await served.client.call_tool("run_command", {"host": "nosuch", "command": "true"})
    assert nohost.is_error and "nosuch" in _text(nohost)


def _step(request: Recorded) -> str:
    """The scripted LLM for every host: a command first, then done."""
    said = [m for m in request.messages if m.get("role") == "assistant"]
    return "[CMD] uname -s" if not said else "[DONE] the kernel is Linux"


async def test_run_skill_on_one_host_reports_each_step(served: Served) -> None:
    served.llm.default = _step
    seen: list[str] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        seen.append(message or "")

    result = await served.client.call_tool(
        "run_skill", {"skill": "probe", "host": "box"}, progress_callback=progress
    )
    assert not result.is_error, _text(result)
    out = result.structured_content
    assert out["status"] == "done" and out["message"] == "the kernel is Linux"
    assert out["hosts"][0]["host"] == "box" and out["hosts"][0]["commands_run"] == 1
    assert any("box: step 1: cmd uname -s" in m for m in seen), seen
    assert any(m.startswith("box: done") for m in seen), seen
    events = read_transcript(Path(out["transcripts"]))
    assert events[0].type == "run_started" and events[0].policy == "read-only"


async def test_run_skill_on_a_fleet_of_three_asks_once(served: Served, sshd: Sshd) -> None:
    def step(request: Recorded) -> str:
        said = [m for m in request.messages if m.get("role") == "assistant"]
        return "[CMD] echo ran >> ~/fleet.log" if not said else "[DONE] logged"

    served.llm.default = step
    served.person.asked.clear()
    served.person.will("accept", {"run": True, "all_hosts": True})
    seen: list[str] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        seen.append(message or "")

    result = await served.client.call_tool(
        "run_skill",
        {"skill": "probe", "hosts": ["box", "box2", "box3"], "canary": "box"},
        progress_callback=progress,
    )
    assert not result.is_error, _text(result)
    out = result.structured_content
    assert out["exit_code"] == 0, out
    assert [h["status"] for h in out["hosts"]] == ["done", "done", "done"]
    # One question, on the canary, offering the fleet: its yes for all stands for the others.
    assert len(served.person.asked) == 1
    assert "all_hosts" in served.person.asked[0].requested_schema["properties"]
    assert "2 other host(s)" in served.person.asked[0].message
    assert (sshd.remote_home / "fleet.log").read_text() == "ran\n" * 3
    for host in ("box", "box2", "box3"):
        assert any(m.startswith(f"{host}: step 1") for m in seen), (host, seen)
    assert (Path(out["transcripts"]) / "fleet.json").exists()


async def test_run_skill_on_a_canary_fleet_gives_each_host_its_own_report(
    served: Served, sshd: Sshd
) -> None:
    def step(request: Recorded) -> str:
        if not [m for m in request.messages if m.get("role") == "assistant"]:
            return "[CMD] id -un"
        output = request.messages[-1]["content"].split("\n")[1]
        return f"[DONE] runs as {output}"

    served.llm.default = step
    before = len(served.llm.requests)
    result = await served.client.call_tool(
        "run_skill", {"skill": "probe", "hosts": ["box", "local", "box2"], "canary": "box"}
    )
    assert not result.is_error, _text(result)
    out = result.structured_content
    assert out["exit_code"] == 0, out
    hosts = {h["host"]: (h["message"], h["report_from"]) for h in out["hosts"]}
    # local runs as root: its report is its own; box2's outputs were the canary's, word for word.
    assert hosts == {
        "box": (f"runs as {sshd.user}", "own"),
        "local": ("runs as root", "own"),
        "box2": (f"runs as {sshd.user}", "box"),
    }
    assert len(served.llm.requests) - before == 3  # the canary's two, local's report
    assert out["fleet_report"].splitlines() == [
        f"2 hosts (box, box2): done: runs as {sshd.user}",
        "1 host (local): done: runs as root",
    ]


async def test_a_yes_on_the_canary_for_this_host_only_leaves_the_others_asked(
    served: Served, sshd: Sshd
) -> None:
    def step(request: Recorded) -> str:
        said = [m for m in request.messages if m.get("role") == "assistant"]
        return "[CMD] echo once >> ~/canary-only.log" if not said else "[DONE] logged"

    served.llm.default = step
    served.person.asked.clear()
    # Yes on the canary, for it only; whatever the others ask next is declined.
    served.person.will("accept", {"run": True, "all_hosts": False})
    result = await served.client.call_tool(
        "run_skill", {"skill": "probe", "hosts": ["box", "box2", "box3"], "canary": "box"}
    )
    assert not result.is_error, _text(result)
    assert (sshd.remote_home / "canary-only.log").read_text() == "once\n"
    first, *others = served.person.asked
    assert "on box?" in first.message
    # The others were asked here, each question saying the canary's yes covered the canary.
    assert others and all("ran it on box only" in a.message for a in others)


async def test_cancelling_a_call_ends_the_command_on_the_host(served: Served, sshd: Sshd) -> None:
    marker = "sleep 1777"
    call = asyncio.ensure_future(
        served.client.call_tool("run_command", {"host": "box", "command": f"{marker} & {marker}"})
    )
    for _ in range(200):
        if len(running(sshd, marker)) >= 2:
            break
        await asyncio.sleep(0.05)
    assert len(running(sshd, marker)) >= 2, "the command never started"
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert await asyncio.to_thread(gone_within, lambda: running(sshd, marker), 10) == []
    # The server goes on serving.
    again = await served.client.call_tool("run_command", {"host": "box", "command": "true"})
    assert not again.is_error


async def test_without_elicitation_a_write_is_refused_with_the_reason(
    unasking: Client, sshd: Sshd
) -> None:
    result = await unasking.call_tool("run_command", {"host": "box", "command": "touch ~/nope"})
    assert result.is_error
    assert "refused" in _text(result) and "read-only" in _text(result)
    assert not (sshd.remote_home / "nope").exists()
    read = await unasking.call_tool("run_command", {"host": "box", "command": "uname -s"})
    assert not read.is_error and read.structured_content["decided_by"] == "policy"


async def test_run_skill_whose_write_was_refused_does_not_end_done(
    unasking: Client, sshd: Sshd, module_llm: ScriptedLLM
) -> None:
    def step(request: Recorded) -> str:
        said = [m for m in request.messages if m.get("role") == "assistant"]
        return "[CMD] touch ~/nope" if not said else "[DONE] could not write it"

    module_llm.default = step
    result = await unasking.call_tool("run_skill", {"skill": "probe", "host": "box"})
    out = result.structured_content
    assert (out["status"], out["exit_code"]) == ("needs_input", 4), _text(result)
    assert out["message"].startswith(
        "1 command the skill needed was refused and nothing ran in its place: touch ~/nope"
    )
    [host] = out["hosts"]
    assert (host["status"], host["exit_code"], host["message"]) == (
        "needs_input",
        4,
        out["message"],
    )
    assert not (sshd.remote_home / "nope").exists()
    assert read_transcript(Path(out["transcripts"]))[-1].status == "needs_input"


CLIENT = """
import os, sys, anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

async def main() -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "kosmos", "mcp", *sys.argv[2:]], env=dict(os.environ)
    )
    async with Client(params) as client:
        await client.call_tool("run_command", {"host": "box", "command": sys.argv[1]})

anyio.run(main)
"""


async def test_a_killed_client_leaves_nothing_running(
    root: Path, module_llm: ScriptedLLM, sshd: Sshd
) -> None:
    marker = "sleep 1888"
    runs = root / "killed-client-runs"
    env = server_env(root / "home", module_llm)
    client = subprocess.Popen(
        [sys.executable, "-c", CLIENT, f"{marker} & {marker}", "--transcript-dir", str(runs)],
        env=env,
        cwd=root,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        for _ in range(400):
            if len(running(sshd, marker)) >= 2:
                break
            await asyncio.sleep(0.05)
        assert len(running(sshd, marker)) >= 2, "the command never started"
        assert local_processes(str(runs)), "kosmos mcp is not running"
    finally:
        client.kill()
        client.communicate(timeout=10)
    # The server reads the end of its input, ends the call and the command, and exits.
    assert await asyncio.to_thread(gone_within, lambda: running(sshd, marker), 10) == []
    assert await asyncio.to_thread(gone_within, lambda: local_processes(str(runs)), 10) == []
