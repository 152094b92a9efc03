"""`kosmos fleet merge` is whole or refused: every shard 1..N of one split exactly once, and
each fleet.json as its transcripts say."""

from __future__ import annotations

import json
from pathlib import Path

from kosmos.seal import Sealer
from tests.conftest import run_cli
from tests.llmserver import ScriptedLLM
from tests.test_bad_input import _inventory, _one_line, _skills


def _shards(llm: ScriptedLLM, cli_env: dict, tmp_path: Path, total: int) -> list[Path]:
    names = [f"h{i}" for i in range(8)]
    inventory = _inventory(tmp_path, names)
    skills = _skills(tmp_path)
    llm.default = "[DONE] checked"
    dirs = []
    for k in range(1, total + 1):
        run = tmp_path / f"shard{k}"
        proc = run_cli(
            ["run", "probe", "--skills-dir", str(skills), "-i", str(inventory), "--hosts", "all",
             "--shard", f"{k}/{total}", "--non-interactive", "--yes", "--transcript", str(run)],
            env=cli_env,
            cwd=tmp_path,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        dirs.append(run)
    return dirs


def test_merge_takes_every_shard_exactly_once(
    llm: ScriptedLLM, cli_env: dict, tmp_path: Path
) -> None:
    one, two, three = _shards(llm, cli_env, tmp_path, 3)
    whole = run_cli(["fleet", "merge", str(one), str(two), str(three)], env=cli_env, cwd=tmp_path)
    assert whole.returncode == 0, whole.stderr
    assert "8 of 8 hosts done · 3 runs merged" in whole.stdout

    def merge(*dirs: Path) -> str:
        proc = run_cli(["fleet", "merge", *map(str, dirs)], env=cli_env, cwd=tmp_path)
        return _one_line(proc)

    assert merge(one, three) == (
        "kosmos: shard 2/3 is missing: a merge takes all 3 shards; did its job upload its run "
        "directory?"
    )
    assert merge(one) == (
        "kosmos: shard 2/3, 3/3 is missing: a merge takes all 3 shards; did its job upload its "
        "run directory?"
    )
    copy = tmp_path / "copy-of-1"
    copy.mkdir()
    for f in one.iterdir():
        (copy / f.name).write_bytes(f.read_bytes())
    assert merge(one, two, copy) == (
        f"kosmos: shard 1/3 is given twice ({one} and {copy}); give each shard's run directory once"
    )


def test_merge_checks_fleet_json_against_its_transcripts(
    llm: ScriptedLLM, cli_env: dict, tmp_path: Path
) -> None:
    one, two = _shards(llm, cli_env, tmp_path, 2)
    fleet = json.loads((two / "fleet.json").read_text())
    host = fleet["hosts"][0]
    transcript = two / Path(host["transcript"]).name

    def merge() -> str:
        proc = run_cli(["fleet", "merge", str(one), str(two)], env=cli_env, cwd=tmp_path)
        return _one_line(proc)

    # The transcript made to say the host failed: its seal no longer verifies there.
    kept = transcript.read_text()
    lines = kept.splitlines(keepends=True)
    assert json.loads(lines[-1])["type"] == "result"
    lines[-1] = lines[-1].replace('"status": "done"', '"status": "failed"')
    transcript.write_text("".join(lines))
    assert merge() == (
        f"kosmos: {transcript} line {len(lines)} does not verify: the file was edited after it "
        "was written"
    )
    # Sealed anew by whoever edited it: fleet.json's seal names another end of its chain.
    sealer = Sealer(None)
    resealed = [
        sealer.seal(line.rstrip("\n").rsplit(',"seal":"', 1)[0].encode() + b"}") + b"\n"
        for line in lines
    ]
    transcript.write_bytes(b"".join(resealed))
    assert merge() == (
        f"kosmos: {transcript}: its seal ends otherwise than fleet.json's seal says: the run "
        "directory was changed after the run"
    )
    transcript.unlink()
    assert merge() == (
        f"kosmos: {two}: fleet.json names {transcript.name} for host {host['host']}, and it is "
        "not there; give the whole run directory"
    )
