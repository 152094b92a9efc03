"""The SSH runner against an in-process asyncssh server that runs real shell commands."""

from __future__ import annotations

import asyncio
import gc
import os
from collections.abc import AsyncIterator
from pathlib import Path

import asyncssh
import pytest

from kosmos.engine.operator import Approval, CommandProposal
from kosmos.errors import HostError, KosmosError
from kosmos.events import CommandFinished, Notice
from kosmos.hosts.knowledge import KNOWLEDGE_PATHS, KnowledgeTimeout, load_knowledge
from kosmos.hosts.runner import READ_FILE_LIMIT, FileUnreadable
from kosmos.hosts.ssh import SSHRunner
from kosmos.hosts.target import parse_target
from tests.helpers import ScriptOperator, make_skill, run_session
from tests.llmserver import ScriptedLLM
from tests.sshserver import FreezableProxy, InProcessSSHServer, write_client_home

Keys = tuple[asyncssh.SSHKey, asyncssh.SSHKey]


def runner_for(target: str = "inproc", **kw: object) -> SSHRunner:
    kw.setdefault("connect_timeout", 5)
    return SSHRunner(parse_target(target), **kw)  # type: ignore[arg-type]


@pytest.fixture
async def runner(
    ssh_home: Path, ssh_server: InProcessSSHServer, ssh_keys: Keys
) -> AsyncIterator[SSHRunner]:
    write_client_home(ssh_home, ssh_server, ssh_keys[1])
    r = runner_for()
    await r.connect()
    try:
        yield r
    finally:
        await r.close()


@pytest.fixture
async def loop_errors() -> AsyncIterator[list[dict]]:
    """What reaches the event loop's exception handler, such as a task exception never retrieved."""
    loop = asyncio.get_running_loop()
    seen: list[dict] = []
    loop.set_exception_handler(lambda _loop, context: seen.append(context))
    try:
        yield seen
    finally:
        loop.set_exception_handler(None)


def _pumps_left() -> list[str]:
    """The runner's output pumps that are still reading."""
    names = [t.get_coro().__qualname__ for t in asyncio.all_tasks() if not t.done()]
    return [n for n in names if ".pump_" in n]


async def test_runs_a_command_and_reports_its_exit_status(runner: SSHRunner) -> None:
    chunks: list[str] = []
    result = await runner.run(
        "echo hello; echo oops >&2; exit 3", timeout=10, on_output=chunks.append
    )
    assert result.exit_code == 3
    assert result.output.text() == "hello\noops\n"
    assert "".join(chunks) == "hello\noops\n"
    assert result.bytes == len("hello\noops\n")
    assert result.duration_s > 0


async def test_reuses_one_connection_for_every_command(
    runner: SSHRunner, ssh_server: InProcessSSHServer
) -> None:
    for i in range(3):
        assert (await runner.run(f"echo {i}", timeout=10)).output.text() == f"{i}\n"
    assert len(ssh_server.state.connections) == 1


async def test_pager_variables_are_set_inside_the_command(runner: SSHRunner) -> None:
    result = await runner.run('echo "$PAGER/$GIT_PAGER/$MANPAGER/[$SYSTEMD_PAGER]"', timeout=10)
    assert result.output.text() == "cat/cat/cat/[]\n"


async def test_stdin_is_closed_so_reading_commands_end(runner: SSHRunner) -> None:
    result = await runner.run('cat; read x; echo "read=$?"', timeout=10)
    assert result.output.text() == "read=1\n"
    assert not result.timed_out


async def test_stdin_bytes_are_fed_then_closed(runner: SSHRunner) -> None:
    result = await runner.run("cat; echo end", timeout=10, stdin=b"s3cret\n")
    assert result.output.text() == "s3cret\nend\n"


async def test_ansi_and_invalid_utf8_arrive_as_bytes(runner: SSHRunner) -> None:
    chunks: list[str] = []
    result = await runner.run(
        r"printf '\033[31mred\033[0m \377\n'", timeout=10, on_output=chunks.append
    )
    assert result.output.data() == b"\x1b[31mred\x1b[0m \xff\n"
    assert "".join(chunks) == "\x1b[31mred\x1b[0m \ufffd\n"


def _server_pids(marker: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                args = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if marker in args and state != "Z":
                pids.append(int(entry.name))
    return pids


async def _gone(marker: str) -> list[int]:
    for _ in range(100):
        pids = _server_pids(marker)
        if not pids:
            return []
        await asyncio.sleep(0.05)
    return _server_pids(marker)


async def test_timeout_ends_the_whole_remote_tree_and_keeps_output(runner: SSHRunner) -> None:
    # Markers of this test's own: another test of this module may run beside it (xdist).
    result = await runner.run("echo before; sleep 47011 & sleep 47012", timeout=0.5)
    assert result.timed_out and not result.cancelled
    assert result.output.text() == "before\n"
    assert result.exit_code is not None and result.exit_code > 128
    assert await _gone("sleep 4701") == []


async def test_stop_ends_the_tree_as_a_cancel(runner: SSHRunner) -> None:
    stop = asyncio.Event()

    def seen(text: str) -> None:
        if "started" in text:
            stop.set()

    result = await runner.run(
        "echo started; sleep 47031 & sleep 47032", timeout=30, on_output=seen, stop=stop
    )
    assert result.cancelled and not result.timed_out
    assert await _gone("sleep 4703") == []


async def test_cancelling_the_task_ends_the_tree(runner: SSHRunner) -> None:
    started = asyncio.Event()
    task = asyncio.ensure_future(
        runner.run("echo go; sleep 4705", timeout=30, on_output=lambda t: started.set())
    )
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await _gone("sleep 4705") == []


async def test_a_failing_output_pump_ends_the_other_the_command_and_the_channel(
    runner: SSHRunner, loop_errors: list[dict]
) -> None:
    def broken(text: str) -> None:
        if "started" in text:
            raise RuntimeError("the screen went away")

    with pytest.raises(RuntimeError, match="the screen went away"):
        await runner.run("echo started; sleep 4708", timeout=30, on_output=broken)
    assert _pumps_left() == []
    assert await _gone("sleep 4708") == []
    assert (await runner.run("echo still usable", timeout=5)).output.text() == "still usable\n"
    gc.collect()
    assert loop_errors == []


async def test_read_file_finds_home_and_relative_paths(
    runner: SSHRunner, ssh_server: InProcessSSHServer
) -> None:
    home = ssh_server.state.home
    (home / ".kosmos-panel").mkdir()
    (home / ".kosmos-panel" / "ai_system_promt.md").write_text("This host runs nginx.\n")
    assert await runner.read_file("./.kosmos-panel/ai_system_promt.md", timeout=5) == (
        "This host runs nginx.\n"
    )
    assert await runner.read_file("~/.kosmos-panel/ai_system_promt.md", timeout=5) == (
        "This host runs nginx.\n"
    )
    assert await runner.read_file("~/missing file.md", timeout=5) is None
    assert await runner.read_file("~/.kosmos-panel", timeout=5) is None
    knowledge = await load_knowledge(runner, timeout=5)
    assert knowledge is not None and knowledge.path == "./.kosmos-panel/ai_system_promt.md"


async def test_a_file_over_the_read_limit_is_refused_and_its_read_stopped(
    runner: SSHRunner, ssh_server: InProcessSSHServer, loop_errors: list[dict]
) -> None:
    home = ssh_server.state.home
    (home / "at-limit.md").write_bytes(b"a" * READ_FILE_LIMIT)
    (home / "over-limit.md").write_bytes(b"a\n" * (READ_FILE_LIMIT // 2 + 1))
    (home / "endless.md").symlink_to("/dev/zero")  # read to the end, this never ends
    assert len(await runner.read_file("at-limit.md", timeout=10) or "") == READ_FILE_LIMIT
    for name, why in (("over-limit.md", "larger than 4 MiB"), ("endless.md", "not a regular")):
        with pytest.raises(FileUnreadable, match=why) as caught:
            await runner.read_file(name, timeout=30)
        assert caught.value.path == name
    assert await _gone("endless.md") == []
    with pytest.raises(FileUnreadable) as caught:
        await runner.read_first(["missing.md", "over-limit.md", "at-limit.md"], timeout=30)
    assert caught.value.path == "over-limit.md"
    found = await runner.read_first(["missing.md", "at-limit.md"], timeout=10)
    assert found is not None and len(found[1]) == READ_FILE_LIMIT
    assert (await runner.run("echo still usable", timeout=5)).exit_code == 0
    gc.collect()
    assert loop_errors == []


async def test_knowledge_is_the_first_file_with_text_read_in_one_command(
    runner: SSHRunner, ssh_server: InProcessSSHServer
) -> None:
    home = ssh_server.state.home
    assert await load_knowledge(runner, timeout=5) is None
    (home / ".config" / "kosmos-panel").mkdir(parents=True)
    (home / ".config" / "kosmos-panel" / "ai_system_promt.md").write_text("home notes\n")
    (home / ".kosmos-panel").mkdir()
    (home / ".kosmos-panel" / "ai_system_promt.md").write_text(" \n\t\n")  # blank: passed over
    knowledge = await load_knowledge(runner, timeout=5)
    assert knowledge is not None
    assert (knowledge.path, knowledge.text) == (KNOWLEDGE_PATHS[2], "home notes\n")
    (home / ".kosmos-panel" / "ai_system_promt.md").write_text("project notes\n")
    found = await runner.read_first(KNOWLEDGE_PATHS, timeout=5)
    assert found == (KNOWLEDGE_PATHS[0], "project notes\n")


async def test_a_knowledge_file_that_cannot_be_read_is_passed_over_and_named(
    runner: SSHRunner, ssh_server: InProcessSSHServer
) -> None:
    home = ssh_server.state.home
    (home / ".config" / "kosmos-panel").mkdir(parents=True)
    (home / ".config" / "kosmos-panel" / "ai_system_promt.md").write_text("home notes\n")
    (home / ".kosmos-panel").mkdir()
    (home / ".kosmos-panel" / "ai_system_promt.md").symlink_to("ai_system_promt.md")
    with pytest.raises(FileUnreadable, match="symbolic link that leads nowhere") as caught:
        await runner.read_file(KNOWLEDGE_PATHS[0], timeout=5)
    assert caught.value.path == KNOWLEDGE_PATHS[0]
    skipped: list[FileUnreadable] = []
    knowledge = await load_knowledge(runner, timeout=5, on_skip=skipped.append)
    assert knowledge is not None
    assert (knowledge.path, knowledge.text) == (KNOWLEDGE_PATHS[2], "home notes\n")
    assert [e.path for e in skipped] == [KNOWLEDGE_PATHS[0]]


async def test_a_slow_knowledge_file_times_out(
    runner: SSHRunner, ssh_server: InProcessSSHServer
) -> None:
    folder = ssh_server.state.home / ".kosmos-panel"
    folder.mkdir()
    os.mkfifo(folder / "ai_system_promt.md")  # nobody writes: reading it never ends
    with pytest.raises(KnowledgeTimeout) as caught:
        await load_knowledge(runner, timeout=0.5)
    assert caught.value.path == KNOWLEDGE_PATHS[0]
    assert (await runner.run("echo still usable", timeout=5)).exit_code == 0


async def test_a_server_that_never_starts_the_command_is_a_host_error(
    runner: SSHRunner, ssh_server: InProcessSSHServer, loop_errors: list[dict]
) -> None:
    """The server takes the session, then leaves the request to run the command unanswered."""
    notes: list[str] = []
    runner.notify = notes.append
    ssh_server.state.stall_exec = True
    async with asyncio.timeout(30):  # before the fix, the run waited for ever
        with pytest.raises(HostError, match="did not start the command within 0.5 s") as caught:
            await runner.run("echo never", timeout=0.5)
        assert caught.value.exit_code == 6
        with pytest.raises(KnowledgeTimeout):  # a read gives up the same way
            await load_knowledge(runner, timeout=0.5)
    assert ssh_server.state.stalled == 2
    stalled = list(ssh_server.state.connections)
    ssh_server.state.stall_exec = False
    assert (await runner.run("echo back", timeout=5)).output.text() == "back\n"
    assert "did not start a command within 0.5 s" in notes[-1] and "reconnected" in notes[-1]
    for conn in stalled:  # kosmos closed the connections that held the stalled channels
        await asyncio.wait_for(conn.wait_closed(), 5)
    assert "echo never" not in " ".join(ssh_server.state.commands)
    gc.collect()
    assert loop_errors == []


async def test_connection_lost_mid_command_is_reported_not_rerun(
    runner: SSHRunner, ssh_server: InProcessSSHServer
) -> None:
    def drop(text: str) -> None:
        if "started" in text:
            ssh_server.drop_all()

    result = await runner.run("echo started; sleep 4706", timeout=30, on_output=drop)
    assert result.connection_lost
    assert result.exit_code is None
    assert result.output.text() == "started\n"
    # Sent once, never again (the kill script names the group, not the command).
    assert len([c for c in ssh_server.state.commands if "sleep 4706" in c]) == 1


async def test_reconnects_once_between_commands_and_says_so(
    runner: SSHRunner, ssh_server: InProcessSSHServer
) -> None:
    notes: list[str] = []
    runner.notify = notes.append
    assert (await runner.run("echo one", timeout=5)).exit_code == 0
    ssh_server.drop_all()
    assert runner._link is not None
    await asyncio.wait_for(runner._link.client.closed.wait(), 5)
    result = await runner.run("echo two", timeout=5)
    assert result.output.text() == "two\n"
    assert len(notes) == 1 and "reconnected" in notes[0]


async def test_close_during_a_reconnect_leaves_no_connection_open(
    runner: SSHRunner, ssh_server: InProcessSSHServer, loop_errors: list[dict]
) -> None:
    assert (await runner.run("echo one", timeout=5)).exit_code == 0
    ssh_server.drop_all()
    assert runner._link is not None
    await asyncio.wait_for(runner._link.client.closed.wait(), 5)
    gate = asyncio.Event()
    ssh_server.state.login_gate = gate  # the server is slow to let the reconnect log in
    command = asyncio.ensure_future(runner.run("echo two", timeout=5))
    await asyncio.wait_for(ssh_server.state.login_waiting.wait(), 5)
    await runner.close()
    gate.set()  # were the reconnect still going, it could finish now
    with pytest.raises(HostError, match="nothing was run"):
        await command
    assert runner._link is None
    assert ssh_server.state.connections  # the reconnect's
    for conn in ssh_server.state.connections:
        await asyncio.wait_for(conn.wait_closed(), 5)
    assert "echo two" not in " ".join(ssh_server.state.commands)
    gc.collect()
    assert loop_errors == []


async def test_close_while_a_command_runs_does_not_wait_for_it(
    runner: SSHRunner, ssh_server: InProcessSSHServer
) -> None:
    started = asyncio.Event()
    command = asyncio.ensure_future(
        runner.run("echo started; sleep 4709", timeout=30, on_output=lambda t: started.set())
    )
    await started.wait()
    await runner.close()
    result = await command
    assert result.connection_lost and result.output.text() == "started\n"
    for conn in ssh_server.state.connections:
        await asyncio.wait_for(conn.wait_closed(), 5)
    assert (await runner.run("echo again", timeout=5)).output.text() == "again\n"


async def test_a_failed_reconnect_is_a_host_error(
    runner: SSHRunner, ssh_server: InProcessSSHServer
) -> None:
    await ssh_server.stop()
    assert runner._link is not None
    await asyncio.wait_for(runner._link.client.closed.wait(), 5)
    with pytest.raises(HostError, match="connection was lost .* reconnecting failed"):
        await runner.run("echo two", timeout=5)


async def test_operator_retry_after_a_failed_reconnect_runs_the_command_once(
    runner: SSHRunner, ssh_server: InProcessSSHServer, llm: ScriptedLLM
) -> None:
    """The host is down at step 2: the operator is asked, the server comes back, Retry runs it."""
    llm.script("[CMD] echo one", "[CMD] echo two", "[DONE] ok")
    port = ssh_server.port

    class Person(ScriptOperator):
        async def approve(self, proposal: CommandProposal) -> Approval:
            if proposal.command == "echo two":
                await ssh_server.stop()
                assert runner._link is not None
                await asyncio.wait_for(runner._link.client.closed.wait(), 5)
            return await super().approve(proposal)

        async def retry(self, error: KosmosError) -> bool:
            self.errors.append(error)
            await ssh_server.start(port)  # the host is back
            return True

    person = Person()
    run = await run_session(llm.base_url, make_skill(), operator=person, runner=runner)
    assert run.result.status == "done", run.result.message
    assert len(person.errors) == 1 and isinstance(person.errors[0], HostError)
    assert "reconnecting failed" in str(person.errors[0])
    finished = [e for e in run.events if isinstance(e, CommandFinished)]
    assert [(e.command, e.exit_code) for e in finished] == [("echo one", 0), ("echo two", 0)]
    assert any("retrying the command" in e.message for e in run.events if isinstance(e, Notice))
    assert llm.requests[2].last_user_text.startswith("Command output:\ntwo")


async def test_keepalive_gives_up_on_a_server_gone_silent(
    ssh_home: Path, ssh_server: InProcessSSHServer, ssh_keys: Keys
) -> None:
    proxy = await FreezableProxy(ssh_server.port).start()
    try:
        ssh_dir = write_client_home(
            ssh_home,
            ssh_server,
            ssh_keys[1],
            extra_config=f"Host relay\n  HostName 127.0.0.1\n  Port {proxy.port}\n  User tester\n",
        )
        algorithm, data = ssh_server.host_key.export_public_key().decode().split()[:2]
        with (ssh_dir / "known_hosts").open("a") as f:
            f.write(f"[127.0.0.1]:{proxy.port} {algorithm} {data}\n")
        runner = runner_for("relay", keepalive_interval=0.2, keepalive_count_max=2)
        try:

            def go_silent(text: str) -> None:
                if "started" in text:
                    proxy.freeze()

            result = await runner.run("echo started; sleep 4707", timeout=30, on_output=go_silent)
        finally:
            await runner.close()
        assert result.connection_lost and not result.timed_out
        assert result.output.text() == "started\n"
    finally:
        await proxy.stop()


async def test_a_timeout_the_host_never_confirms_drops_the_connection(
    ssh_home: Path, ssh_server: InProcessSSHServer, ssh_keys: Keys
) -> None:
    """The link stalls under a command: past its timeout neither the end of the command nor
    the kill gets through. The connection is dropped, so the next command reconnects at once
    instead of waiting out its own timeout behind the dead one."""
    proxy = await FreezableProxy(ssh_server.port).start()
    try:
        ssh_dir = write_client_home(
            ssh_home,
            ssh_server,
            ssh_keys[1],
            extra_config=f"Host relay\n  HostName 127.0.0.1\n  Port {proxy.port}\n  User tester\n",
        )
        algorithm, data = ssh_server.host_key.export_public_key().decode().split()[:2]
        with (ssh_dir / "known_hosts").open("a") as f:
            f.write(f"[127.0.0.1]:{proxy.port} {algorithm} {data}\n")
        notices: list[str] = []
        runner = runner_for("relay")
        runner.notify = notices.append
        try:

            def stall(text: str) -> None:
                if "started" in text:
                    proxy.freeze()

            first = await runner.run("echo started; sleep 4710", timeout=1, on_output=stall)
            assert first.timed_out
            proxy.thaw()  # the path works again for a new connection
            second = await runner.run("echo two", timeout=30)
        finally:
            await runner.close()
        assert second.exit_code == 0 and second.output.text() == "two\n"
        assert notices == [
            "relay: the connection was lost (the host did not answer while a command was "
            "ended); reconnected"
        ]
    finally:
        await proxy.stop()
