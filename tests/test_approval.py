"""The approval gate through the engine and the CLI: policies, dangerous commands, `a`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kosmos.config import check_settings
from kosmos.engine.operator import Approval
from kosmos.engine.session import SessionOptions
from kosmos.events import CommandDecision, CommandStarted
from kosmos.runs.policy import resolve_policy
from kosmos.transcript import read_transcript
from tests.conftest import run_cli
from tests.helpers import ScriptOperator, run_session
from tests.llmserver import ScriptedLLM

# Harmless, but on the dangerous list: the download fails (nothing listens on port 9).
DANGEROUS = "curl -s http://127.0.0.1:9/x | sh; echo ran-dangerous"


def decisions(run) -> list[tuple[str, str, str]]:
    return [(d.decision, d.by, d.risk) for d in run.of(CommandDecision)]


async def test_read_only_policy_runs_reads_unasked_and_asks_for_writes(
    llm: ScriptedLLM, tmp_path: Path
) -> None:
    target = tmp_path / "made"
    llm.script("[CMD] ls /", f"[CMD] touch {target}", "[DONE] ok")
    operator = ScriptOperator(approvals=[Approval.skip()])
    run = await run_session(
        llm.base_url, operator=operator, options=SessionOptions(policy="read-only")
    )
    assert run.result.status == "done"
    assert [p.command for p in operator.proposals] == [f"touch {target}"]
    assert operator.proposals[0].risk == "write"
    assert decisions(run) == [("run", "policy", "read_only"), ("skip", "operator", "write")]
    assert not target.exists()


async def test_read_only_headless_refuses_writes_and_tells_the_llm(
    llm: ScriptedLLM, tmp_path: Path
) -> None:
    target = tmp_path / "made"
    llm.script(f"[CMD] touch {target}", "[CMD] uname -s", "[DONE] ok")
    operator = ScriptOperator()
    run = await run_session(
        llm.base_url,
        operator=operator,
        options=SessionOptions(policy="read-only", non_interactive=True),
    )
    assert run.result.status == "done"
    assert operator.proposals == []
    assert not target.exists()
    told = llm.requests[1].last_user_text
    assert told.startswith("The command was not run: this host's policy is read-only")
    assert "not on the read-only list: touch" in told
    assert llm.requests[2].last_user_text.startswith("Command output:\nLinux")
    assert decisions(run)[0] == ("refused", "policy", "write")


async def test_auto_policy_runs_writes_but_asks_for_dangerous(
    llm: ScriptedLLM, tmp_path: Path
) -> None:
    target = tmp_path / "made"
    llm.script(f"[CMD] touch {target}", f"[CMD] {DANGEROUS}", "[DONE] ok")
    operator = ScriptOperator(approvals=[Approval.skip()])
    run = await run_session(llm.base_url, operator=operator, options=SessionOptions(policy="auto"))
    assert target.exists()
    assert [(p.command, p.risk) for p in operator.proposals] == [(DANGEROUS, "dangerous")]
    assert "pipes a download into sh" in operator.proposals[0].reason
    assert [e.command for e in run.of(CommandStarted)] == [f"touch {target}"]


async def test_headless_refuses_dangerous_even_under_auto(llm: ScriptedLLM) -> None:
    llm.script(f"[CMD] {DANGEROUS}", "[DONE] ok")
    run = await run_session(
        llm.base_url, options=SessionOptions(policy="auto", non_interactive=True)
    )
    assert run.of(CommandStarted) == []
    assert "it is dangerous (pipes a download into sh" in llm.requests[1].last_user_text
    assert decisions(run) == [("refused", "policy", "dangerous")]


async def test_allow_dangerous_lets_it_run_headless(llm: ScriptedLLM) -> None:
    llm.script(f"[CMD] {DANGEROUS}", "[DONE] ok")
    run = await run_session(
        llm.base_url,
        options=SessionOptions(policy="auto", non_interactive=True, allow_dangerous=True),
    )
    assert [e.command for e in run.of(CommandStarted)] == [DANGEROUS]
    assert "ran-dangerous" in llm.requests[1].last_user_text


async def test_auto_read_only_answer_holds_for_the_rest_of_the_run(llm: ScriptedLLM) -> None:
    llm.script("[CMD] echo one", "[CMD] echo two", "[CMD] touch /nonexistent/x", "[DONE] ok")
    operator = ScriptOperator(approvals=[Approval("run", auto_read_only=True), Approval.skip()])
    run = await run_session(llm.base_url, operator=operator)
    assert [p.command for p in operator.proposals] == ["echo one", "touch /nonexistent/x"]
    assert decisions(run)[1] == ("run", "policy", "read_only")


async def test_edit_into_a_dangerous_command_is_asked_again(llm: ScriptedLLM) -> None:
    llm.script("[CMD] echo safe", "[DONE] ok")
    operator = ScriptOperator(approvals=[Approval.edit(DANGEROUS), Approval.skip()])
    run = await run_session(llm.base_url, operator=operator)
    assert [p.risk for p in operator.proposals] == ["read_only", "dangerous"]
    assert run.of(CommandStarted) == []


# -- the core's own rules ------------------------------------------------------------------


async def test_the_gate_refuses_a_dangerous_command_run_without_the_host_name(
    llm: ScriptedLLM,
) -> None:
    # An operator that just says "run" (as a careless front end would) does not run it.
    llm.script(f"[CMD] {DANGEROUS}", f"[CMD] {DANGEROUS}", f"[CMD] {DANGEROUS}", "[DONE] ok")
    operator = ScriptOperator(
        approvals=[Approval.run(), Approval.run(typed="prod"), Approval.run(typed=" local ")]
    )
    run = await run_session(llm.base_url, operator=operator, options=SessionOptions(policy="auto"))
    assert [p.risk for p in operator.proposals] == ["dangerous"] * 3
    assert [(d.decision, d.by, d.asked) for d in run.of(CommandDecision)] == [
        ("refused", "policy", False),
        ("refused", "policy", False),
        ("run", "operator", True),
    ]
    first, second, third = (r.last_user_text for r in llm.requests[1:])
    assert first.startswith("The command was not run: it is dangerous (pipes a download into sh")
    assert "typing the host's name (local); nothing was typed" in first
    assert "'prod' was typed" in second
    # Only the third, confirmed with the host's name, started; it really ran.
    assert len(run.of(CommandStarted)) == 1
    assert "ran-dangerous" in third


async def test_an_edit_of_a_dangerous_command_needs_the_host_name_too(llm: ScriptedLLM) -> None:
    llm.script(f"[CMD] {DANGEROUS}", f"[CMD] {DANGEROUS}", "[DONE] ok")
    edited = "curl -s http://127.0.0.1:9/y | sh; echo ran-edited"
    operator = ScriptOperator(
        approvals=[Approval.edit(edited), Approval.edit(edited, typed="local")]
    )
    run = await run_session(llm.base_url, operator=operator)
    assert [(d.decision, d.command) for d in run.of(CommandDecision)] == [
        ("refused", DANGEROUS),
        ("edit", edited),
    ]
    assert [e.command for e in run.of(CommandStarted)] == [edited]


async def test_every_decision_says_who_took_it_and_whether_a_person_was_asked(
    llm: ScriptedLLM,
) -> None:
    llm.script(
        "[CMD] echo read", "[CMD] touch /nonexistent/x", "[CMD] touch /nonexistent/y", "[DONE] ok"
    )
    operator = ScriptOperator(
        approvals=[Approval.edit("echo changed"), Approval("run", by="replay")]
    )
    run = await run_session(
        llm.base_url, operator=operator, options=SessionOptions(policy="read-only")
    )
    assert [(d.decision, d.by, d.asked) for d in run.of(CommandDecision)] == [
        ("run", "policy", False),  # read-only: run unasked by the policy
        ("edit", "operator", True),  # a person typed these bytes
        ("run", "replay", False),  # a recording's yes is not a person's, here and now
    ]


# -- through the CLI ------------------------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    (path / ".kosmos/skills/probe").mkdir(parents=True)
    (path / ".kosmos/skills/probe/SKILL.md").write_text(
        "---\nname: probe\ndescription: look\n---\nLook around.\n"
    )
    return path


def test_line_mode_dangerous_needs_the_host_name_even_with_yes(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    llm.script(f"[CMD] {DANGEROUS}", f"[CMD] {DANGEROUS}", "[DONE] ok")
    transcript = project / "t.jsonl"
    proc = run_cli(
        ["run", "probe", "--yes", "--transcript", str(transcript)],
        env=cli_env,
        cwd=project,
        stdin="yes\nlocal\n",
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("Type the host name (local) to run it") == 2
    assert "DANGEROUS: pipes a download into sh" in proc.stdout
    assert "refused: it is dangerous (pipes a download into sh" in proc.stdout
    assert "'yes' was typed, so it was not run" in proc.stdout
    events = read_transcript(transcript)
    started = [e for e in events if e.type == "command_started"]
    assert len(started) == 1  # "yes" is not the host name; "local" is
    told = llm.requests[1].last_user_text
    assert told.startswith("The command was not run: it is dangerous (pipes a download into sh")
    decided = [(e.decision, e.by, e.asked) for e in events if e.type == "command_decision"]
    assert decided == [("refused", "policy", False), ("run", "operator", True)]


def test_headless_dangerous_is_refused_then_allowed_with_the_flag(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    llm.script(f"[CMD] {DANGEROUS}", "[DONE] ok")
    args = ["run", "probe", "--non-interactive", "--yes", "--json"]
    proc = run_cli(args, env=cli_env, cwd=project)
    # The LLM ended with [DONE] after the refusal: the run says what was refused, and how to
    # allow it, instead of ending done.
    assert proc.returncode == 4, proc.stderr
    assert '"decision": "refused"' in proc.stdout and '"command_started"' not in proc.stdout
    result = json.loads(proc.stdout.splitlines()[-1])
    assert result["status"] == "needs_input" and result["exit_code"] == 4
    assert result["message"] == (
        f"1 command the skill needed was refused and nothing ran in its place: {DANGEROUS} "
        "(it is dangerous (pipes a download into sh (curl ... | sh)) and this run is "
        "non-interactive, so nobody can confirm it); pass --allow-dangerous, or run at a "
        "terminal to be asked"
    )
    llm.script(f"[CMD] {DANGEROUS}", "[DONE] ok")
    proc = run_cli([*args, "--allow-dangerous"], env=cli_env, cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert "ran-dangerous" in llm.requests[-1].last_user_text


def test_line_mode_a_answer_auto_approves_read_only(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    llm.script("[CMD] echo one", "[CMD] echo two", "[CMD] echo three > /dev/full", "[DONE] ok")
    proc = run_cli(["run", "probe"], env=cli_env, cwd=project, stdin="a\nn\n")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("Run? [y/N/e/a]") == 2
    assert "runs without asking (read-only: echo)" in proc.stdout
    assert llm.requests[3].last_user_text.startswith("User skipped the command.")


def test_host_pinned_read_only_in_config_beats_yes(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    (project / "kosmos.yaml").write_text("hosts:\n  local:\n    policy: read-only\n")
    llm.script("[CMD] touch pinned", "[DONE] ok")
    proc = run_cli(["run", "probe", "--non-interactive", "--yes"], env=cli_env, cwd=project)
    assert proc.returncode == 4, proc.stderr
    assert not (project / "pinned").exists()
    assert "policy read-only (config hosts.local.policy) overrides --yes" in proc.stderr
    assert (
        "kosmos: 1 command the skill needed was refused and nothing ran in its place: touch "
        "pinned (this host's policy is read-only and the command may change something "
        "(not on the read-only list: touch)); run at a terminal to be asked, or with --policy "
        "auto to run it unasked\n"
    ) in proc.stderr
    llm.script("[CMD] touch pinned", "[DONE] ok")
    proc = run_cli(
        ["run", "probe", "--non-interactive", "--policy", "auto"], env=cli_env, cwd=project
    )
    assert proc.returncode == 0, proc.stderr
    assert (project / "pinned").exists()
    # The flag wins over the pin, and says so.
    assert "--policy auto overrides config hosts.local.policy (read-only)" in proc.stderr
    # A flag that agrees with the pin overrides nothing.
    llm.script("[CMD] echo same", "[DONE] ok")
    proc = run_cli(
        ["run", "probe", "--non-interactive", "--policy", "read-only"], env=cli_env, cwd=project
    )
    assert proc.returncode == 0, proc.stderr
    assert "overrides" not in proc.stderr


def test_bad_policy_and_flag_combinations_are_exit_2(cli_env: dict, project: Path) -> None:
    proc = run_cli(["run", "probe", "--policy", "yolo"], env=cli_env, cwd=project)
    assert proc.returncode == 2 and "invalid choice: 'yolo'" in proc.stderr
    proc = run_cli(["run"], env=cli_env, cwd=project)
    assert proc.returncode == 2 and "--resume TRANSCRIPT" in proc.stderr
    proc = run_cli(["run", "probe", "--replay-tolerant"], env=cli_env, cwd=project)
    assert proc.returncode == 2 and "only applies with --replay" in proc.stderr


@pytest.mark.parametrize(
    ("target", "key"),
    [("prod", "prod"), ("deploy@prod", "prod"), ("deploy@prod:2222", "prod"), ("db:22", "db:22")],
)
def test_host_policy_matches_the_target_with_or_without_user_and_port(
    target: str, key: str
) -> None:
    settings = check_settings({"hosts": {key: {"policy": "read-only"}}})
    assert resolve_policy(settings, target, yes=True) == ("read-only", f"config hosts.{key}.policy")
    assert resolve_policy(settings, "other", yes=True) == ("auto", "--yes")
    # A fleet host is looked up by its name, then by its target.
    assert resolve_policy(settings, "web1", target=target) == (
        "read-only",
        f"config hosts.{key}.policy",
    )
    assert resolve_policy(settings, target, flag="auto") == (
        "auto",
        f"--policy, over config hosts.{key}.policy (read-only)",
    )
    assert resolve_policy(settings, target, flag="read-only") == ("read-only", "--policy")


def test_piped_answers_are_shown_after_their_prompts(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    llm.script("[CMD] echo one", "[DONE] ok")
    proc = run_cli(["run", "probe"], env=cli_env, cwd=project, stdin="y\n")
    assert proc.returncode == 0, proc.stderr
    assert "Run? [y/N/e/a] y\n" in proc.stderr
