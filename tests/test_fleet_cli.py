"""`kosmos run` fleet flags as a user types them: bad input gets one line and exit 2."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from kosmos.transcript import read_transcript
from tests.conftest import run_cli
from tests.fleethelpers import scripted
from tests.helpers import need, wait_until
from tests.llmserver import ScriptedLLM

SKILL = "---\nname: probe\ndescription: a test skill\n---\nCheck the host.\n"


def skills(tmp_path: Path) -> list[str]:
    d = tmp_path / "skills" / "probe"
    d.mkdir(parents=True, exist_ok=True)
    (d / "SKILL.md").write_text(SKILL)
    return ["--skills-dir", str(tmp_path / "skills")]


def local_inventory(tmp_path: Path) -> Path:
    """Hosts that all run on this machine (TARGET `local`) under their inventory names."""
    path = tmp_path / "hosts.yml"
    path.write_text(
        "all:\n  children:\n    web:\n      hosts:\n        web[1:3]:\n          ansible_host: local\n"
        "    db:\n      hosts:\n        db1:\n          ansible_host: local\n"
    )
    return path


def test_bad_fleet_input_is_one_line_and_exit_2(
    cli_env: dict[str, str], home: Path, tmp_path: Path
) -> None:
    (home / ".ssh").mkdir()
    (home / ".ssh" / "config").write_text("Host web1 web2\n  HostName 127.0.0.1\n")
    inv = local_inventory(tmp_path)
    bad = tmp_path / "bad.ini"
    bad.write_text("[web\nweb1\n")
    afile = tmp_path / "afile"
    afile.write_text("")
    cases = [
        (["--hosts", "db*"], "--hosts 'db*' matches no alias in"),
        (
            ["--host", "a", "--host", "b", "--canary", "c"],
            "--canary c: not one of this run's hosts",
        ),
        (["-i", str(bad)], "bad.ini:1: section header without a closing ']'"),
        (["-i", str(inv), "--hosts", "cache"], "matches no host in"),
        (["-i", str(tmp_path / "none.ini")], "cannot read the inventory"),
        (["-i", str(inv), "--transcript", str(afile)], "give a directory"),
        (["--hosts", "web*", "--forks", "0"], "--forks: must be at least 1"),
    ]
    for flags, message in cases:
        r = run_cli(["run", "probe", *skills(tmp_path), *flags], env=cli_env, cwd=tmp_path)
        assert r.returncode == 2, (flags, r.stderr)
        assert message in r.stderr, (flags, r.stderr)
        assert "Traceback" not in r.stderr


def test_a_usage_error_in_json_mode_still_ends_with_a_result_line(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    r = run_cli(
        ["run", "probe", *skills(tmp_path), "--hosts", "x*", "--json", "--non-interactive"],
        env=cli_env,
        cwd=tmp_path,
    )
    assert r.returncode == 2
    assert json.loads(r.stdout.splitlines()[-1])["exit_code"] == 2


def test_local_inventory_in_a_log_shows_each_host_and_the_summary(
    llm: ScriptedLLM, cli_env: dict[str, str], tmp_path: Path
) -> None:
    llm.default = scripted(["[CMD] echo hi", "[MESSAGE] halfway", "[DONE] fine"])
    r = run_cli(
        ["run", "probe", *skills(tmp_path), "-i", str(local_inventory(tmp_path))]
        + ["--hosts", "web", "--non-interactive", "--yes", "--transcript", str(tmp_path / "r")],
        env=cli_env,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    for host in ("web1", "web2", "web3"):
        assert f"{host}  [1] $ echo hi" in r.stdout
        assert f"{host}  [2] MESSAGE halfway" in r.stdout
        assert f"{host}  ■ done: fine" in r.stdout
    assert "db1" not in r.stdout
    summary = r.stdout[r.stdout.index("HOST  STATUS") :].splitlines()
    assert summary[0].split() == ["HOST", "STATUS", "STEPS", "DURATION", "LAST", "EXIT"]
    assert [line.split()[:3] for line in summary[1:4]] == [
        ["web1", "done", "3"],
        ["web2", "done", "3"],
        ["web3", "done", "3"],
    ]
    assert summary[4:6] == ["fleet report:", "  3 hosts (web1, web2, web3): done: fine"]
    # --yes is the auto policy: its unasked commands ran outside the kernel lock.
    assert summary[6:8] == [
        "without the kernel lock:",
        "  web1, web2, web3: policy auto: commands that ran unasked ran outside the lock",
    ]
    assert "3 of 3 hosts done" in summary[8]
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == [
        "fleet-plan.json",
        "fleet.json",
        "web1.jsonl",
        "web2.jsonl",
        "web3.jsonl",
    ]


def converse(
    args: list[str],
    *,
    env: dict[str, str],
    cwd: Path,
    replies: list[tuple[str, str]],
    ready: dict[str, Callable[[], object]] | None = None,
) -> tuple[int, str, str]:
    """Run kosmos and answer its prompts as a person would, at a terminal: on seeing each
    prompt in `replies` (in order), type the reply; where `ready` names the prompt, once
    its condition holds (the other hosts have caught up while the person read)."""
    import subprocess
    import sys
    import time

    from tests.conftest import pseudo_terminal

    with (
        pseudo_terminal() as (keyboard, tty),
        subprocess.Popen(
            [sys.executable, "-m", "kosmos", *args],
            env=env,
            cwd=cwd,
            stdin=tty,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        ) as proc,
    ):
        assert proc.stderr is not None and proc.stdout is not None
        os.set_blocking(proc.stderr.fileno(), False)
        err = b""
        pending = list(replies)
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            err += proc.stderr.read() or b""
            if pending and pending[0][0] in err.decode(errors="replace"):
                prompt, reply = pending.pop(0)
                err = err.replace(prompt.encode(), b"<" + prompt.encode() + b">", 1)
                if prompt in (ready or {}):
                    wait_until((ready or {})[prompt], what=f"the fleet ready for {reply!r}")
                os.write(keyboard, reply.encode() + b"\n")
            time.sleep(0.02)
        if proc.poll() is None:
            proc.kill()
        out = proc.stdout.read().decode()
        proc.wait(timeout=30)
        err += proc.stderr.read() or b""
    return proc.returncode, out, err.decode(errors="replace")


def _asked(home: Path, question: str) -> list[Path]:
    """The fleet run's host transcripts that hold `question` as the LLM's question."""
    runs = home / ".local" / "state" / "kosmos" / "runs"
    return [
        f
        for f in runs.glob("*-fleet-*/*.jsonl")
        if any('"kind": "ask"' in line and question in line for line in f.read_text().splitlines())
    ]


def test_line_mode_asks_once_for_all_hosts_and_names_them(
    llm: ScriptedLLM, cli_env: dict[str, str], home: Path, tmp_path: Path
) -> None:
    llm.default = scripted(["[CMD] echo hi", "[ASK] Which port?", "[DONE] fine"])
    code, _, err = converse(
        ["run", "probe", *skills(tmp_path), "-i", str(local_inventory(tmp_path))],
        env=cli_env,
        cwd=tmp_path,
        replies=[
            ("Run? [y/N/a/e]", "a"),
            ("Which port?", "8080"),
            ("The same answer for 3 more host(s) asking this? [Y/n]", ""),
        ],
        # Answered once every host has asked it: then the answer is offered to all of them.
        ready={"Which port?": lambda: len(_asked(home, "Which port?")) == 4},
    )
    assert code == 0, err
    assert err.count("Run? [y/N/a/e]") == 1
    assert err.count("Which port?") == 1
    # The risk is said once, in words: not `(read_only: read-only: ...)`.
    assert "$ echo hi  (read-only" in err
    assert "read_only" not in err and "read-only: read-only" not in err
    run_dir = next((home / ".local" / "state" / "kosmos" / "runs").glob("*-fleet-*"))
    answers = [
        e["answer"]
        for f in run_dir.glob("*.jsonl")
        for e in map(json.loads, f.read_text().splitlines())
        if e["type"] == "answer"
    ]
    assert answers == ["8080"] * 4


def test_sigint_ends_every_host_and_still_prints_the_summary(
    llm: ScriptedLLM, cli_env: dict[str, str], tmp_path: Path
) -> None:
    import signal
    import subprocess
    import sys
    import time

    marker = f"{29 + (os.getpid() % 1000) / 1000:.3f}"  # a sleep only this test starts
    llm.default = scripted([f"[CMD] echo started; sleep {marker}", "[DONE] too late"])
    run_dir = tmp_path / "r"
    proc = subprocess.Popen(
        [sys.executable, "-m", "kosmos", "run", "probe", *skills(tmp_path)]
        + ["-i", str(local_inventory(tmp_path)), "--non-interactive", "--yes"]
        + ["--transcript", str(run_dir)],
        env=cli_env,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    started = set()
    deadline = time.monotonic() + 30
    while len(started) < 4 and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if "$ echo started" in line:
            started.add(line.split()[0])
    # Right after the last host announced its command: some may still be starting it.
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert started == {"web1", "web2", "web3", "db1"}
    fleet = json.loads((run_dir / "fleet.json").read_text())
    assert fleet["exit_code"] == 130 and fleet["counts"] == {"aborted": 4}
    assert "0 of 4 hosts done; 4 aborted" in out
    for host in started:
        last = json.loads((run_dir / f"{host}.jsonl").read_text().splitlines()[-1])
        assert last["type"] == "result" and last["status"] == "aborted"
    # kosmos ended every host's command before it exited: none of them outlives it.
    need("pgrep", "procps")
    left = subprocess.run(["pgrep", "-f", f"sleep {marker}"], capture_output=True, text=True)
    assert left.stdout == ""


def test_a_host_pinned_read_only_in_config_stays_pinned_in_a_fleet(
    llm: ScriptedLLM, cli_env: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "kosmos.yaml").write_text("hosts:\n  web2:\n    policy: read-only\n")
    llm.default = scripted(["[CMD] touch made-here", "[DONE] fine"])
    r = run_cli(
        ["run", "probe", *skills(tmp_path), "-i", str(local_inventory(tmp_path))]
        + ["--hosts", "web", "--non-interactive", "--yes", "--json"],
        env=cli_env,
        cwd=tmp_path,
    )
    lines = [json.loads(line) for line in r.stdout.splitlines()]
    decisions = {e["host"]: e["decision"] for e in lines if e["type"] == "command_decision"}
    assert decisions == {"web1": "run", "web2": "refused", "web3": "run"}
    # web2's write was refused and it finished without it: it ends needing a person's yes,
    # and so does the fleet (exit 4), in web2's result, the fleet's, its transcript and
    # fleet.json alike.
    assert r.returncode == 4, r.stderr
    ends = {e["host"]: e for e in lines if e["type"] == "result" and e.get("host")}
    assert {h: e["status"] for h, e in ends.items()} == {
        "web1": "done",
        "web2": "needs_input",
        "web3": "done",
    }
    why = ends["web2"]["message"]
    assert why.startswith("1 command the skill needed was refused and nothing ran in its place")
    assert "touch made-here" in why and why.endswith("or with --policy auto to run it unasked")
    fleet = lines[-1]
    assert (fleet["status"], fleet["exit_code"]) == ("needs_input", 4), fleet
    [web2] = [h for h in fleet["hosts"] if h["host"] == "web2"]
    assert (web2["status"], web2["exit_code"], web2["message"]) == ("needs_input", 4, why)
    run_dir = Path(web2["transcript"]).parent
    assert json.loads((run_dir / "fleet.json").read_text())["hosts"] == fleet["hosts"]
    last = read_transcript(run_dir / "web2.jsonl")[-1]
    assert (last.type, last.status, last.message) == ("result", "needs_input", why)


def test_a_skill_file_warning_is_said_once_for_the_fleet(
    llm: ScriptedLLM, cli_env: dict[str, str], tmp_path: Path
) -> None:
    d = tmp_path / "skills" / "probe"
    d.mkdir(parents=True)
    (d / "SKILL.md").write_text('---\nname: probe\ndescription: "unclosed\n---\nCheck.\n')
    llm.default = scripted(["[DONE] fine"])
    r = run_cli(
        ["run", "probe", "--skills-dir", str(tmp_path / "skills"), "-i"]
        + [str(local_inventory(tmp_path)), "--hosts", "web", "--non-interactive", "--yes"],
        env=cli_env,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    said = (r.stdout + r.stderr).count("probe/SKILL.md:3: the frontmatter is not valid YAML")
    assert said == 1
