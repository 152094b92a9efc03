"""The local runner: process groups, closed stdin, pagers, timeouts, bounded memory."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import time
import uuid

import pytest

from kosmos.hosts.local import LocalRunner
from kosmos.hosts.runner import READ_FILE_LIMIT, FileUnreadable, OutputBuffer
from tests.helpers import need, running, until


def alive(marker: str) -> list[str]:
    """PIDs of processes whose command line holds `marker` (not counting this search)."""
    need("ps", "procps")
    out = subprocess.run(["ps", "-eo", "pid=,args="], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if marker in line and "ps -eo" not in line]


async def test_exit_code_and_merged_output() -> None:
    result = await LocalRunner().run("echo out; echo err >&2; exit 7", timeout=5)
    assert result.exit_code == 7
    assert result.output.text() == "out\nerr\n"
    assert result.bytes == 8
    assert result.duration_s < 5


async def test_timeout_ends_the_whole_process_group() -> None:
    marker = f"sleep 1000{uuid.uuid4().int % 1000}"
    started = time.monotonic()
    result = await LocalRunner().run(f"echo started; {marker} & {marker}; echo never", timeout=0.5)
    assert result.timed_out and not result.cancelled
    assert time.monotonic() - started < 4
    assert result.output.text() == "started\n"
    await until(lambda: alive(marker) == [], what=f"every {marker} to end", timeout=5)


async def test_stop_event_ends_the_command_and_keeps_partial_output() -> None:
    stop = asyncio.Event()
    seen: list[str] = []

    def on_output(text: str) -> None:
        seen.append(text)
        stop.set()

    result = await LocalRunner().run(
        "echo partial; sleep 30", timeout=60, on_output=on_output, stop=stop
    )
    assert result.cancelled and not result.timed_out
    assert result.output.text() == "partial\n"
    assert result.duration_s < 10


async def test_cancelling_the_task_kills_the_group() -> None:
    marker = f"sleep 2000{uuid.uuid4().int % 1000}"
    task = asyncio.ensure_future(LocalRunner().run(f"{marker} & {marker}", timeout=60))
    await until(lambda: len(running(marker)) == 2, what=f"both {marker} to run")
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    await until(lambda: alive(marker) == [], what=f"every {marker} to end", timeout=5)


async def test_stdin_is_closed_so_reading_commands_end() -> None:
    result = await LocalRunner().run("cat; read x; echo read-status=$?", timeout=5)
    assert result.exit_code == 0
    assert result.output.text() == "read-status=1\n"


async def test_given_stdin_is_fed_once_then_closed() -> None:
    # One line (a sudo password), then end of file: `cat` ends at once.
    result = await LocalRunner().run(
        "read line; echo got=$line; cat; echo end", timeout=5, stdin=b"s3cret\n"
    )
    assert result.exit_code == 0
    assert result.output.text() == "got=s3cret\nend\n"


async def test_pager_variables_are_set() -> None:
    result = await LocalRunner().run('echo "$PAGER|$GIT_PAGER|${SYSTEMD_PAGER-unset}"', timeout=5)
    assert result.output.text() == "cat|cat|\n"


async def test_signal_exit_is_reported_shell_style() -> None:
    result = await LocalRunner().run("kill -9 $$", timeout=5)
    assert result.exit_code == 137 and result.signal == 9


async def test_fifty_megabytes_keep_only_head_and_tail() -> None:
    chunks = 0

    def count(text: str) -> None:
        nonlocal chunks
        chunks += 1

    result = await LocalRunner().run(
        "yes abcdefghij | head -c 50000000", timeout=60, on_output=count
    )
    assert result.bytes == 50_000_000
    assert len(result.output.head) == 512 * 1024
    assert len(result.output.tail()) == 512 * 1024
    assert result.output.omitted == 50_000_000 - 1024 * 1024
    assert chunks > 10


def test_output_buffer_small_and_marker() -> None:
    buf = OutputBuffer(head=4, tail=4)
    for piece in (b"0123", b"4567", b"89ab", b"cdef"):
        buf.feed(piece)
    assert buf.total == 16
    assert buf.head == b"0123"
    assert buf.tail() == b"cdef"
    assert buf.omitted == 8
    assert buf.text(lambda n: f"<{n}>") == "0123\n<8>\ncdef"


def test_output_buffer_without_a_tail_keeps_the_head_and_counts_the_rest() -> None:
    buf = OutputBuffer(head=4, tail=0)
    for piece in (b"01", b"2345", b"6789"):
        buf.feed(piece)
    assert buf.total == 10
    assert buf.head == b"0123"
    assert buf.tail() == b""
    assert buf.omitted == 6
    assert buf.text(lambda n: f"<{n}>") == "0123\n<6>\n"


def test_output_buffer_invalid_utf8_is_replaced() -> None:
    buf = OutputBuffer()
    buf.feed(b"ok \xff\xfe bad")
    assert buf.text() == "ok \ufffd\ufffd bad"


async def test_read_file_relative_home_and_missing(tmp_path) -> None:
    (tmp_path / "a.txt").write_text("hello")
    runner = LocalRunner(cwd=tmp_path, env={**os.environ, "HOME": str(tmp_path)})
    assert await runner.read_file("./a.txt", timeout=5) == "hello"
    assert await runner.read_file("missing.txt", timeout=5) is None


async def test_read_file_refuses_a_file_over_the_limit(tmp_path) -> None:
    (tmp_path / "at-limit.md").write_bytes(b"a" * READ_FILE_LIMIT)
    (tmp_path / "over-limit.md").write_bytes(b"a" * (READ_FILE_LIMIT + 1))
    (tmp_path / "endless.md").symlink_to("/dev/zero")
    runner = LocalRunner(cwd=tmp_path)
    assert len(await runner.read_file("at-limit.md", timeout=10) or "") == READ_FILE_LIMIT
    for name, why in (("over-limit.md", "larger than 4 MiB"), ("endless.md", "not a regular")):
        with pytest.raises(FileUnreadable, match=why) as caught:
            await runner.read_file(name, timeout=10)
        assert caught.value.path == name
    with pytest.raises(FileUnreadable) as caught:
        await runner.read_first(["missing.md", "over-limit.md", "at-limit.md"], timeout=10)
    assert caught.value.path == "over-limit.md"


async def test_read_file_names_a_file_it_cannot_read(tmp_path) -> None:
    (tmp_path / "loop.md").symlink_to("loop.md")
    (tmp_path / "dangling.md").symlink_to("nowhere.md")
    (tmp_path / "folder").mkdir()
    runner = LocalRunner(cwd=tmp_path)
    for name in ("loop.md", "dangling.md"):
        with pytest.raises(FileUnreadable, match="symbolic link that leads nowhere") as caught:
            await runner.read_file(name, timeout=5)
        assert caught.value.path == name
    assert await runner.read_file("folder", timeout=5) is None
    assert await runner.read_file("folder/missing.md", timeout=5) is None
