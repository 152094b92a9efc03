"""The memory folder itself: names, limits, atomic and locked writes, the index."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kosmos.memory import MAX_BYTES, MemoryRefused, MemoryStore, Note, check_name, index_text
from tests.conftest import ROOT


@pytest.mark.parametrize(
    "name",
    [
        "../MEMORY_escape.md",
        "MEMORY_a/../b.md",
        "/tmp/MEMORY_abs.md",
        "MEMORY_Capital.md",
        "NOTES_x.md",
        "MEMORY_x.txt",
        "MEMORY_.md",
        "MEMORY_a__b.md",
        "MEMORY_a_.md",
        "MEMORY_ü.md",
        "MEMORY_" + "a" * 100 + ".md",
        "",
    ],
)
def test_names_that_break_the_rule_are_refused(name: str) -> None:
    with pytest.raises(MemoryRefused, match="is not a memory name: a name is MEMORY_ then"):
        check_name(name)


def test_good_names_pass() -> None:
    for name in ("MEMORY_a.md", "MEMORY_nginx_setup.md", "MEMORY_host_web_01.md", "MEMORY_2.md"):
        assert check_name(name) == name


async def test_store_append_retrieve_index_delete(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "memory")
    assert await store.index() == []
    assert not (tmp_path / "memory").exists()  # nothing is made until something is written
    assert await store.store("MEMORY_b.md", "Second note\nbody") == len("Second note\nbody\n")
    await store.append("MEMORY_a.md", "\n\n  First   note  \nmore")
    await store.append("MEMORY_a.md", "appended")
    assert await store.retrieve("MEMORY_a.md") == "\n\n  First   note  \nmore\nappended\n"
    assert await store.index() == [
        Note("MEMORY_a.md", "First   note"),
        Note("MEMORY_b.md", "Second note"),
    ]
    await store.delete("MEMORY_b.md")
    with pytest.raises(MemoryRefused, match="there is no MEMORY_b.md; list the memory"):
        await store.retrieve("MEMORY_b.md")
    with pytest.raises(MemoryRefused, match="there is no MEMORY_b.md"):
        await store.delete("MEMORY_b.md")
    assert index_text([], "(none)") == "(none)"
    assert index_text(await store.index(), "") == "MEMORY_a.md\nFirst   note"


async def test_the_index_shows_150_characters_of_the_first_line(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    await store.store("MEMORY_long.md", "x" * 400 + "\nsecond")
    (tmp_path / "notes.md").write_text("not a note\n")
    assert await store.index() == [Note("MEMORY_long.md", "x" * 150)]


async def test_over_the_limit_nothing_changes(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    with pytest.raises(MemoryRefused, match="more than the 64 KiB a note may hold"):
        await store.store("MEMORY_big.md", "x" * (MAX_BYTES + 1))
    assert not (tmp_path / "MEMORY_big.md").exists()
    await store.store("MEMORY_near.md", "y" * (MAX_BYTES - 10))
    with pytest.raises(MemoryRefused, match="with this append it would hold"):
        await store.append("MEMORY_near.md", "z" * 20)
    assert (tmp_path / "MEMORY_near.md").read_text() == "y" * (MAX_BYTES - 10) + "\n"


def test_appends_from_many_processes_all_land(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    code = (
        "import asyncio, sys\n"
        "from pathlib import Path\n"
        "from kosmos.memory import MemoryStore\n"
        "store = MemoryStore(Path(sys.argv[1]))\n"
        "async def main():\n"
        "    await asyncio.gather(*(store.append('MEMORY_log.md', f'{sys.argv[2]}-{i}')"
        " for i in range(25)))\n"
        "asyncio.run(main())\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(folder), f"p{n}"], cwd=ROOT)
        for n in range(4)
    ]
    assert [p.wait(timeout=60) for p in procs] == [0, 0, 0, 0]
    lines = (folder / "MEMORY_log.md").read_text().splitlines()
    assert sorted(lines) == sorted(f"p{n}-{i}" for n in range(4) for i in range(25))
    assert [p.name for p in folder.iterdir() if p.name.endswith(".tmp")] == []


async def test_a_note_that_is_not_a_plain_file_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    folder.mkdir()
    (tmp_path / "elsewhere").write_text("not a note\n")
    (folder / "MEMORY_link.md").symlink_to(tmp_path / "elsewhere")
    store = MemoryStore(folder)
    with pytest.raises(MemoryRefused, match="is not a plain file"):
        await store.retrieve("MEMORY_link.md")
    assert await store.index() == []
    with pytest.raises(MemoryRefused, match="remove it or store another name"):
        await store.store("MEMORY_link.md", "replaced")
    # Neither the link nor what it points at changed.
    assert (tmp_path / "elsewhere").read_text() == "not a note\n"
    assert (folder / "MEMORY_link.md").is_symlink()
