"""Run assembly: one road from a request to a ready session, for every front end."""

from __future__ import annotations

from pathlib import Path

import pytest

from kosmos.config import Settings, check_settings
from kosmos.engine.operator import Approval
from kosmos.errors import UsageError
from kosmos.events import CommandDecision, Event, Notice, RunStarted
from kosmos.fleet.journal import Journal
from kosmos.fleet.orchestrator import SessionParts
from kosmos.fleet.targets import HostSpec
from kosmos.hosts.local import LocalRunner
from kosmos.llm.factory import make_provider
from kosmos.prompts import Prompts
from kosmos.runs.assembly import RunChoices, prepare_run, session_options
from kosmos.runs.direct import read_file, run_command
from kosmos.runs.fleet import FleetSessions
from kosmos.runs.redactor import run_redactor
from kosmos.transcript import read_transcript
from tests.helpers import ScriptOperator, make_skill
from tests.llmserver import ScriptedLLM

SECRET = "sk-runs-test-0123456789abcdef"


def settings(tmp_path: Path, **more: object) -> Settings:
    return check_settings({"transcript_dir": tmp_path / "runs", "api_key": SECRET, **more})


def test_session_options_take_the_choice_then_the_recorded_run_then_skill_then_config(
    tmp_path: Path,
) -> None:
    skill = make_skill(timeout=30, protocol="json")
    cfg = settings(tmp_path, max_steps=40, command_timeout=90, protocol="tools", memory=False)
    plain = session_options(skill, cfg, RunChoices(), policy="ask")
    assert (plain.max_steps, plain.command_timeout, plain.protocol) == (40, 30, "json")
    chosen = session_options(
        skill, cfg, RunChoices(max_steps=5, command_timeout=7, protocol="tags"), policy="auto"
    )
    assert (chosen.max_steps, chosen.command_timeout, chosen.protocol, chosen.policy) == (
        5,
        7,
        "tags",
        "auto",
    )
    started = RunStarted(
        run_id="r",
        skill="probe",
        skill_path="/skills/probe/SKILL.md",
        model="m",
        base_url="http://127.0.0.1:9",
        max_steps=12,
        history_mode="last",
        prompt="then",
        protocol="auto",
    )
    resumed = session_options(
        skill, cfg, RunChoices(prompt="ignored"), policy="ask", resumed=started
    )
    assert (resumed.max_steps, resumed.history_mode, resumed.prompt, resumed.protocol) == (
        12,
        "last",
        "then",
        "auto",
    )
    replayed = session_options(skill, cfg, RunChoices(), policy="ask", replayed=started)
    assert (replayed.max_steps, replayed.protocol) == (40, "auto")


async def test_prepare_run_writes_early_events_after_run_started_and_redacts(
    llm: ScriptedLLM, tmp_path: Path
) -> None:
    cfg = settings(tmp_path, base_url=llm.base_url, hosts={"local": {"policy": "read-only"}})
    llm.script("[CMD] echo one", "[DONE] fine")
    shown: list[Event] = []
    early: list[Event] = [Notice(message=f"before the run, key {SECRET}")]
    ready = prepare_run(
        make_skill(),
        {},
        LocalRunner(cwd=tmp_path),
        settings=cfg,
        prompts=Prompts.load(),
        operator=ScriptOperator(),
        redactor=run_redactor(cfg, {}),
        show=shown.append,
        choices=RunChoices(yes=True),
        early=early,
    )
    # The host's config pins it, whatever --yes says; the front end may tell the operator.
    assert (ready.policy, ready.policy_from) == ("read-only", "config hosts.local.policy")
    result = await ready.run()
    assert result.status == "done"
    events = read_transcript(ready.path)
    assert isinstance(events[0], RunStarted) and isinstance(events[1], Notice)
    assert events[1].host == "local" and SECRET not in events[1].message
    # The front end is shown what the run does; the early notice it had shown itself.
    assert [e.type for e in shown if e.persist] == [e.type for e in events[:1] + events[2:]]
    decision = next(e for e in events if isinstance(e, CommandDecision))
    assert (decision.by, decision.asked) == ("policy", False)


async def test_fleet_sessions_give_each_host_its_own_policy(tmp_path: Path) -> None:
    cfg = settings(tmp_path, hosts={"db": {"policy": "read-only"}})
    journal = Journal(tmp_path / "fleet")
    sessions = FleetSessions(
        make_skill(),
        {},
        cfg,
        Prompts.load(),
        run_redactor(cfg, {}),
        journal,
        choices=RunChoices(yes=True, prompt="look"),
        run_id="abc",
    )
    provider = make_provider(cfg)
    try:
        made = {
            spec.name: sessions(
                SessionParts(spec, LocalRunner(), provider, ScriptOperator(), lambda e: None)
            )
            for spec in (HostSpec("web1", "web1"), HostSpec("db1", "deploy@db"))
        }
    finally:
        await provider.aclose()
        journal.close()
    assert made["web1"].options.policy == "auto"  # --yes
    assert made["db1"].options.policy == "read-only"  # pinned by its target
    assert made["db1"].options.prompt == "look" and made["db1"].run_id == "abc-db1"
    assert made["db1"].transcript == str(journal.path("db1"))


async def test_run_command_and_read_file_on_a_host_by_name(tmp_path: Path) -> None:
    cfg = settings(tmp_path, hosts={"local": {"policy": "read-only"}})
    (tmp_path / "notes").write_text(f"key {SECRET}\n")
    operator = ScriptOperator(approvals=[Approval.skip()])
    env = {"HOME": str(tmp_path)}
    out = await run_command(
        "local", f"cat {tmp_path}/notes", settings=cfg, operator=operator, env=env
    )
    assert out.output == "key [REDACTED]" and out.decision.by == "policy"
    write = await run_command(
        "local", f"touch {tmp_path}/made", settings=cfg, operator=operator, env=env
    )
    assert write.decision.action == "skip" and not (tmp_path / "made").exists()
    read = await read_file("local", f"{tmp_path}/notes", settings=cfg, operator=operator, env=env)
    assert read.content == "key [REDACTED]"
    # Each call left a transcript of its decision and result, redacted.
    files = sorted((tmp_path / "runs").glob("*-direct-*.jsonl"))
    assert len(files) == 3
    kinds = [[e.type for e in read_transcript(f)] for f in files]
    assert ["command_decision", "command_finished"] in [
        [k for k in ks if k in ("command_decision", "command_finished")] for ks in kinds
    ]
    assert all(SECRET not in f.read_text() for f in files)


def test_a_fleet_host_file_another_journal_is_writing_is_refused(tmp_path: Path) -> None:
    first, second = Journal(tmp_path / "fleet"), Journal(tmp_path / "fleet")
    first.write(Notice(message="first", host="web1"))
    with pytest.raises(UsageError) as refused:
        second.write(Notice(message="second", host="web1"))
    assert str(refused.value) == (
        f"the transcript {tmp_path / 'fleet' / 'web1.jsonl'} is being written by another "
        "kosmos run; wait for it to end, or give --transcript another path"
    )
    second.write(Notice(message="another host", host="web2"))
    first.close()
    second.write(Notice(message="now free", host="web1"))
    second.close()
    assert [e.message for e in read_transcript(tmp_path / "fleet" / "web1.jsonl")] == [
        "first",
        "now free",
    ]
