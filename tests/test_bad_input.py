"""Bad input is one line and an exit code, never a traceback, a hang or a lost transcript; and a
merge of a fleet's shards is whole or refused."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from kosmos.errors import UsageError
from kosmos.transcript import read_transcript
from tests.conftest import run_cli
from tests.llmserver import ScriptedLLM

SKILL = "---\nname: probe\ndescription: probe\n---\nCheck the host.\n"


def _one_line(proc: subprocess.CompletedProcess[str], code: int = 2) -> str:
    """The run's only line on stderr, after an exit with `code`."""
    assert proc.returncode == code, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "validation error" not in proc.stderr and "pydantic" not in proc.stderr
    return lines[0]


def _skills(tmp_path: Path) -> Path:
    folder = tmp_path / "skills" / "probe"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(SKILL)
    return tmp_path / "skills"


def _inventory(tmp_path: Path, names: list[str]) -> Path:
    """Hosts that all run on this machine, under names of their own."""
    path = tmp_path / "inventory.yaml"
    hosts = {name: {"ansible_host": "local"} for name in names}
    path.write_text(yaml.safe_dump({"all": {"hosts": hosts}}))
    return path


def test_get_file_of_a_fifo_is_one_line_to_the_llm_and_the_run_ends(
    llm: ScriptedLLM, cli_env: dict, tmp_path: Path
) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    llm.script(f"[GET-FILE] {fifo}", "[DONE] read")
    proc = run_cli(
        ["run", "system-overview", "--non-interactive", "--yes"], env=cli_env, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    told = llm.requests[1].last_user_text
    assert "not a regular file (a FIFO, socket or device); kosmos reads only files" in told


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("{not json", "line 2: not JSON (Expecting property name enclosed in double quotes"),
        ('["a list"]', 'line 2: not a kosmos event (no "type")'),
        ('{"type": "directive", "step": "x"}', "line 2: a 'directive' event kosmos cannot read"),
        ('{"type": "nonsense"}', "line 2: a 'nonsense' event kosmos cannot read"),
    ],
)
def test_a_malformed_transcript_names_its_file_and_line(
    llm: ScriptedLLM, cli_env: dict, tmp_path: Path, line: str, why: str
) -> None:
    skills = _skills(tmp_path)
    good = tmp_path / "good.jsonl"
    llm.script("[DONE] ok")
    first = run_cli(
        ["run", "probe", "--skills-dir", str(skills), "--non-interactive", "--transcript",
         str(good)],
        env=cli_env,
        cwd=tmp_path,
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    head, *rest = good.read_text().splitlines(keepends=True)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(head + line + "\n" + "".join(rest))
    for flag in ("--resume", "--replay", "--canary-from"):
        args = ["run", "probe", "--skills-dir", str(skills), "--non-interactive", "--yes"]
        if flag == "--resume":
            args = ["run", "--non-interactive", "--yes"]
        proc = run_cli([*args, flag, str(bad)], env=cli_env, cwd=tmp_path)
        said = _one_line(proc)
        assert f"{bad} {why}" in said, (flag, said)
    # Nothing was appended to the transcript --resume was given.
    assert bad.read_text() == head + line + "\n" + "".join(rest)


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ('{"type": "directive", "step": "x"}', "(step: Expected int, got str)"),
        ('{"type": "directive", "step": 1, "text": "ls"}', "(kind: missing)"),
        ('{"type": "nonsense"}', "(type: no event type 'nonsense')"),
        (
            '{"type": "llm_request", "step": 1, "sent_messages": 1, "sent_bytes": 9, '
            '"new_messages": [{"role": "robot", "content": "hi"}]}',
            "(new_messages.0.role: Invalid enum value 'robot')",
        ),
    ],
)
def test_a_broken_event_names_its_field_and_what_is_wrong(
    tmp_path: Path, line: str, why: str
) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"type": "warning", "message": "ok"}\n' + line + "\n")
    with pytest.raises(UsageError) as caught:
        read_transcript(path)
    assert str(caught.value).startswith(f"{path} line 2: a ")
    assert f"event kosmos cannot read {why}; was the file edited?" in str(caught.value)


def test_a_fifo_or_dev_zero_is_not_a_transcript_or_a_fleet_result(
    cli_env: dict, tmp_path: Path
) -> None:
    skills = _skills(tmp_path)
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    for path, kind in ((fifo, "a FIFO"), (Path("/dev/zero"), "a character device")):
        for flag in ("--resume", "--replay", "--canary-from"):
            args = ["run", "probe", "--skills-dir", str(skills), "--non-interactive"]
            proc = run_cli([*args, flag, str(path)], env=cli_env, cwd=tmp_path, timeout=30)
            assert f"{path}: {kind}, not a transcript file" in _one_line(proc), flag
    run = tmp_path / "run"
    run.mkdir()
    for target, kind in ((fifo, "a FIFO"), (Path("/dev/zero"), "a character device")):
        (run / "fleet.json").unlink(missing_ok=True)
        (run / "fleet.json").symlink_to(target)
        proc = run_cli(["fleet", "merge", str(run)], env=cli_env, cwd=tmp_path, timeout=30)
        assert _one_line(proc) == f"kosmos: {run}/fleet.json: {kind}, not a fleet result"


def test_hosts_whose_names_make_one_file_name_keep_their_own_transcripts(
    llm: ScriptedLLM, cli_env: dict, tmp_path: Path
) -> None:
    names = ["web/1", "web 1", "web_1"]
    inventory = _inventory(tmp_path, names)
    llm.default = "[DONE] checked"
    run = tmp_path / "run"
    proc = run_cli(
        ["run", "probe", "--skills-dir", str(_skills(tmp_path)), "-i", str(inventory),
         "--hosts", "all", "--non-interactive", "--yes", "--transcript", str(run)],
        env=cli_env,
        cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    files = sorted(run.glob("*.jsonl"))
    assert len(files) == 3
    # Each file is one host's run, from its start to its result.
    seen = set()
    for path in files:
        events = read_transcript(path)
        assert len({e.host for e in events}) == 1
        assert [e.type for e in events if e.type in ("run_started", "result")] == [
            "run_started",
            "result",
        ]
        seen.add(events[0].host)
    assert seen == set(names)
    fleet = json.loads((run / "fleet.json").read_text())
    assert sorted(Path(h["transcript"]).name for h in fleet["hosts"]) == [f.name for f in files]
