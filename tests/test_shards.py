"""A fleet split across parallel jobs: --shard K/N, --canary-from, `kosmos fleet merge`."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from kosmos.errors import UsageError
from kosmos.fleet.shard import Shard, parse_shard
from kosmos.seal import seal_document
from kosmos.transcript import read_transcript
from tests.conftest import run_cli
from tests.llmserver import ScriptedLLM
from tests.sshd import Sshd
from tests.test_fleet_ssh import fleet_home, kosmos, skill_dir

NAMES = [f"h{i:03d}" for i in range(120)]


def share(names: list[str], total: int) -> list[list[str]]:
    return [[n for n in names if Shard(k, total).takes(n)] for k in range(1, total + 1)]


# -- the split ----------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["0/4", "5/4", "2", "a/b", "1/0", "-1/3"])
def test_a_shard_out_of_range_is_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError, match="--shard"):
        parse_shard(text)


def test_every_host_is_in_exactly_one_shard_and_stays_there_when_others_join() -> None:
    for total in (1, 2, 3, 4, 8):
        before = share(NAMES, total)
        assert sorted(n for part in before for n in part) == sorted(NAMES)
        grown = NAMES + [f"h{i:03d}" for i in range(120, 400)] + ["db-eu", "cache.example"]
        after = share(grown, total)
        for k in range(total):
            assert set(before[k]) <= set(after[k])


@pytest.mark.parametrize(
    "family",
    [
        lambda i: f"h{i:03d}",
        lambda i: f"web-{i}",
        lambda i: f"10.0.{i // 250}.{i % 250}",
        lambda i: f"node{i}.prod.example.com",
        lambda i: f"ip-10-0-{i // 250}-{i % 250}.ec2.internal",
        lambda i: f"{('web', 'db', 'cache')[i % 3]}-{i // 6:02d}.dc{1 + i // 3 % 2}.example.com",
    ],
)
@pytest.mark.parametrize("count", [100, 120, 1000])
@pytest.mark.parametrize("total", [2, 3, 4, 8])
def test_numbered_fleets_are_balanced_within_a_quarter(family, count: int, total: int) -> None:
    sizes = [len(part) for part in share([family(i) for i in range(count)], total)]
    assert max(abs(s - count / total) for s in sizes) <= 0.25 * count / total, sizes


def test_the_cli_refuses_a_shard_out_of_range(cli_env: dict, tmp_path: Path) -> None:
    proc = run_cli(
        ["run", "probe", "--skills-dir", str(skill_dir(tmp_path)), "--hosts", "h*", "--shard",
         "5/4", "--non-interactive", "--yes"],
        env=cli_env,
        cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "--shard 5/4: K must be from 1 to N" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


# -- end to end over the fixture sshd ------------------------------------------------------


async def test_a_canary_then_four_shards_in_parallel_then_merge(
    remote: Sshd, llm: ScriptedLLM, home: Path, cli_env: dict, tmp_path: Path
) -> None:
    fleet_home(home, remote, NAMES)
    skills = skill_dir(tmp_path)
    llm.script("[CMD] hostname; id -un", "[DONE] checked")
    canary = tmp_path / "canary.jsonl"
    code, out, err = await kosmos(
        ["run", "probe", "--skills-dir", str(skills), "--host", "h000", "--non-interactive",
         "--yes", "--transcript", str(canary)],
        env=cli_env,
        cwd=tmp_path,
    )  # fmt: skip
    assert code == 0, err
    asked = len(llm.requests)

    dirs = [tmp_path / f"shard{k}" for k in range(1, 5)]
    runs = [
        kosmos(
            [
                "run",
                "probe",
                "--skills-dir",
                str(skills),
                "--hosts",
                "h*",
                "--shard",
                f"{k}/4",
                "--canary-from",
                str(canary),
                "--forks",
                "30",
                "--non-interactive",
                "--yes",
                "--transcript",
                str(d),
            ],
            env=cli_env,
            cwd=tmp_path,
            timeout=300,
        )  # fmt: skip
        for k, d in zip(range(1, 5), dirs, strict=True)
    ]
    finished = await asyncio.gather(*runs)
    for code, _, err in finished:
        assert code == 0, err
    assert len(llm.requests) == asked  # no shard asked the LLM anything

    for k, d in enumerate(dirs, 1):
        result = json.loads((d / "fleet.json").read_text())
        assert result["shard"] == f"{k}/4" and result["skill"] == "probe"
        assert {h["mode"] for h in result["hosts"]} == {"replay"}

    proc = run_cli(["fleet", "merge", *map(str, dirs), "--json"], env=cli_env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    merged = json.loads(proc.stdout)
    assert merged["type"] == "result" and merged["scope"] == "fleet"
    assert sorted(h["host"] for h in merged["hosts"]) == NAMES
    assert merged["counts"] == {"done": 120}
    assert merged["message"] == "120 of 120 hosts done"
    table = run_cli(["fleet", "merge", *map(str, dirs)], env=cli_env, cwd=tmp_path)
    assert table.returncode == 0
    assert "120 of 120 hosts done · 4 runs merged" in table.stdout
    rows = [line.split() for line in table.stdout.splitlines() if line.startswith("h")]
    assert sorted(r[0] for r in rows) == NAMES and {r[1] for r in rows} == {"done"}


# -- what is refused ------------------------------------------------------------------------


def _fleet_dir(
    root: Path, name: str, skill: str, hosts: list[str], code: int = 0, shard: str | None = None
) -> Path:
    d = root / name
    d.mkdir()
    host_rows = [
        {"host": h, "target": h, "status": "done" if code == 0 else "failed", "steps": 2,
         "duration_s": 0.1, "last_exit_code": code, "exit_code": code, "commands_run": 1,
         "message": "", "mode": "llm"}
        for h in hosts
    ]  # fmt: skip
    result = {
        "type": "result",
        "scope": "fleet",
        "status": "done",
        "exit_code": code,
        "message": "",
        "duration_s": 1.0,
        "counts": {},
        "hosts": host_rows,
        "skill": skill,
        "shard": shard,
    }
    # Sealed as a shard's run seals it (its hosts name no transcript).
    (d / "fleet.json").write_text(json.dumps(seal_document(result, {}, None)))
    return d


def test_merge_refuses_a_host_twice_and_mixed_skills(cli_env: dict, tmp_path: Path) -> None:
    a = _fleet_dir(tmp_path, "a", "probe", ["web1", "web2"], shard="1/2")
    b = _fleet_dir(tmp_path, "b", "probe", ["web2", "web3"], shard="2/2")
    c = _fleet_dir(tmp_path, "c", "other", ["web9"], shard="2/2")
    twice = run_cli(["fleet", "merge", str(a), str(b)], env=cli_env, cwd=tmp_path)
    assert twice.returncode == 2
    assert f"host web2 is in both {a} and {b}" in twice.stderr
    mixed = run_cli(["fleet", "merge", str(a), str(c)], env=cli_env, cwd=tmp_path)
    assert mixed.returncode == 2 and "different skills" in mixed.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    missing = run_cli(["fleet", "merge", str(a), str(empty)], env=cli_env, cwd=tmp_path)
    assert missing.returncode == 2 and f"{empty}: no fleet.json" in missing.stderr
    for proc in (twice, mixed, missing):
        assert len(proc.stderr.strip().splitlines()) == 1


def test_merge_takes_the_exit_code_of_the_worst_host(cli_env: dict, tmp_path: Path) -> None:
    ok = _fleet_dir(tmp_path, "ok", "probe", ["web1"], shard="1/2")
    bad = _fleet_dir(tmp_path, "bad", "probe", ["web2"], code=1, shard="2/2")
    proc = run_cli(["fleet", "merge", str(ok), str(bad), "--json"], env=cli_env, cwd=tmp_path)
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["counts"] == {"done": 1, "failed": 1}


async def test_canary_from_refuses_another_skill_and_an_unfinished_run(
    llm: ScriptedLLM, cli_env: dict, tmp_path: Path
) -> None:
    skills = skill_dir(tmp_path)
    other = skills / "other"
    other.mkdir()
    (other / "SKILL.md").write_text("---\nname: other\ndescription: x\n---\nDo it.\n")
    llm.script("[CMD] true", "[DONE] ok", "[CMD] false", "[ASK] which?")
    done, failed = tmp_path / "done.jsonl", tmp_path / "failed.jsonl"
    first = run_cli(
        ["run", "other", "--skills-dir", str(skills), "--non-interactive", "--yes",
         "--transcript", str(done)],
        env=cli_env,
        cwd=tmp_path,
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    second = run_cli(
        ["run", "probe", "--skills-dir", str(skills), "--non-interactive", "--yes",
         "--transcript", str(failed)],
        env=cli_env,
        cwd=tmp_path,
    )  # fmt: skip
    assert second.returncode == 4  # the [ASK] needs input headless
    assert read_transcript(failed)[-1].status == "needs_input"
    for transcript, why in ((done, "a run of 'other', not 'probe'"), (failed, "ended needs_input")):
        proc = run_cli(
            ["run", "probe", "--skills-dir", str(skills), "--host", "local", "--canary-from",
             str(transcript), "--non-interactive", "--yes"],
            env=cli_env,
            cwd=tmp_path,
        )  # fmt: skip
        assert proc.returncode == 2, proc.stderr
        assert why in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
