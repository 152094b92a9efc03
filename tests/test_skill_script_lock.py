"""A skill's own script under `--policy read-only`: it runs unasked inside the kernel lock (its
content is unknown, so the kernel decides), as under `locked`; where the host cannot be locked
it is asked for, or refused, as any write. Driven through the gate and whole `kosmos run`s,
locally and over Debian's sshd, with the bundled quick-health and a script that writes."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

from kosmos.engine.approval import ApprovalGate
from kosmos.engine.skill_script import SkillFiles
from kosmos.hosts.lock import HostLock, LockConfig, LockStatus
from kosmos.hosts.runner import Lock
from kosmos.prompts import Prompts
from kosmos.safety import assess
from tests.conftest import run_cli
from tests.helpers import ScriptOperator
from tests.llmserver import Recorded, ScriptedLLM
from tests.sshd import Sshd

FILES = SkillFiles("/opt/skills/qh", ("scripts/health.sh", "scripts/tool.py", "README.md"))


@pytest.mark.parametrize(
    ("command", "script"),
    [
        ("sh /opt/skills/qh/scripts/health.sh 85", "scripts/health.sh"),
        ("bash /opt/skills/qh/./scripts/health.sh 2>&1", "scripts/health.sh"),
        ("sh '/opt/skills/qh/scripts/health.sh' 2>/dev/null", "scripts/health.sh"),
        ("python3 /opt/skills/qh/scripts/tool.py --all", "scripts/tool.py"),
        ("/opt/skills/qh/scripts/health.sh", "scripts/health.sh"),
        # Anything more than running the file is an ordinary command.
        ("sh /opt/skills/qh/scripts/health.sh > out.txt", None),
        ("sh /opt/skills/qh/scripts/health.sh | tee out.txt", None),
        ("sh /opt/skills/qh/scripts/health.sh; touch x", None),
        ("sh -c 'touch x' /opt/skills/qh/scripts/health.sh", None),
        ("X=1 sh /opt/skills/qh/scripts/health.sh", None),
        ("sh $BASE/scripts/health.sh", None),
        ("sh /opt/skills/qh/scripts/*.sh", None),
        ("sh /opt/skills/qh/scripts/other.sh", None),
        ("sh /opt/skills/qh/../qh2/scripts/health.sh", None),
        ("sh scripts/health.sh", None),
        ("cat /opt/skills/qh/scripts/health.sh", None),
    ],
)
def test_which_lines_run_a_skill_script(command: str, script: str | None) -> None:
    assert FILES.script(command) == script


HELD = LockStatus(abi=7, seccomp=True, interpreter="perl", arch="x86_64")
NONE = LockStatus(why="neither perl nor python3 is on the host's PATH")
SCRIPT = "sh /opt/skills/qh/scripts/health.sh 85"


def _gate(status: LockStatus, policy: str, *, headless: bool = True) -> ApprovalGate:
    kit = HostLock(LockConfig(), status)
    gate = ApprovalGate(
        ScriptOperator(),
        Prompts.load(),
        host="web1",
        policy=policy,  # type: ignore[arg-type]
        non_interactive=headless,
        host_lock=lambda: kit,
    )
    gate.skill_files = FILES
    return gate


async def _decide(gate: ApprovalGate, command: str):
    verdict = assess(command, "bash")
    return await gate.judge(1, command, verdict.verdict, verdict.reason)


async def test_read_only_runs_the_skills_script_inside_the_lock_as_locked_does() -> None:
    decision = await _decide(_gate(HELD, "read-only"), SCRIPT)
    assert (decision.action, decision.by, decision.asked) == ("run", "policy", False)
    assert decision.lock == Lock(sockets=False, network=False)
    assert decision.reason == "the skill's own script scripts/health.sh, inside the kernel lock"
    locked = await _decide(_gate(HELD, "locked"), SCRIPT)
    assert locked.lock == decision.lock
    # Another script than the skill's stays a write that nobody can approve headless.
    other = await _decide(_gate(HELD, "read-only"), "sh /tmp/x.sh")
    assert other.action == "refused" and "policy is read-only" in other.reason


async def test_where_the_host_cannot_be_locked_the_script_is_refused_or_asked_as_before() -> None:
    refused = await _decide(_gate(NONE, "read-only"), SCRIPT)
    assert refused.action == "refused" and "policy is read-only" in refused.reason
    asked = _gate(NONE, "read-only", headless=False)
    decision = await _decide(asked, SCRIPT)
    assert isinstance(asked.operator, ScriptOperator)
    assert [p.command for p in asked.operator.proposals] == [SCRIPT]
    assert decision.action == "run" and decision.asked and decision.lock is None


# -- whole runs ---------------------------------------------------------------------------------

needs_lock = pytest.mark.skipif(
    sys.platform != "linux" or os.geteuid() != 0, reason="the lock's tests run as root on Linux"
)

WRITER = """---
name: writer
description: a skill whose script writes
params:
  - name: target
    description: the file the script creates
---
Run `sh BASE/scripts/write.sh TARGET`, then finish with [DONE].
"""


def _base(record: Recorded) -> str | None:
    found = re.search(r"^Base directory for this skill: (.+)$", record.system, re.M)
    return found.group(1) if found else None


def _script_then_done(llm: ScriptedLLM, script: str, *args: str) -> None:
    """The LLM runs the skill's `script` from the base directory its prompt names, then ends."""

    def reply(record: Recorded) -> str:
        if sum(m["role"] == "user" for m in record.messages) > 1:
            return "[DONE] ok"
        base = _base(record)
        return f"[CMD] sh {base}/{script} {' '.join(args)}".rstrip() if base else "[DONE] none"

    llm.default = reply


def _writer_skill(root: Path) -> Path:
    folder = root / ".kosmos/skills/writer"
    (folder / "scripts").mkdir(parents=True)
    (folder / "SKILL.md").write_text(WRITER)
    (folder / "scripts/write.sh").write_text('#!/bin/sh\necho writing "$1"\ntouch "$1"\n')
    return root


def _events(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def _ran(events: list[dict]) -> list[dict]:
    return [e for e in events if e["type"] == "command_finished"]


@needs_lock
def test_quick_health_under_read_only_runs_its_script_in_the_lock(
    llm: ScriptedLLM, cli_env: dict, tmp_path: Path
) -> None:
    _script_then_done(llm, "scripts/health.sh", "85")
    proc = run_cli(
        ["run", "quick-health", "--policy", "read-only", "--non-interactive", "--json"],
        env=cli_env,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    events = _events(proc.stdout)
    decided = [e for e in events if e["type"] == "command_decision"]
    assert [(e["decision"], e["by"], e["asked"]) for e in decided] == [("run", "policy", False)]
    ran = _ran(events)
    assert [(e["exit_code"], e["locked"]) for e in ran] == [(0, True)]
    assert "== load ==" in ran[0]["sent_to_llm"] and "== memory ==" in ran[0]["sent_to_llm"]
    assert events[-1]["status"] == "done" and events[-1]["commands_run"] == 1


@needs_lock
def test_a_skill_script_that_writes_is_stopped_by_the_lock(
    llm: ScriptedLLM, cli_env: dict, tmp_path: Path
) -> None:
    project = _writer_skill(tmp_path / "project")
    target = tmp_path / "made-by-the-script"
    _script_then_done(llm, "scripts/write.sh", str(target))
    proc = run_cli(
        ["run", "writer", "--param", f"target={target}", "--policy", "read-only"]
        + ["--non-interactive", "--json"],
        env=cli_env,
        cwd=project,
    )
    assert proc.returncode == 0, proc.stderr
    assert not target.exists()
    ran = _ran(_events(proc.stdout))
    assert [e["locked"] for e in ran] == [True] and ran[0]["exit_code"] != 0
    told = llm.requests[1].last_user_text
    assert f"writing {target}" in told and "Permission denied" in told


@needs_lock
def test_over_ssh_the_uploaded_script_runs_in_the_lock_and_cannot_write(
    llm: ScriptedLLM, ssh_cli_env: dict, remote: Sshd, tmp_path: Path
) -> None:
    _script_then_done(llm, "scripts/health.sh", "85")
    args = ["--host", "box", "--policy", "read-only", "--non-interactive", "--json"]
    proc = run_cli(["run", "quick-health", *args], env=ssh_cli_env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    events = _events(proc.stdout)
    ran = _ran(events)
    assert [(e["exit_code"], e["locked"]) for e in ran] == [(0, True)]
    assert "/.cache/kosmos/skills/quick-health-" in ran[0]["command"]
    assert "== busiest processes ==" in ran[0]["sent_to_llm"]
    assert events[-1]["status"] == "done"

    home = remote.remote_home
    target = home / "made-by-the-script"
    _script_then_done(llm, "scripts/write.sh", str(target))
    project = _writer_skill(tmp_path / "project")
    proc = run_cli(
        ["run", "writer", "--param", f"target={target}", *args], env=ssh_cli_env, cwd=project
    )
    assert proc.returncode == 0, proc.stderr
    ran = _ran(_events(proc.stdout))
    assert [e["locked"] for e in ran] == [True] and "Permission denied" in ran[0]["sent_to_llm"]
    assert not target.exists()
