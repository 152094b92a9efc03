"""Each host's report is its own under --canary: made from its own outputs, shared only by hosts
whose conversations are identical, and grouped in the fleet's report."""

from __future__ import annotations

import json
from pathlib import Path

from kosmos.events import LLMReply
from tests.conftest import run_cli
from tests.fleethelpers import Hosts, run_fleet
from tests.llmserver import Recorded, ScriptedLLM, Status
from tests.sshd import Sshd


def reporter(command: str) -> object:
    """A scripted LLM: one command, then a [DONE] that repeats the command's output."""

    def reply(record: Recorded) -> str:
        if not [m for m in record.messages if m["role"] == "assistant"]:
            return f"[CMD] {command}"
        said = record.last_user_text.split("\n\n[Step")[0].removeprefix("Command output:\n")
        return "[DONE] this host says " + " ".join(said.split())

    return reply


async def test_hosts_with_the_canarys_outputs_take_its_report_and_the_others_share_one(
    llm: ScriptedLLM, tmp_path: Path
) -> None:
    roles = {"canary": "x", "a1": "x", "a2": "x", "b1": "y", "b2": "y"}
    for name, role in roles.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "role").write_text(role + "\n")
    llm.default = reporter("cat role")
    run = await run_fleet(llm.base_url, list(roles), open_runner=Hosts(tmp_path), canary="canary")
    assert run.result.exit_code == 0, run.result
    for name, role in roles.items():
        assert run.host(name).message == f"this host says {role}"
    # The canary's two requests, and one more for both hosts whose outputs were `y`.
    assert len(llm.requests) == 3
    assert llm.requests[-1].last_user_text.startswith("Command output:\ny")
    made = {name: run.host(name).report_from for name in roles}
    assert made["canary"] == "own"
    assert (made["a1"], made["a2"]) == ("canary", "canary")
    assert {made["b1"], made["b2"]} in ({"own", "b1"}, {"own", "b2"})
    # Each host's LLM reply event is the report it was given; all are its own outputs' words.
    for name in ("a1", "b1"):
        (reply,) = run.of(name, LLMReply)[-1:]
        assert reply.content.endswith(roles[name])
    groups = run.result.report.groups
    assert [(g.report, g.hosts) for g in groups] == [
        ("this host says x", ["canary", "a1", "a2"]),
        ("this host says y", ["b1", "b2"]),
    ]
    assert run.result.report.text.splitlines() == [
        "3 hosts (canary, a1, a2): done: this host says x",
        "2 hosts (b1, b2): done: this host says y",
    ]


def _fleet_home(home: Path, servers: dict[str, Sshd]) -> None:
    """~/.ssh with an alias per name, each with its server's key and host key."""
    ssh = home / ".ssh"
    ssh.mkdir(mode=0o700, parents=True, exist_ok=True)
    config, known = [], []
    for alias, server in servers.items():
        key = ssh / f"id_{server.user}"
        key.write_bytes(server.client_key.read_bytes())
        key.chmod(0o600)
        config.append(
            f"Host {alias}\n  HostName 127.0.0.1\n  Port {server.port}\n  User {server.user}\n"
            f"  IdentityFile {key}\n  IdentitiesOnly yes\n"
        )
        known.append(server.known_hosts_line())
    (ssh / "config").write_text("".join(config))
    (ssh / "known_hosts").write_text("".join(dict.fromkeys(known)))


def test_three_hosts_that_differ_each_report_their_own_user_and_role(
    llm: ScriptedLLM,
    cli_env: dict[str, str],
    home: Path,
    tmp_path: Path,
    sshd: Sshd,
    bare_sshd: Sshd,
) -> None:
    # local runs as root with this HOME; web2 (and web3, the same server) and db1 as their
    # servers' own users, each with its own ~/ROLE.
    _fleet_home(home, {"web2": sshd, "web3": sshd, "db1": bare_sshd})
    (home / "ROLE").write_text("staging\n")
    sshd.write_remote("ROLE", "production\n")
    bare_sshd.write_remote("ROLE", "dev\n")
    skills = tmp_path / "skills" / "whoami"
    skills.mkdir(parents=True)
    skills.joinpath("SKILL.md").write_text(
        "---\nname: whoami\ndescription: who runs here\n---\nReport the user and role.\n"
    )
    llm.default = reporter("id -un; cat ~/ROLE")
    runs = tmp_path / "runs"
    try:
        r = run_cli(
            ["run", "whoami", "--skills-dir", str(tmp_path / "skills")]
            + ["--host", "web2", "--host", "local", "--host", "db1", "--host", "web3"]
            + ["--canary", "web2", "--non-interactive", "--yes", "--transcript", str(runs)],
            env=cli_env,
            cwd=tmp_path,
        )
    finally:
        sshd.clean_remote()
        bare_sshd.clean_remote()
    assert r.returncode == 0, r.stderr
    said = {
        "web2": f"this host says {sshd.user} production",
        "web3": f"this host says {sshd.user} production",
        "local": "this host says root staging",
        "db1": f"this host says {bare_sshd.user} dev",
    }
    # The canary's two requests and one each for local and db1; web3's outputs were web2's.
    assert len(llm.requests) == 4
    # The terminal: each host's end, and the fleet report grouping them.
    for host, report in said.items():
        assert f"{host}  ■ done: {report}" in r.stdout
    report = r.stdout[r.stdout.index("fleet report:") :].splitlines()
    assert report[1:5] == [
        f"  2 hosts (web2, web3): done: {said['web2']}",
        "    made from web2's identical outputs: web3",
        f"  1 host (local): done: {said['local']}",
        f"  1 host (db1): done: {said['db1']}",
    ]
    assert f"transcripts: {runs}" in r.stderr
    # fleet.json: each host's report, what it was made from, and the fleet report.
    fleet = json.loads((runs / "fleet.json").read_text())
    hosts = {h["host"]: h for h in fleet["hosts"]}
    assert {name: h["message"] for name, h in hosts.items()} == said
    assert {name: h["report_from"] for name, h in hosts.items()} == {
        "web2": "own",
        "web3": "web2",
        "local": "own",
        "db1": "own",
    }
    assert [g["hosts"] for g in fleet["report"]["groups"]] == [["web2", "web3"], ["local"], ["db1"]]
    # web3's transcript says whose report it carries.
    last = json.loads((runs / "web3.jsonl").read_text().splitlines()[-1])
    assert (last["type"], last["report_from"]) == ("result", "web2")


async def test_a_report_request_that_fails_is_made_again_by_the_next_host_that_needs_it(
    llm: ScriptedLLM, tmp_path: Path
) -> None:
    roles = {"canary": "x", "b1": "y", "b2": "y"}
    for name, role in roles.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "role").write_text(role + "\n")
    answer = reporter("cat role")

    def reply(record: Recorded) -> object:
        # The first request for `y`'s report fails; the canary's two go through.
        return Status(500) if len(llm.requests) == 3 else answer(record)

    llm.default = reply
    run = await run_fleet(llm.base_url, list(roles), open_runner=Hosts(tmp_path), canary="canary")
    ends = sorted((run.host(n).status, run.host(n).message, run.host(n).report_from) for n in roles)
    # The host whose request failed ended with the error; the one waiting on it asked again.
    assert [(status, report) for status, _, report in ends] == [
        ("done", "own"),
        ("done", "own"),
        ("error", "own"),
    ]
    assert [message for status, message, _ in ends if status == "done"] == [
        "this host says x",
        "this host says y",
    ]
    assert len(llm.requests) == 4
