"""The kernel lock through the approval gate, a session and the CLI: which commands run inside
it, the `locked` policy, a host that requires the lock, and where the lock is named.

Whole runs drive `kosmos run` headless against the scripted LLM, locally and over Debian's
sshd, with the LLM proposing writes: the directory stays as it was and the LLM reads the error.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kosmos.engine.approval import ApprovalGate
from kosmos.engine.operator import Approval
from kosmos.engine.replay import Decisions, ReplayGate, ReplayOperator
from kosmos.engine.session import SessionOptions
from kosmos.events import CommandDecision, CommandFinished, DecidedBy, Notice, RunStarted
from kosmos.hosts.local import LocalRunner
from kosmos.hosts.lock import HostLock, LockConfig, LockStatus
from kosmos.hosts.runner import Lock
from kosmos.prompts import Prompts
from kosmos.safety import assess
from tests.conftest import run_cli
from tests.helpers import ScriptOperator, need, run_session
from tests.llmserver import ScriptedLLM
from tests.lockkit import bin_without, make_scratch, state
from tests.sshd import Sshd, SshdUnavailable, start_sshd, write_client_home

pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or os.geteuid() != 0, reason="the lock's tests run as root on Linux"
)

HELD = LockStatus(abi=7, seccomp=True, interpreter="perl", arch="x86_64")
PARTIAL = LockStatus(abi=3, seccomp=True, interpreter="perl", arch="x86_64")
NONE = LockStatus(why="neither perl nor python3 is on the host's PATH")

# Writes the issue found rated read-only; whichever the parser still misses runs inside the
# lock under `read-only`, the rest are refused: either way nothing changes.
MISJUDGED = (
    "x=i; sed -$x s/canary/changed/ F",
    "git -C repo config --remove-sec user",
    "echo touch | xargs -I ls env ls PWNED",
    "sed -n ':a;w F' G",
    "jobs -x touch PWNED",
    "find . -name F -d$x",
    "xxd -C F OUT",
    "ionice -t sh -c 'touch PWNED' ls",
)
WRITES = ("touch PWNED", "rm -f F", "chmod 600 F", "echo x >> G", "mkdir made")


def _gate(
    status: LockStatus | None, policy: str, *, headless: bool = True, **config
) -> ApprovalGate:
    kit = HostLock(LockConfig(**config), status)
    return ApprovalGate(
        ScriptOperator(),
        Prompts.load(),
        host="web1",
        policy=policy,  # type: ignore[arg-type]
        non_interactive=headless,
        host_lock=lambda: kit,
    )


async def _decide(gate: ApprovalGate, command: str, *, service: bool = False):
    verdict = assess(command, "bash")
    return await gate.judge(1, command, verdict.verdict, verdict.reason, service=service)


# -- the gate ----------------------------------------------------------------------------------


async def test_read_only_runs_a_read_inside_the_lock_with_sockets_for_a_service_read() -> None:
    gate = _gate(HELD, "read-only")
    decision = await _decide(gate, "ls -l")
    assert (decision.action, decision.lock) == ("run", Lock(sockets=False))
    decision = await _decide(gate, "systemctl status ssh", service=True)
    assert (decision.action, decision.lock) == ("run", Lock(sockets=True))
    # `auto` is a yes given in advance: no lock.
    assert (await _decide(_gate(HELD, "auto"), "touch F")).lock is None


async def test_a_persons_yes_runs_without_the_lock() -> None:
    gate = _gate(HELD, "ask", headless=False)
    decision = await _decide(gate, "ls -l")
    assert decision.action == "run" and decision.by == "operator" and decision.lock is None


async def test_the_a_answer_runs_later_reads_inside_the_lock() -> None:
    gate = _gate(HELD, "ask", headless=False)
    assert isinstance(gate.operator, ScriptOperator)
    gate.operator.approvals.append(Approval("run", auto_read_only=True))
    first = await _decide(gate, "ls -l")
    second = await _decide(gate, "ls -la")
    assert first.lock is None and second.lock == Lock() and second.by == "policy"


@pytest.mark.parametrize(
    ("command", "service", "why"),
    [
        ("ls -l", True, "it reads through a local service's socket"),
        ("sudo ls /root", False, "it calls sudo, which cannot gain root inside the kernel lock"),
        ("rm -rf /", False, "dangerous"),
    ],
)
async def test_locked_asks_for_what_the_lock_cannot_hold(
    command: str, service: bool, why: str
) -> None:
    decision = await _decide(_gate(HELD, "locked"), command, service=service)
    assert decision.action == "refused" and why in decision.reason
    interactive = _gate(HELD, "locked", headless=False)
    assert isinstance(interactive.operator, ScriptOperator)
    # A dangerous command runs only with the host's name typed.
    interactive.operator.approvals.append(Approval.run(typed="web1"))
    decision = await _decide(interactive, command, service=service)
    assert [p.command for p in interactive.operator.proposals] == [command]
    assert decision.action == "run" and decision.lock is None


async def test_locked_runs_writes_inside_the_lock_without_a_port() -> None:
    gate = _gate(HELD, "locked")
    write = await _decide(gate, "touch F")
    read = await _decide(gate, "curl -s https://example.com/")
    assert (write.action, write.lock) == ("run", Lock(sockets=False, network=False))
    assert (read.action, read.lock) == ("run", Lock(sockets=False, network=True))
    # Where the lock holds less than all of it, a write needs a person.
    partial = await _decide(_gate(PARTIAL, "locked"), "touch F")
    assert partial.action == "refused"
    assert "does not hold TCP bind and connect (Landlock ABI 4)" in partial.reason
    assert (await _decide(_gate(PARTIAL, "locked"), "ls")).lock == Lock(sockets=False)


async def test_a_host_that_requires_the_lock_runs_nothing_unasked_without_it() -> None:
    refused = await _decide(_gate(NONE, "read-only", required=True), "ls")
    assert refused.action == "refused"
    assert "this host requires the kernel lock, which is not held: neither perl" in refused.reason
    optional = await _decide(_gate(NONE, "read-only"), "ls")
    assert optional.action == "run" and optional.lock == Lock()
    locked = await _decide(_gate(NONE, "locked"), "ls")
    assert locked.action == "refused" and "the policy is locked" in locked.reason


@pytest.mark.parametrize("by", ["replay", "canary"])
async def test_a_replayed_yes_runs_a_read_inside_the_lock_and_a_dangerous_one_needs_the_name(
    by: DecidedBy,
) -> None:
    """A recording's or a canary's yes is nobody's yes here: what it lets run, runs unasked,
    inside the lock and said to be the replay's; a dangerous command needs the name typed here."""
    decided = Decisions()
    recorded = [
        (1, "ls -l", "run", "ls -l"),
        (2, "systemctl status ssh", "run", "systemctl status ssh"),
        (3, "rm -rf /", "run", "rm -rf /"),
        (4, "cat /etc/hostname", "edit", "cat /etc/hosts"),
    ]
    for step, proposed, decision, command in recorded:
        decided.observe(
            CommandDecision(step=step, decision=decision, command=command, proposed=proposed)
        )
    person = ScriptOperator(approvals=[Approval.run()])  # a plain yes, no host name typed
    kit = HostLock(LockConfig(), HELD)
    gate = ApprovalGate(
        ReplayOperator(decided, person, by=by),
        Prompts.load(),
        host="web1",
        host_lock=lambda: kit,
    )
    replayed = ReplayGate(decided, gate, interrupted={2}, by=by)
    got = [await replayed.decide(step, proposed) for step, proposed, _, _ in recorded]
    assert [(d.action, d.command, d.by, d.asked, d.lock) for d in got] == [
        ("run", "ls -l", by, False, Lock(sockets=False)),
        # Interrupted in the recording: the recorded yes, for a read through a service.
        ("run", "systemctl status ssh", by, False, Lock(sockets=True)),
        ("refused", "rm -rf /", "policy", False, None),
        ("edit", "cat /etc/hosts", by, False, Lock(sockets=False)),
    ]
    assert [p.command for p in person.proposals] == ["rm -rf /"]


# -- a session -----------------------------------------------------------------------------------


async def test_locked_session_the_llm_reads_the_error_and_nothing_changes(
    llm: ScriptedLLM, tmp_path: Path
) -> None:
    where = make_scratch(tmp_path / "work")
    before = state(where)
    llm.script(*(f"[CMD] {c}" for c in WRITES), "[CMD] cat F", "[DONE] looked")
    run = await run_session(
        llm.base_url,
        runner=LocalRunner(cwd=where),
        options=SessionOptions(policy="locked", non_interactive=True),
    )
    assert run.result.status == "done"
    assert state(where) == before
    started = run.of(RunStarted)[0]
    assert started.policy == "locked" and started.lock == "held (Landlock ABI 7, seccomp)"
    finished = run.of(CommandFinished)
    assert [f.locked for f in finished] == [True] * (len(WRITES) + 1)
    told = [r.last_user_text for r in llm.requests[1:]]
    assert "touch: cannot touch 'PWNED': Permission denied" in told[0]
    assert "Operation not permitted" in told[2]
    assert "canary F" in told[-1]


async def test_required_lock_that_cannot_be_had_is_told_once_and_runs_nothing_unasked(
    llm: ScriptedLLM, tmp_path: Path
) -> None:
    path = str(bin_without(tmp_path, "perl", "python"))
    runner = LocalRunner(
        cwd=tmp_path, env={**os.environ, "PATH": path}, lock=LockConfig(required=True)
    )
    llm.script("[CMD] ls", "[DONE] ok")
    run = await run_session(
        llm.base_url,
        runner=runner,
        options=SessionOptions(policy="read-only", non_interactive=True),
    )
    assert run.of(RunStarted)[0].lock == "not held: neither perl nor python3 is on the host's PATH"
    notices = [n.message for n in run.of(Notice) if "kernel lock" in n.message]
    assert notices == [
        "the kernel lock is required on local and is not held: neither perl nor python3 is on "
        "the host's PATH; nothing runs there without a person's yes"
    ]
    assert [d.decision for d in run.of(CommandDecision)] == ["refused"]
    assert "this host requires the kernel lock" in llm.requests[1].last_user_text


# -- kosmos run, headless, locally and over SSH ------------------------------------------------


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = make_scratch(tmp_path / "project")
    (path / ".kosmos/skills/probe").mkdir(parents=True)
    (path / ".kosmos/skills/probe/SKILL.md").write_text(
        "---\nname: probe\ndescription: look\n---\nLook around.\n"
    )
    return path


def _events(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


@pytest.mark.parametrize("policy", ["read-only", "locked"])
def test_kosmos_run_headless_changes_nothing(
    policy: str, llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    # A read at the end runs whatever was refused before it: the run ends done.
    commands = [*WRITES, *MISJUDGED, "cat F"]
    llm.script(*(f"[CMD] {c}" for c in commands), "[DONE] ok")
    before = state(project)
    proc = run_cli(
        ["run", "probe", "--non-interactive", "--json", "--policy", policy],
        env=cli_env,
        cwd=project,
    )
    assert proc.returncode == 0, proc.stderr
    assert state(project) == before
    events = _events(proc.stdout)
    assert events[0]["lock"] == "held (Landlock ABI 7, seccomp)"
    ran = [e for e in events if e["type"] == "command_finished"]
    assert all(e["locked"] for e in ran)
    if policy == "locked":
        assert len(ran) == len(commands)
        assert "Permission denied" in llm.requests[1].last_user_text
    else:  # the plain writes are refused; what the parser misses runs inside the lock
        refused = [e for e in events if e.get("decision") == "refused"]
        assert len(refused) + len(ran) == len(commands) and len(refused) >= len(WRITES)


def _spawners_of(cwd: Path) -> list[int]:
    """The local spawners (prelude/spawn.py) whose kosmos runs in `cwd`."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if b"prelude/spawn.py" not in (proc / "cmdline").read_bytes():
                continue
            parent = (proc / "stat").read_text().rsplit(")", 1)[1].split()[1]
            if Path(f"/proc/{parent}/cwd").resolve() == cwd.resolve():
                found.append(int(proc.name))
        except (OSError, IndexError):
            continue
    return found


@pytest.mark.parametrize(
    ("flags", "ready"), [(["--policy", "read-only"], True), (["--yes"], False)]
)
def test_the_spawner_is_started_before_the_first_llm_request_where_commands_will_be_locked(
    flags: list[str], ready: bool, llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    """Its start-up overlaps the lock's probe and the LLM's answer instead of holding up the
    first command; a run whose commands run outside the lock (--yes) starts none."""
    seen: list[list[int]] = []

    def reply(record) -> str:
        seen.append(_spawners_of(project))
        return "[CMD] ls" if len(seen) == 1 else "[DONE] ok"

    llm.default = reply
    proc = run_cli(
        ["run", "probe", "--non-interactive", "--json", *flags], env=cli_env, cwd=project
    )
    assert proc.returncode == 0, proc.stderr
    ran = [e for e in _events(proc.stdout) if e["type"] == "command_finished"]
    assert [e["locked"] for e in ran] == [ready]
    assert bool(seen[0]) is ready
    assert _spawners_of(project) == []


@pytest.mark.parametrize("policy", ["read-only", "locked"])
def test_kosmos_run_over_ssh_changes_nothing(
    policy: str, llm: ScriptedLLM, ssh_cli_env: dict, remote: Sshd, tmp_path: Path
) -> None:
    where = make_scratch(remote.remote_home / "work", pwd.getpwnam(remote.user).pw_uid)
    before = state(where)
    # Whatever the parser comes to catch of MISJUDGED, the read at the end runs.
    commands = [*WRITES, *MISJUDGED, "cat F"]
    llm.script(*(f"[CMD] cd {where} && {c}" for c in commands), "[DONE] ok")
    proc = run_cli(
        ["run", "probe", "--host", "box", "--non-interactive", "--json", "--policy", policy],
        env=ssh_cli_env,
        cwd=_skill_dir(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr
    assert state(where) == before
    events = _events(proc.stdout)
    assert events[0]["lock"] == "held (Landlock ABI 7, seccomp)"
    ran = [e for e in events if e["type"] == "command_finished"]
    assert all(e["locked"] for e in ran) and "canary F" in llm.requests[-1].last_user_text
    if policy == "locked":
        assert len(ran) == len(commands)
        assert "Permission denied" in llm.requests[1].last_user_text


@pytest.fixture(scope="module")
def tcsh_remote(request: pytest.FixtureRequest) -> Iterator[Sshd]:
    """An sshd whose user logs in to tcsh, which reads `!` and newlines in quotes its own way."""
    tcsh = need("tcsh", "tcsh")
    worker = getattr(request.config, "workerinput", {}).get("workerid", "main")
    try:
        server = start_sshd(f"{worker}c", login=tcsh)
    except SshdUnavailable as e:
        if os.environ.get("KOSMOS_REQUIRE_SSHD") == "1":
            pytest.fail(f"KOSMOS_REQUIRE_SSHD=1 but sshd cannot run: {e}")
        pytest.skip(str(e))
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(server.root, ignore_errors=True)


def test_a_tcsh_login_gets_the_lock(
    llm: ScriptedLLM, cli_env: dict, home: Path, tcsh_remote: Sshd, tmp_path: Path
) -> None:
    """The issue's tcsh host said nothing of its lock, and reads ran without one."""
    write_client_home(home, tcsh_remote)
    env = {k: v for k, v in cli_env.items() if k != "SSH_AUTH_SOCK"}
    where = make_scratch(tcsh_remote.remote_home / "work", pwd.getpwnam(tcsh_remote.user).pw_uid)
    before = state(where)
    commands = [*WRITES, *MISJUDGED, "echo 'a!b'", "cat F"]
    llm.script(*(f"[CMD] cd {where} && {c}" for c in commands), "[DONE] ok")
    proc = run_cli(
        ["run", "probe", "--host", "box", "--non-interactive", "--json", "--policy", "locked"],
        env=env,
        cwd=_skill_dir(tmp_path),
    )
    after = state(where)
    tcsh_remote.clean_remote()
    assert proc.returncode == 0, proc.stderr
    assert after == before
    events = _events(proc.stdout)
    assert events[0]["lock"] == "held (Landlock ABI 7, seccomp)"
    ran = [e for e in events if e["type"] == "command_finished"]
    assert len(ran) == len(commands) and all(e["locked"] for e in ran)
    assert "Permission denied" in llm.requests[1].last_user_text
    assert "a!b" in llm.requests[-2].last_user_text
    assert "canary F" in llm.requests[-1].last_user_text


def _skill_dir(tmp_path: Path) -> Path:
    path = tmp_path / "cwd"
    (path / ".kosmos/skills/probe").mkdir(parents=True)
    (path / ".kosmos/skills/probe/SKILL.md").write_text(
        "---\nname: probe\ndescription: look\n---\nLook around.\n"
    )
    return path


class _Recorder:
    """A loopback HTTP server that records every byte each connection sends."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.received: list[bytes] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                data = b""
                try:
                    while b"\r\n\r\n" not in data:
                        chunk = conn.recv(65536)
                        if not chunk:
                            break
                        data += chunk
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n")
                    conn.settimeout(0.3)
                    data += conn.recv(65536)  # what was sent behind the first request
                except OSError:
                    pass
                self.received.append(data)


@pytest.fixture
def recorder() -> Iterator[_Recorder]:
    server = _Recorder()
    try:
        yield server
    finally:
        server.sock.close()


def test_a_request_smuggled_in_a_header_is_refused_and_never_sent(
    llm: ScriptedLLM, cli_env: dict, project: Path, recorder: _Recorder
) -> None:
    """The issue's curl: under read-only, on a port the lock allows, the second request in
    the header is never sent; the plain GET after it is (the port was open all along)."""
    port = recorder.port
    (project / "kosmos.yaml").write_text(f"hosts:\n  local:\n    lock_ports: [{port}]\n")
    url = f"http://127.0.0.1:{port}"
    smuggled = [
        f"curl -s -H $'X-A: 1\\r\\n\\r\\nPOST /api/delete HTTP/1.1\\r\\nX-B: 2' {url}/",
        f"curl -s -A $'k\\r\\n\\r\\nPOST /api/delete HTTP/1.1' {url}/",
        f"wget -qO- --header=$'X-A: 1\\r\\n\\r\\nPOST /api/delete HTTP/1.1' {url}/",
        f"curl -s --doh-url {url}/api/delete http://example.com/",
    ]
    llm.script(*(f"[CMD] {c}" for c in smuggled), f"[CMD] curl -s {url}/ok", "[DONE] ok")
    proc = run_cli(
        ["run", "probe", "--non-interactive", "--json", "--policy", "read-only"],
        env=cli_env,
        cwd=project,
    )
    assert proc.returncode == 0, proc.stderr
    events = _events(proc.stdout)
    decided = {e["command"]: e for e in events if e["type"] == "command_decision"}
    for command in smuggled:
        assert decided[command]["decision"] == "refused", decided[command]
    assert decided[f"curl -s {url}/ok"]["decision"] == "run"
    assert [r.split(b"\r\n")[0] for r in recorder.received] == [b"GET /ok HTTP/1.1"]
    assert not any(b"/api/delete" in r for r in recorder.received), recorder.received


async def test_the_socket_exception_is_given_only_to_a_line_of_service_reads() -> None:
    gate = _gate(HELD, "read-only")
    for command, sockets in (
        ("systemctl status ssh | grep Active", True),
        ("ss -s; curl -s http://127.0.0.1/", False),
        ("ss -s; openssl s_client -connect 127.0.0.1:443 </dev/null", False),
    ):
        verdict = assess(command, "bash")
        decision = await gate.judge(
            1, command, verdict.verdict, verdict.reason, service=verdict.service
        )
        assert (decision.action, decision.lock) == ("run", Lock(sockets=sockets)), command


def test_config_pins_a_host_to_locked_and_names_the_lock_in_the_header(
    llm: ScriptedLLM, cli_env: dict, project: Path
) -> None:
    (project / "kosmos.yaml").write_text(
        "hosts:\n  local:\n    policy: locked\n    lock: required\n    lock_ports: [8443]\n"
    )
    llm.script("[CMD] touch PWNED", "[DONE] ok")
    before = state(project)
    proc = run_cli(["run", "probe", "--non-interactive"], env=cli_env, cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert "  policy: locked · lock held (Landlock ABI 7, seccomp)\n" in proc.stdout
    assert not (project / "PWNED").exists() and state(project) == before


def test_a_bad_lock_setting_is_one_line(cli_env: dict, project: Path) -> None:
    (project / "kosmos.yaml").write_text("hosts:\n  local:\n    lock: always\n")
    proc = run_cli(["run", "probe", "--non-interactive"], env=cli_env, cwd=project)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "hosts.local.lock" in lines[0], proc.stderr


async def test_the_tui_run_names_the_lock_and_the_write_fails_inside_it(
    llm: ScriptedLLM, home: Path, tmp_path: Path
) -> None:
    from tests.tuihelpers import finished, front_view, make_app, until

    target = tmp_path / "PWNED"
    llm.script(f"[CMD] touch {target}", "[DONE] ok")
    settings = {"hosts": {"local": {"policy": "locked"}}}
    app = make_app(llm.base_url, home, settings=settings, params={"unit": "nginx"})
    async with app.run_test(size=(140, 45)) as pilot:
        await pilot.press("ctrl+r")
        await until(pilot, finished(app), "the run's end")
        notes = [str(n.render()) for n in front_view(app).query("Note")]
    assert "policy locked · kernel lock held (Landlock ABI 7, seccomp)" in notes
    assert not target.exists()
    assert "Permission denied" in llm.requests[1].last_user_text
