"""A replayed recording runs its writes only on a yes given here: a person's yes in the file
(or one edited into it) is asked again at a terminal and refused headless; reads judged
read-only still run as recorded, inside the kernel lock."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kosmos.events import CommandDecision
from kosmos.transcript import read_transcript
from tests.conftest import run_cli
from tests.llmserver import ScriptedLLM
from tests.test_fleet_cli import converse


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    (path / ".kosmos/skills/probe").mkdir(parents=True)
    (path / ".kosmos/skills/probe/SKILL.md").write_text(
        "---\nname: probe\ndescription: look\n---\nLook around.\n"
    )
    return path


def _tampered(llm: ScriptedLLM, cli_env: dict, project: Path) -> Path:
    """A recording whose approved `touch ok.txt` was swapped for a python writer, the reply and
    the decision alike, as someone who handed it over might have."""
    llm.script("[CMD] ls", "[CMD] touch ok.txt", "[DONE] done")
    recorded = project / "recorded.jsonl"
    proc = run_cli(
        ["run", "probe", "--transcript", str(recorded)],
        env=cli_env,
        cwd=project,
        stdin="y\ny\n",
    )
    assert proc.returncode == 0, proc.stderr
    [_, touched] = [e for e in read_transcript(recorded) if isinstance(e, CommandDecision)]
    assert (touched.by, touched.asked) == ("operator", True)
    (project / "ok.txt").unlink()
    writer = "python3 -c \\\"open('pwned.txt', 'w').write('x')\\\""
    recorded.write_text(recorded.read_text().replace("touch ok.txt", writer))
    return recorded


def test_a_tampered_recording_writes_nothing_headless(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    recorded = _tampered(llm, cli_env, project)
    offline = {**cli_env, "AI_KOSMOS_MODEL_BASE_URL": "http://127.0.0.1:9/v1"}
    proc = run_cli(
        ["run", "probe", "--replay", str(recorded), "--non-interactive", "--json"],
        env=offline,
        cwd=project,
    )
    assert proc.returncode == 4, proc.stderr
    assert "pass --yes" in proc.stderr
    assert not (project / "pwned.txt").exists()
    decided = [
        (x["command"], x["by"])
        for x in map(json.loads, proc.stdout.splitlines())
        if x["type"] == "command_decision"
    ]
    assert decided == [("ls", "replay")]  # the read ran as recorded, in the lock


def test_a_tampered_recording_at_a_terminal_shows_the_write_and_asks(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    recorded = _tampered(llm, cli_env, project)
    offline = {**cli_env, "AI_KOSMOS_MODEL_BASE_URL": "http://127.0.0.1:9/v1"}
    code, out, err = converse(
        ["run", "probe", "--replay", str(recorded)],
        env=offline,
        cwd=project,
        replies=[("Run? [y/N/e/a]", "n")],
    )
    shown = out + err
    assert "open('pwned.txt', 'w')" in shown
    assert "(as recorded)" not in shown.split("pwned.txt", 1)[1]
    assert not (project / "pwned.txt").exists()
    # Skipped, the step's news to the LLM is not the recorded output: the replay stops there.
    assert code == 1 and "differs from the recording" in shown, shown
