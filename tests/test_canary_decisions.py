"""A fleet replays what its canary's operator decided, never bare commands: a skip stays
skipped, an edit runs edited, a refusal stays refused; and --canary-from refuses a recording
made with other parameters or another SKILL.md, before any host is touched."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from kosmos.engine.operator import Approval
from kosmos.engine.session import SessionOptions
from kosmos.events import CommandDecision, CommandFinished
from kosmos.fleet.targets import HostSpec
from kosmos.transcript import read_transcript
from tests.conftest import run_cli
from tests.fleethelpers import Hosts, host_dirs, host_of, run_fleet, scripted, steps_of
from tests.helpers import ScriptOperator
from tests.llmserver import ScriptedLLM

SKILL = """---
name: probe
description: probe
params:
  - name: service
    default: nginx
---
Look after {service}.
"""
CANARY_SCRIPT = (
    "[CMD] touch ran.txt",
    "[CMD] rm -f keep.txt",
    "[CMD] rm -f edit.txt",
    "[DONE] looked after it",
)


def _project(tmp_path: Path, hosts: list[str]) -> tuple[Path, Path]:
    """The skill, and an inventory of hosts that each work in a folder of their own here."""
    folder = tmp_path / "skills" / "probe"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(SKILL)
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(
        yaml.safe_dump({"all": {"hosts": {h: {"ansible_host": "local"} for h in hosts}}})
    )
    return tmp_path / "skills", inventory


def _files(where: Path) -> None:
    for name in ("keep.txt", "edit.txt"):
        (where / name).write_text("still here\n")


def _decisions(path: Path) -> list[tuple[int, str, str, str]]:
    return [
        (e.step, e.decision, e.command, e.by)
        for e in read_transcript(path)
        if isinstance(e, CommandDecision)
    ]


def test_canary_from_replays_the_operators_skip_and_edit(
    llm: ScriptedLLM, cli_env: dict, tmp_path: Path
) -> None:
    skills, inventory = _project(tmp_path, ["web1", "web2"])
    _files(tmp_path)
    llm.script(*CANARY_SCRIPT)
    canary = tmp_path / "canary.jsonl"
    # At the terminal: yes, no (skip), and an edit of `rm -f edit.txt` into `ls edit.txt`.
    recorded = run_cli(
        ["run", "probe", "--skills-dir", str(skills), "--transcript", str(canary)],
        env=cli_env,
        cwd=tmp_path,
        stdin="y\nn\ne\nls edit.txt\n",
    )
    assert recorded.returncode == 0, recorded.stderr
    assert _decisions(canary) == [
        (1, "run", "touch ran.txt", "operator"),
        (2, "skip", "rm -f keep.txt", "operator"),
        (3, "edit", "ls edit.txt", "operator"),
    ]
    asked = len(llm.requests)
    # The fleet under --yes: its policy would run every command unasked.
    fleet = tmp_path / "fleet"
    proc = run_cli(
        ["run", "probe", "--skills-dir", str(skills), "-i", str(inventory), "--hosts", "all",
         "--canary-from", str(canary), "--non-interactive", "--yes", "--transcript", str(fleet)],
        env=cli_env,
        cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert len(llm.requests) == asked  # replayed, not asked
    assert (tmp_path / "keep.txt").exists() and (tmp_path / "edit.txt").exists()
    result = json.loads((fleet / "fleet.json").read_text())
    assert {h["host"]: h["mode"] for h in result["hosts"]} == {"web1": "replay", "web2": "replay"}
    for host in ("web1", "web2"):
        path = fleet / f"{host}.jsonl"
        assert _decisions(path) == [
            (1, "run", "touch ran.txt", "policy"),
            (2, "skip", "rm -f keep.txt", "canary"),
            (3, "edit", "ls edit.txt", "canary"),
        ]
        ran = [e.command for e in read_transcript(path) if isinstance(e, CommandFinished)]
        assert ran == ["touch ran.txt", "ls edit.txt"]
        assert "differs from the canary" not in path.read_text()


def test_canary_from_keeps_a_refusal_refused(
    llm: ScriptedLLM, cli_env: dict, tmp_path: Path
) -> None:
    skills, inventory = _project(tmp_path, ["web1"])
    # A read ran in the refused write's place: the canary finished (a canary whose needed
    # command was refused, and nothing ran instead, does not end done).
    llm.script("[CMD] touch refused.txt", "[CMD] echo instead", "[DONE] done without it")
    canary = tmp_path / "canary.jsonl"
    recorded = run_cli(
        ["run", "probe", "--skills-dir", str(skills), "--non-interactive", "--policy",
         "read-only", "--transcript", str(canary)],
        env=cli_env,
        cwd=tmp_path,
    )  # fmt: skip
    assert recorded.returncode == 0, recorded.stderr
    assert [d for _, d, _, _ in _decisions(canary)] == ["refused", "run"]
    fleet = tmp_path / "fleet"
    proc = run_cli(
        ["run", "probe", "--skills-dir", str(skills), "-i", str(inventory), "--hosts", "all",
         "--canary-from", str(canary), "--non-interactive", "--yes", "--transcript", str(fleet)],
        env=cli_env,
        cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "refused.txt").exists()
    decided = read_transcript(fleet / "web1.jsonl")
    [event, _] = [e for e in decided if isinstance(e, CommandDecision)]
    [recorded_event, _] = [e for e in read_transcript(canary) if isinstance(e, CommandDecision)]
    assert (event.decision, event.by, event.reason) == ("refused", "canary", recorded_event.reason)


def test_canary_from_refuses_other_parameters_or_another_skill_text(
    llm: ScriptedLLM, cli_env: dict, tmp_path: Path
) -> None:
    skills, inventory = _project(tmp_path, ["web1"])
    llm.script("[CMD] echo nginx", "[DONE] ok")
    canary = tmp_path / "canary.jsonl"
    recorded = run_cli(
        ["run", "probe", "--skills-dir", str(skills), "--non-interactive", "--yes",
         "--transcript", str(canary)],
        env=cli_env,
        cwd=tmp_path,
    )  # fmt: skip
    assert recorded.returncode == 0, recorded.stderr
    fleet = tmp_path / "fleet"
    base = ["run", "probe", "--skills-dir", str(skills), "-i", str(inventory), "--hosts", "all",
            "--canary-from", str(canary), "--non-interactive", "--yes", "--transcript", str(fleet)]  # fmt: skip

    def refused(*more: str) -> str:
        proc = run_cli([*base, *more], env=cli_env, cwd=tmp_path)
        assert proc.returncode == 2, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in proc.stderr
        assert not fleet.exists()  # no host was touched, no run directory made
        return lines[0]

    assert refused("--param", "service=postgresql") == (
        f"kosmos: --canary-from {canary} records another run: --param service: the canary had "
        "'nginx', this run 'postgresql'; run with what the canary ran, or record a new canary"
    )
    skill_md = skills / "probe" / "SKILL.md"
    skill_md.write_text(SKILL.replace("Look after", "Restart"))
    assert f"{skill_md} is not the SKILL.md the canary ran" in refused()
    skill_md.write_text(SKILL)
    assert refused("--prompt", "be quick").endswith(
        "--prompt: the canary had none, this run 'be quick'; run with what the canary ran, or "
        "record a new canary"
    )
    proc = run_cli(base, env=cli_env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr


async def test_an_in_process_canarys_skip_carries_and_its_yes_covers_the_canary_only(
    llm: ScriptedLLM, tmp_path: Path
) -> None:
    names = ["canary", "b", "c"]
    root = host_dirs(tmp_path, names)
    for name in names:
        _files(root / name)
    llm.default = scripted(CANARY_SCRIPT[:3] + ("[DONE] fine",))

    def operator(spec: HostSpec) -> ScriptOperator:
        if spec.name != "canary":
            return ScriptOperator()  # says yes to anything it is asked
        return ScriptOperator(
            approvals=[Approval.run(), Approval.skip(), Approval.edit("ls edit.txt")]
        )

    run = await run_fleet(
        llm.base_url,
        names,
        open_runner=Hosts(root),
        canary="canary",
        make_operator=operator,
        options=SessionOptions(policy="ask"),
    )
    assert run.result.exit_code == 0, run.result
    # The others asked the LLM for their own reports only (their knowledge files differ).
    assert sorted((host_of(r), steps_of(r)) for r in llm.requests if host_of(r) != "canary") == [
        ("b", 4),
        ("c", 4),
    ]
    for name in ("b", "c"):
        assert (root / name / "keep.txt").exists() and (root / name / "edit.txt").exists()
        assert (root / name / "ran.txt").exists()
        decided = [(e.decision, e.command, e.by) for e in run.of(name, CommandDecision)]
        # The canary's skip carries; its yes and its edit were for the canary: each host's
        # own person was asked about them (here a script that says yes).
        assert decided == [
            ("run", "touch ran.txt", "operator"),
            ("skip", "rm -f keep.txt", "canary"),
            ("edit", "ls edit.txt", "operator"),
        ]
        asked = run.operators[name].proposals
        assert [p.command for p in asked] == ["touch ran.txt", "ls edit.txt"]
        # The prompt says whose yes it was: the canary's, for the canary only.
        assert {p.canary for p in asked} == {"canary"}
        assert run.host(name).mode == "replay"


async def test_a_canary_yes_for_all_hosts_runs_on_the_others_unasked(
    llm: ScriptedLLM, tmp_path: Path
) -> None:
    names = ["canary", "b"]
    root = host_dirs(tmp_path, names)
    llm.default = scripted(("[CMD] touch ran.txt", "[DONE] fine"))

    def operator(spec: HostSpec) -> ScriptOperator:
        if spec.name != "canary":
            return ScriptOperator(approvals=[Approval.skip()])  # would say no
        return ScriptOperator(approvals=[Approval("run", all_hosts=True)])

    run = await run_fleet(
        llm.base_url,
        names,
        open_runner=Hosts(root),
        canary="canary",
        make_operator=operator,
        options=SessionOptions(policy="ask"),
    )
    assert run.result.exit_code == 0, run.result
    assert (root / "b" / "ran.txt").exists()
    [canary] = run.of("canary", CommandDecision)
    assert (canary.by, canary.asked, canary.all_hosts) == ("operator", True, True)
    [other] = run.of("b", CommandDecision)
    assert (other.decision, other.by, other.asked) == ("run", "canary", False)
    assert run.operators["b"].proposals == []


async def test_a_waiting_hosts_prompt_shows_how_its_output_differs_from_the_canarys(
    llm: ScriptedLLM, tmp_path: Path
) -> None:
    names = ["staging", "prod"]
    root = host_dirs(tmp_path, names)
    (root / "staging" / "ROLE").write_text("staging\n")
    (root / "prod" / "ROLE").write_text("production\n")
    (root / "staging" / "data.txt").write_text("disposable\n")
    (root / "prod" / "data.txt").write_text("precious\n")
    llm.default = scripted(("[CMD] cat ROLE", "[CMD] rm -f data.txt", "[DONE] cleaned"))

    def operator(spec: HostSpec) -> ScriptOperator:
        # The canary's person says y to both; prod's person, shown the difference, says no.
        if spec.name == "staging":
            return ScriptOperator()
        return ScriptOperator(approvals=[Approval.run(), Approval.skip()])

    run = await run_fleet(
        llm.base_url,
        names,
        open_runner=Hosts(root),
        canary="staging",
        make_operator=operator,
        options=SessionOptions(policy="ask"),
    )
    assert not (root / "staging" / "data.txt").exists()
    assert (root / "prod" / "data.txt").read_text() == "precious\n"
    asked = run.operators["prod"].proposals
    assert [p.command for p in asked] == ["cat ROLE", "rm -f data.txt"]
    assert asked[0].differs == ""  # nothing ran on prod before it
    assert asked[1].differs.splitlines() == [
        "`cat ROLE` printed other output here than on the canary staging",
        "-staging",
        "+production",
    ]
    [*_, skipped] = run.of("prod", CommandDecision)
    assert (skipped.decision, skipped.by) == ("skip", "operator")


def test_line_mode_y_on_the_canary_runs_there_only_and_shows_the_others_difference(
    llm: ScriptedLLM, cli_env: dict, tmp_path: Path
) -> None:
    from tests.test_fleet_cli import converse

    skills, inventory = _project(tmp_path, ["web1", "web2", "web3"])
    # The hosts share this folder: the canary's write changes what the others then read.
    (tmp_path / "ROLE").write_text("staging\n")
    # The last reply is web2's and web3's own report: their outputs differ from the canary's.
    llm.script(
        "[CMD] cat ROLE",
        "[CMD] echo production > ROLE; echo x >> writes.txt",
        "[DONE] ok",
        "[DONE] ok",
    )
    code, _, err = converse(
        ["run", "probe", "--skills-dir", str(skills), "-i", str(inventory), "--hosts", "all",
         "--canary", "web1", "--policy", "read-only", "--transcript", str(tmp_path / "fleet")],
        env=cli_env,
        cwd=tmp_path,
        replies=[("(a: all hosts, 1 waiting)", "y"), ("the yes on the canary ran it on", "a")],
    )  # fmt: skip
    assert code == 0, err
    after_canary = err[: err.index("the yes on the canary")]
    assert after_canary.count("Run? [y/N/a/e]") == 1  # the canary's own question
    assert "web1 only: this asks for yours" in err  # after the prompt the test answered
    assert "`cat ROLE` printed other output here than on the canary web1:" in err
    assert "-staging" in err and "+production" in err
    # `a` ran it on the two that waited; the canary's `y` alone ran it on none of them.
    assert (tmp_path / "writes.txt").read_text() == "x\n" * 3
    for host in ("web2", "web3"):
        [*_, write] = _decisions(tmp_path / "fleet" / f"{host}.jsonl")
        assert write[3] in ("operator", "standing"), write
