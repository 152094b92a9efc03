"""What is reused is bound to who decided it: a canary transcript and a shard's fleet.json are
sealed (a chain of digests, signed with the operator's KOSMOS_SEAL_KEY where given); an edited
file is refused with one line, and a decision from a file this operator's key does not vouch
for is asked again (headless: refused)."""

from __future__ import annotations

import json
from pathlib import Path

from kosmos.events import CommandDecision
from kosmos.transcript import read_transcript
from tests.conftest import run_cli
from tests.llmserver import ScriptedLLM
from tests.test_bad_input import _inventory, _one_line, _skills
from tests.test_fleet_cli import converse

KEY = "s3cret-seal-key-for-tests"


def _shards(llm: ScriptedLLM, env: dict, tmp_path: Path) -> list[Path]:
    inventory = _inventory(tmp_path, [f"h{i}" for i in range(4)])
    skills = _skills(tmp_path)
    llm.default = "[DONE] checked"
    dirs = []
    for k in (1, 2):
        run = tmp_path / f"shard{k}"
        proc = run_cli(
            ["run", "probe", "--skills-dir", str(skills), "-i", str(inventory), "--hosts", "all",
             "--shard", f"{k}/2", "--non-interactive", "--yes", "--transcript", str(run)],
            env=env,
            cwd=tmp_path,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        dirs.append(run)
    return dirs


def test_a_tampered_fleet_json_is_refused_and_a_signed_one_merges_with_its_key(
    llm: ScriptedLLM, cli_env: dict, tmp_path: Path
) -> None:
    signed = {**cli_env, "KOSMOS_SEAL_KEY": KEY}
    one, two = _shards(llm, signed, tmp_path)
    merge = ["fleet", "merge", str(one), str(two)]
    proc = run_cli(merge, env=signed, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "4 of 4 hosts done · 2 runs merged" in proc.stdout
    # The key is in no file the runs wrote.
    for path in [*one.iterdir(), *two.iterdir()]:
        assert KEY not in path.read_text()
    other = run_cli(merge, env={**cli_env, "KOSMOS_SEAL_KEY": "another"}, cwd=tmp_path)
    assert "sealed by another key" in _one_line(other)
    # A host's status edited in fleet.json: refused, with or without the key.
    path = two / "fleet.json"
    kept = path.read_text()
    result = json.loads(kept)
    result["hosts"][0]["status"] = "failed"
    path.write_text(json.dumps(result, indent=2))
    for env in (signed, cli_env):
        line = _one_line(run_cli(merge, env=env, cwd=tmp_path))
        assert line == f"kosmos: {path} does not verify: it was edited after the run"
    # Its seal recomputed without the key (as anyone can): the key's signature still fails.
    from kosmos.seal import seal_document

    result.pop("seal")
    sealed = json.loads(kept)["seal"]["transcripts"]
    path.write_text(json.dumps(seal_document(result, sealed, None)))
    line = _one_line(run_cli(merge, env=signed, cwd=tmp_path))
    assert line == (
        f"kosmos: {path}: not signed, and a seal key is set; run the shards with KOSMOS_SEAL_KEY"
    )


CANARY = ("[CMD] touch CANARY_OK", "[DONE] done")


def _canary(llm: ScriptedLLM, env: dict, tmp_path: Path, reply: str) -> Path:
    """A canary fleet of two hosts whose person answers `reply` to the write on the canary;
    the canary's transcript is what shards are given."""
    skills, inventory = _skills(tmp_path), _inventory(tmp_path, ["c1", "c2"])
    llm.script(*CANARY)
    code, _, err = converse(
        ["run", "probe", "--skills-dir", str(skills), "-i", str(inventory), "--hosts", "all",
         "--canary", "c1", "--transcript", str(tmp_path / "canary")],
        env=env,
        cwd=tmp_path,
        replies=[("Run? [y/N/a/e]", reply)],
    )  # fmt: skip
    assert code == 0, err
    (tmp_path / "CANARY_OK").unlink()
    return tmp_path / "canary" / "c1.jsonl"


def _shard(env: dict, tmp_path: Path, canary: Path, *more: str) -> tuple[int, str]:
    proc = run_cli(
        ["run", "probe", "--skills-dir", str(tmp_path / "skills"), "-i",
         str(tmp_path / "inventory.yaml"), "--hosts", "all", "--canary-from", str(canary),
         "--transcript", str(tmp_path / "shard"), *more],
        env=env,
        cwd=tmp_path,
    )  # fmt: skip
    return proc.returncode, proc.stderr


def test_a_signed_canarys_all_hosts_yes_runs_on_a_shard_only_with_the_key(
    llm: ScriptedLLM, cli_env: dict, tmp_path: Path
) -> None:
    signed = {**cli_env, "KOSMOS_SEAL_KEY": KEY}
    canary = _canary(llm, signed, tmp_path, "a")
    [decided] = [e for e in read_transcript(canary) if isinstance(e, CommandDecision)]
    assert (decided.by, decided.all_hosts) == ("operator", True)
    # Without the key nothing vouches for the file: the write needs a yes here.
    code, err = _shard(cli_env, tmp_path, canary, "--non-interactive")
    assert code == 4, err
    assert "every write the canary's operator approved is asked here" in err
    assert not (tmp_path / "CANARY_OK").exists()
    # With the key that sealed it, the canary's "all hosts" stands.
    code, err = _shard(signed, tmp_path, canary, "--non-interactive", "--transcript",
                       str(tmp_path / "shard2"))  # fmt: skip
    assert code == 0, err
    assert (tmp_path / "CANARY_OK").exists()
    decisions = [e for e in read_transcript(tmp_path / "shard2" / "c2.jsonl")
                 if isinstance(e, CommandDecision)]  # fmt: skip
    assert [(e.by, e.asked) for e in decisions] == [("canary", False)]


def test_a_tampered_canary_transcript_is_refused_at_a_terminal_and_headless(
    llm: ScriptedLLM, cli_env: dict, tmp_path: Path
) -> None:
    signed = {**cli_env, "KOSMOS_SEAL_KEY": KEY}
    canary = _canary(llm, signed, tmp_path, "a")
    lines = canary.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if "touch CANARY_OK" in line)
    canary.write_text(canary.read_text().replace("touch CANARY_OK", "touch TAMPERED_FLEET"))
    expected = (
        f"kosmos: --canary-from {canary} line {at + 1} does not verify: the file was edited "
        "after it was written"
    )
    for env in (signed, cli_env):
        code, err = _shard(env, tmp_path, canary, "--non-interactive", "--yes")
        assert (code, err.strip()) == (2, expected)
    code, out, err = converse(
        ["run", "probe", "--skills-dir", str(tmp_path / "skills"), "-i",
         str(tmp_path / "inventory.yaml"), "--hosts", "all", "--canary-from", str(canary)],
        env=signed,
        cwd=tmp_path,
        replies=[],
    )  # fmt: skip
    assert code == 2 and expected in err, err
    assert not (tmp_path / "TAMPERED_FLEET").exists()
    assert not (tmp_path / "shard").exists()


def test_an_unsigned_canarys_write_is_asked_at_a_terminal(
    llm: ScriptedLLM, cli_env: dict, tmp_path: Path
) -> None:
    canary = _canary(llm, cli_env, tmp_path, "a")
    code, out, err = converse(
        ["run", "probe", "--skills-dir", str(tmp_path / "skills"), "-i",
         str(tmp_path / "inventory.yaml"), "--hosts", "all", "--canary-from", str(canary)],
        env=cli_env,
        cwd=tmp_path,
        replies=[("Run? [y/N/a/e]", "n"), ("Run? [y/N/a/e]", "n")],
    )  # fmt: skip
    assert "is not signed" in err
    assert "$ touch CANARY_OK" in err
    assert not (tmp_path / "CANARY_OK").exists()


def test_the_seal_key_reaches_no_command_and_no_transcript(
    llm: ScriptedLLM, cli_env: dict, tmp_path: Path
) -> None:
    skills = _skills(tmp_path)
    llm.script("[CMD] printenv KOSMOS_SEAL_KEY | rev; echo end", "[DONE] ok")
    transcript = tmp_path / "t.jsonl"
    proc = run_cli(
        ["run", "probe", "--skills-dir", str(skills), "--non-interactive", "--yes",
         "--transcript", str(transcript)],
        env={**cli_env, "KOSMOS_SEAL_KEY": KEY},
        cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    text = transcript.read_text()
    assert '"seal":"' in text  # signed, naming the key's id only
    assert KEY not in text and KEY[::-1] not in text
    sent = json.dumps([r.messages for r in llm.requests])
    assert KEY not in sent and KEY[::-1] not in sent


def test_a_shard_that_takes_no_host_is_sealed_and_merges(
    llm: ScriptedLLM, cli_env: dict, tmp_path: Path
) -> None:
    signed = {**cli_env, "KOSMOS_SEAL_KEY": KEY}
    inventory = _inventory(tmp_path, ["solo"])
    skills = _skills(tmp_path)
    llm.default = "[DONE] checked"
    dirs = [tmp_path / "s1", tmp_path / "s2"]
    for k, run in enumerate(dirs, 1):
        proc = run_cli(
            ["run", "probe", "--skills-dir", str(skills), "-i", str(inventory), "--hosts", "all",
             "--shard", f"{k}/2", "--non-interactive", "--yes", "--transcript", str(run)],
            env=signed,
            cwd=tmp_path,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
    assert any(not list(d.glob("*.jsonl")) for d in dirs)  # one of them took no host
    proc = run_cli(["fleet", "merge", *map(str, dirs)], env=signed, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "1 of 1 hosts done" in proc.stdout
