"""`kosmos run` on fleets over real SSH: many ~/.ssh/config aliases on the loopback sshd and the
in-process server, an inventory with groups, approve-once, canary replay, --json, exit codes."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from pathlib import Path

import asyncssh
import pytest

from tests.fleethelpers import host_of, scripted
from tests.helpers import until
from tests.llmserver import ScriptedLLM
from tests.sshd import Sshd
from tests.sshserver import InProcessSSHServer

WEB = [f"web{i:02d}" for i in range(1, 19)]
SKILL = "---\nname: probe\ndescription: a test skill\n---\nCheck the host.\n"


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fleet_home(
    home: Path,
    sshd: Sshd,
    aliases: list[str],
    *,
    server: InProcessSSHServer | None = None,
    server_aliases: tuple[str, ...] = (),
    client_key: asyncssh.SSHKey | None = None,
    dead: tuple[str, ...] = (),
) -> None:
    """~/.ssh with aliases for the sshd, for the in-process server and for a closed port."""
    ssh = home / ".ssh"
    ssh.mkdir(mode=0o700, parents=True, exist_ok=True)
    key = ssh / "sshd_key"
    key.write_bytes(sshd.client_key.read_bytes())
    key.chmod(0o600)
    config = (
        f"Host {' '.join(aliases)}\n  HostName 127.0.0.1\n  Port {sshd.port}\n"
        f"  User {sshd.user}\n  IdentityFile ~/.ssh/sshd_key\n  IdentitiesOnly yes\n"
    )
    known = sshd.known_hosts_line()
    if server is not None and client_key is not None:
        client_key.write_private_key(str(ssh / "inproc_key"))
        (ssh / "inproc_key").chmod(0o600)
        config += (
            f"Host {' '.join(server_aliases)}\n  HostName 127.0.0.1\n  Port {server.port}\n"
            "  User tester\n  IdentityFile ~/.ssh/inproc_key\n  IdentitiesOnly yes\n"
        )
        algorithm, data = server.host_key.export_public_key("openssh").decode().split()[:2]
        known += f"[127.0.0.1]:{server.port} {algorithm} {data}\n"
    if dead:
        config += f"Host {' '.join(dead)}\n  HostName 127.0.0.1\n  Port {closed_port()}\n"
    (ssh / "config").write_text(config)
    (ssh / "known_hosts").write_text(known)


def skill_dir(tmp_path: Path) -> Path:
    d = tmp_path / "skills" / "probe"
    d.mkdir(parents=True)
    (d / "SKILL.md").write_text(SKILL)
    return tmp_path / "skills"


async def kosmos(
    args: list[str], *, env: dict[str, str], cwd: Path, stdin: str = "", timeout: float = 120
) -> tuple[int, str, str]:
    """Run the CLI while this test's event loop keeps serving the in-process SSH server."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "kosmos",
        *args,
        env=env,
        cwd=cwd,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(stdin.encode()), timeout)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def json_lines(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


async def test_fan_out_over_20_hosts_with_one_unreachable_and_one_failing(
    remote: Sshd,
    ssh_server: InProcessSSHServer,
    ssh_keys: tuple[asyncssh.SSHKey, asyncssh.SSHKey],
    llm: ScriptedLLM,
    home: Path,
    cli_env: dict[str, str],
    tmp_path: Path,
) -> None:
    fleet_home(
        home,
        remote,
        WEB,
        server=ssh_server,
        server_aliases=("bad",),
        client_key=ssh_keys[1],
        dead=("dead",),
    )
    kdir = ssh_server.state.home / ".kosmos-panel"
    kdir.mkdir()
    (kdir / "ai_system_promt.md").write_text("host: bad\n")
    llm.default = scripted(
        ["[CMD] echo one", "[CMD] id -un", "[CMD] true", "[DONE] ok"],
        per_host={"bad": ["no tag"] * 5},
    )
    runs = tmp_path / "runs"
    code, out, err = await kosmos(
        ["run", "probe", "--skills-dir", str(skill_dir(tmp_path)), "--hosts", "web*"]
        + ["--host", "bad", "--host", "dead", "--non-interactive", "--yes", "--json"]
        + ["--transcript", str(runs)],
        env=cli_env,
        cwd=tmp_path,
    )
    assert code == 6, err
    lines = json_lines(out)
    *events, fleet = lines
    # Every event carries its host; the last line is the fleet's result and has none.
    assert all(e["host"] in [*WEB, "bad", "dead"] for e in events)
    assert fleet["type"] == "result" and fleet["scope"] == "fleet" and fleet["host"] is None
    assert fleet["exit_code"] == 6
    assert fleet["counts"] == {"done": 18, "failed": 1, "unreachable": 1}
    results = {e["host"]: e for e in events if e["type"] == "result"}
    assert sorted(results) == sorted([*WEB, "bad", "dead"])
    assert results["dead"]["exit_code"] == 6 and "dead" in results["dead"]["message"]
    assert results["bad"]["status"] == "failed" and results["bad"]["exit_code"] == 1
    for name in WEB:
        assert results[name]["status"] == "done"
        outputs = [
            e["sent_to_llm"]
            for e in events
            if e["host"] == name and e["type"] == "command_finished" and e["command"] == "id -un"
        ]
        assert outputs == [remote.user]
    assert "unreachable (dead)" in fleet["message"]
    # One transcript per host in one run directory, and the fleet's result beside them.
    assert sorted(p.name for p in runs.iterdir()) == sorted(
        [f"{n}.jsonl" for n in [*WEB, "bad", "dead"]] + ["fleet-plan.json", "fleet.json"]
    )
    assert json.loads((runs / "fleet.json").read_text())["counts"]["done"] == 18
    assert "18 of 20 hosts done" in err


async def test_inventory_groups_over_openssh(
    remote: Sshd, llm: ScriptedLLM, home: Path, cli_env: dict[str, str], tmp_path: Path
) -> None:
    fleet_home(home, remote, ["unused"])
    (home / ".ssh" / "id_ed25519").write_bytes(remote.client_key.read_bytes())
    (home / ".ssh" / "id_ed25519").chmod(0o600)
    inventory = tmp_path / "hosts.ini"
    conn = f"ansible_host=127.0.0.1 ansible_port={remote.port} ansible_user={remote.user}"
    inventory.write_text(
        f"[web]\nw[1:3] {conn}\n[db]\nd1 {conn}\n[prod:children]\nweb\ndb\n"
        "[prod:vars]\nansible_user=nobody-here\n"
    )
    llm.default = scripted(["[CMD] id -un", "[DONE] ok"])
    code, out, err = await kosmos(
        ["run", "probe", "--skills-dir", str(skill_dir(tmp_path)), "-i", str(inventory)]
        + ["--hosts", "prod:!d1", "--non-interactive", "--yes"],
        env=cli_env,
        cwd=tmp_path,
    )
    assert code == 0, out + err
    lines = out.splitlines()
    table = [
        line.split()
        for line in lines[lines.index(next(x for x in lines if x.startswith("HOST "))) :]
    ]
    assert [row[0] for row in table[:4]] == ["HOST", "w1", "w2", "w3"]
    table = table[:4]
    assert all(row[1] == "done" and row[-1] == "0" for row in table[1:])
    assert "3 of 3 hosts done" in out


async def test_approve_once_in_line_mode_and_dangerous_commands_per_host(
    remote: Sshd, llm: ScriptedLLM, home: Path, cli_env: dict[str, str], tmp_path: Path
) -> None:
    names = WEB[:5]
    fleet_home(home, remote, names)
    llm.default = scripted(
        ["[CMD] echo first", "[CMD] echo second", "[CMD] mkfs.ext4 /dev/kosmos-none", "[DONE] ok"]
    )
    # `a` twice: each command is approved once for all five hosts. The dangerous one is
    # asked host by host: the engine refuses it where the name typed is not the host's.
    code, out, err = await kosmos(
        ["run", "probe", "--skills-dir", str(skill_dir(tmp_path)), "--hosts", "web*"] + ["--json"],
        env=cli_env,
        cwd=tmp_path,
        stdin="a\na\n" + "no\n" * 5,
    )
    # Each host's dangerous command was refused and the LLM finished without it: every host
    # ends failed (exit 1) instead of done, saying so.
    assert code == 1, err
    assert err.count("Run? [y/N/a/e]") == 2
    assert err.count("dangerous on") == 5
    events = json_lines(out)
    for name in names:
        ran = [
            e["command"] for e in events if e["host"] == name and e["type"] == "command_finished"
        ]
        assert ran == ["echo first", "echo second"]
        decisions = [
            e["decision"] for e in events if e["host"] == name and e["type"] == "command_decision"
        ]
        assert decisions == ["run", "run", "refused"]
    # Each `a` was a person's yes on the host shown, and a standing approval on the others.
    by = [e["by"] for e in events if e["type"] == "command_decision" and e["decision"] == "run"]
    assert sorted(by) == ["operator"] * 2 + ["standing"] * 8
    ends = [e for e in events if e["type"] == "result" and e.get("host") in names]
    assert sorted(e["host"] for e in ends) == names
    assert all(e["status"] == "failed" and "mkfs.ext4" in e["message"] for e in ends)


async def test_canary_replays_on_the_others_and_a_diverging_host_asks_the_llm(
    remote: Sshd,
    ssh_server: InProcessSSHServer,
    ssh_keys: tuple[asyncssh.SSHKey, asyncssh.SSHKey],
    llm: ScriptedLLM,
    home: Path,
    cli_env: dict[str, str],
    tmp_path: Path,
) -> None:
    names = WEB[:4]
    fleet_home(
        home, remote, names, server=ssh_server, server_aliases=("odd",), client_key=ssh_keys[1]
    )
    # Only odd has the marker: `test -f marker` exits 0 there and 1 on the canary.
    home_odd = ssh_server.state.home
    (home_odd / "marker").write_text("")
    (home_odd / ".kosmos-panel").mkdir()
    (home_odd / ".kosmos-panel" / "ai_system_promt.md").write_text("host: odd\n")
    llm.default = scripted(
        ["[CMD] echo hi", "[CMD] test -f marker", "[DONE] same as the canary"],
        per_host={"odd": ["-", "-", "[DONE] odd has a marker"]},
    )
    code, out, err = await kosmos(
        ["run", "probe", "--skills-dir", str(skill_dir(tmp_path)), "--hosts", "web*,odd"]
        + ["--canary", "web01", "--non-interactive", "--yes", "--json"],
        env=cli_env,
        cwd=tmp_path,
    )
    assert code == 0, err
    *events, fleet = json_lines(out)
    # The LLM was asked 3 times by the canary and once by odd, after it diverged.
    assert len(llm.requests) == 4
    assert [host_of(r) for r in llm.requests].count("odd") == 1
    hosts = {h["host"]: h for h in fleet["hosts"]}
    assert hosts["web01"]["mode"] == "canary"
    for name in names[1:]:
        assert hosts[name]["mode"] == "replay" and hosts[name]["status"] == "done"
        assert hosts[name]["message"] == "same as the canary"
    assert hosts["odd"]["mode"] == "diverged" and hosts["odd"]["diverged_at_step"] == 2
    assert hosts["odd"]["message"] == "odd has a marker"
    warnings = [e["message"] for e in events if e["host"] == "odd" and e["type"] == "warning"]
    assert any("exit 0 here and exit 1 on the canary web01" in w for w in warnings)


async def test_forks_bound_connections_seen_by_the_server(
    ssh_server: InProcessSSHServer,
    ssh_keys: tuple[asyncssh.SSHKey, asyncssh.SSHKey],
    remote: Sshd,
    llm: ScriptedLLM,
    home: Path,
    cli_env: dict[str, str],
    tmp_path: Path,
) -> None:
    aliases = tuple(f"n{i:02d}" for i in range(12))
    fleet_home(
        home, remote, ["unused"], server=ssh_server, server_aliases=aliases, client_key=ssh_keys[1]
    )
    llm.default = scripted(["[CMD] sleep 0.2", "[DONE] ok"])
    peak = 0
    done = asyncio.Event()

    async def watch() -> None:
        nonlocal peak
        while not done.is_set():
            live = sum(1 for c in ssh_server.state.connections if not c.is_closed())
            peak = max(peak, live)
            await asyncio.sleep(0.005)

    watcher = asyncio.ensure_future(watch())
    try:
        code, _, err = await kosmos(
            ["run", "probe", "--skills-dir", str(skill_dir(tmp_path)), "--hosts", "n*"]
            + ["--forks", "3", "--non-interactive", "--yes"],
            env=cli_env,
            cwd=tmp_path,
        )
    finally:
        done.set()
        await watcher
    assert code == 0, err
    assert len(ssh_server.state.connections) == 12
    assert peak == 3


async def test_forks_bound_commands_seen_by_openssh(
    remote: Sshd, llm: ScriptedLLM, home: Path, cli_env: dict[str, str], tmp_path: Path
) -> None:
    names = WEB[:10]
    fleet_home(home, remote, names)
    # Each command counts, on the server, the commands running there at that moment.
    count = "mkdir -p ~/active && touch ~/active/$$ && ls ~/active | wc -l >> ~/peaks"
    llm.default = scripted([f"[CMD] {count} && sleep 0.3; rm -f ~/active/$$", "[DONE] ok"])
    code, _, err = await kosmos(
        ["run", "probe", "--skills-dir", str(skill_dir(tmp_path)), "--hosts", "web*"]
        + ["--forks", "4", "--non-interactive", "--yes"],
        env=cli_env,
        cwd=tmp_path,
    )
    assert code == 0, err
    seen = [int(n) for n in (remote.remote_home / "peaks").read_text().split()]
    assert len(seen) == 10
    assert max(seen) <= 4 and max(seen) >= 2


@pytest.mark.parametrize(
    ("replies", "expected"),
    [
        (["[DONE] ok"], 0),
        (["[ASK] Which port?"], 4),
        (["[CMD] echo a", "[CMD] echo b", "[CMD] echo c"], 3),
    ],
)
async def test_exit_codes(
    remote: Sshd,
    llm: ScriptedLLM,
    home: Path,
    cli_env: dict[str, str],
    tmp_path: Path,
    replies: list[str],
    expected: int,
) -> None:
    fleet_home(home, remote, WEB[:3])
    llm.default = scripted(replies)
    code, out, err = await kosmos(
        ["run", "probe", "--skills-dir", str(skill_dir(tmp_path)), "--hosts", "web*"]
        + ["--non-interactive", "--yes", "--max-steps", "2", "--json"],
        env=cli_env,
        cwd=tmp_path,
    )
    assert code == expected, err
    assert json_lines(out)[-1]["exit_code"] == expected


async def test_sigint_ends_every_remote_command(
    remote: Sshd, llm: ScriptedLLM, home: Path, cli_env: dict[str, str], tmp_path: Path
) -> None:
    import signal

    names = WEB[:4]
    fleet_home(home, remote, names)
    llm.default = scripted(["[CMD] touch started.$$; sleep 30 & sleep 30", "[DONE] too late"])
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "kosmos",
        "run",
        "probe",
        "--skills-dir",
        str(skill_dir(tmp_path)),
        "--hosts",
        "web*",
        "--non-interactive",
        "--yes",
        env=cli_env,
        cwd=tmp_path,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    # Interrupt once every host's command runs on the server (seen there, not in kosmos):
    # its file made and both its sleeps started.
    await until(
        lambda: (
            len(list(remote.remote_home.glob("started.*"))) == 4
            and sum(line.split(None, 2)[2:] == ["sleep 30"] for line in remote.user_processes())
            == 8
        ),
        what="every host's command to run on the server",
        timeout=30,
    )
    proc.send_signal(signal.SIGINT)
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    left = remote.user_processes()
    # Whatever the outcome, leave no process of the test user behind for the next tests.
    subprocess.run(["pkill", "-KILL", "-u", remote.user], check=False)
    assert proc.returncode == 130, err.decode()
    assert "4 aborted" in out.decode()
    assert left == []
