"""Agent Skills folders: the files beside SKILL.md reach the target, and the prompt names them."""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

import pytest

from kosmos.engine.session import SessionOptions
from kosmos.events import Notice, SkillFolderReady
from kosmos.hosts.ssh import SSHRunner
from kosmos.hosts.target import parse_target
from kosmos.prompts import Prompts
from kosmos.skills.folder import MAX_FOLDER_BYTES, collect_folder
from kosmos.skills.loader import load_skill_file
from tests.conftest import run_cli
from tests.helpers import run_session
from tests.llmserver import Recorded, ScriptedLLM
from tests.sshd import Sshd
from tests.sshserver import InProcessSSHServer
from tests.sshserver import write_client_home as write_inproc_home

PROMPTS = Prompts.load()
SKILL = (
    "---\nname: probe\ndescription: a skill with a script\n---\n"
    "## What I do\nRun scripts/hello.sh from this skill's folder.\n"
)
BASE = re.compile(r"^Base directory for this skill: (.+)$", re.M)


def skill_folder(root: Path, hello: str = "hello") -> Path:
    """A skill folder: SKILL.md, a script, a reference, and what is not part of the skill."""
    folder = root / ".kosmos/skills/probe"
    (folder / "scripts").mkdir(parents=True)
    (folder / "references").mkdir()
    (folder / "SKILL.md").write_text(SKILL)
    script = folder / "scripts/hello.sh"
    script.write_text(f'#!/bin/sh\necho "{hello} from $(basename "$(dirname "$0")")"\n')
    script.chmod(0o755)
    (folder / "references/notes.md").write_text("# Notes\n")
    (folder / ".hidden").write_text("not sent\n")
    (folder / "scripts/__pycache__").mkdir()
    (folder / "scripts/__pycache__/x.pyc").write_bytes(b"\0")
    (folder / "nested").mkdir()
    (folder / "nested/SKILL.md").write_text("---\nname: nested\n---\nAnother skill.\n")
    return folder


def run_the_script(record: Recorded) -> str:
    """Step 1 runs the script from the base directory the prompt names; then [DONE]."""
    if sum(m["role"] == "user" for m in record.messages) > 1:
        return "[DONE] ran it"
    base = BASE.search(record.system)
    return f"[CMD] {base.group(1)}/scripts/hello.sh" if base else "[DONE] no base directory"


def events(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def test_on_local_the_skill_runs_beside_its_own_files(
    llm: ScriptedLLM, cli_env: dict, tmp_path: Path
) -> None:
    folder = skill_folder(tmp_path)
    llm.default = run_the_script
    proc = run_cli(
        ["run", "probe", "--non-interactive", "--yes", "--json"], env=cli_env, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    system = llm.requests[0].system
    assert system.endswith(
        "--- Active Skill: probe ---\n## What I do\nRun scripts/hello.sh from this skill's "
        f"folder.\n\nBase directory for this skill: {folder}\n"
        "- references/notes.md\n- scripts/hello.sh\n"
        "Commands do not run in this directory: name the skill's files by their full path "
        f"({folder}/scripts/hello.sh)."
    )
    assert llm.requests[1].last_user_text.startswith("Command output:\nhello from scripts\n")
    ready = next(e for e in events(proc.stdout) if e["type"] == "skill_folder")
    assert ready["how"] == "local" and ready["base"] == str(folder)


def test_over_openssh_the_files_are_uploaded_once_with_their_exec_bits(
    llm: ScriptedLLM, ssh_cli_env: dict, remote: Sshd, tmp_path: Path
) -> None:
    skill_folder(tmp_path)
    llm.default = run_the_script
    args = ["run", "probe", "--host", "box", "--non-interactive", "--yes", "--json"]
    proc = run_cli(args, env=ssh_cli_env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    first = next(e for e in events(proc.stdout) if e["type"] == "skill_folder")
    cache = remote.remote_home / ".cache/kosmos/skills"
    [copy] = list(cache.iterdir())
    assert re.fullmatch(r"probe-[0-9a-f]{16}", copy.name)
    assert first["how"] == "uploaded" and first["base"] == str(copy)
    assert first["files"] == ["references/notes.md", "scripts/hello.sh"]
    sent = sorted(str(p.relative_to(copy)) for p in copy.rglob("*") if p.is_file())
    assert sent == ["references/notes.md", "scripts/hello.sh"]
    # The exec bit kept, nothing readable by others on the host.
    assert stat.S_IMODE((copy / "scripts/hello.sh").stat().st_mode) == 0o700
    assert stat.S_IMODE((copy / "references/notes.md").stat().st_mode) == 0o600
    for folder in (copy, copy / "scripts", copy / "references", cache):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    assert (copy / "scripts/hello.sh").stat().st_uid == (remote.remote_home).stat().st_uid
    assert f"Base directory for this skill: {copy}\n" in llm.requests[0].system
    assert llm.requests[1].last_user_text.startswith("Command output:\nhello from scripts\n")
    # A second run finds the same files there and sends nothing.
    written = (copy / "scripts/hello.sh").stat().st_mtime_ns
    proc = run_cli(args, env=ssh_cli_env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    again = next(e for e in events(proc.stdout) if e["type"] == "skill_folder")
    assert again["how"] == "reused" and again["base"] == str(copy)
    assert (copy / "scripts/hello.sh").stat().st_mtime_ns == written
    # A changed skill is another folder.
    (tmp_path / ".kosmos/skills/probe/scripts/hello.sh").write_text("#!/bin/sh\necho changed\n")
    proc = run_cli(args, env=ssh_cli_env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert len(list(cache.iterdir())) == 2
    assert llm.requests[-1].last_user_text.startswith("Command output:\nchanged\n")


def test_a_fleet_uploads_within_its_forks_and_ends_with_one_copy(
    llm: ScriptedLLM, ssh_cli_env: dict, remote: Sshd, home: Path, tmp_path: Path
) -> None:
    aliases = [f"f{i}" for i in range(4)]
    with (home / ".ssh/config").open("a") as f:
        f.write(
            f"Host {' '.join(aliases)}\n  HostName 127.0.0.1\n  Port {remote.port}\n"
            f"  User {remote.user}\n"
        )
    skill_folder(tmp_path)
    llm.default = run_the_script
    args = ["run", "probe", "--non-interactive", "--yes", "--json", "--forks", "2"]
    proc = run_cli(
        args + [a for h in aliases for a in ("--host", h)], env=ssh_cli_env, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    ready = [e for e in events(proc.stdout) if e["type"] == "skill_folder"]
    assert sorted(e["host"] for e in ready) == aliases
    assert {e["how"] for e in ready} <= {"uploaded", "reused"}
    # Every alias reaches the same account: one complete copy, nothing half-written left.
    assert [p.name for p in (remote.remote_home / ".cache/kosmos/skills").iterdir()] == [
        Path(ready[0]["base"]).name
    ]
    outputs = [r.last_user_text for r in llm.requests if "Command output" in r.last_user_text]
    assert len(outputs) == 4 and all("hello from scripts" in o for o in outputs)


def test_a_skill_kept_on_the_host_uses_its_own_folder_there(
    llm: ScriptedLLM, ssh_cli_env: dict, remote: Sshd, tmp_path: Path
) -> None:
    folder = ".config/kosmos-panel/skills/remote-probe"
    remote.write_remote(f"{folder}/SKILL.md", SKILL.replace("name: probe", "name: remote-probe"))
    script = remote.write_remote(f"{folder}/scripts/hello.sh", "#!/bin/sh\necho remote hello\n")
    script.chmod(0o755)
    llm.default = run_the_script
    proc = run_cli(
        ["run", "remote-probe", "--host", "box", "--non-interactive", "--yes", "--json"],
        env=ssh_cli_env,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    ready = next(e for e in events(proc.stdout) if e["type"] == "skill_folder")
    assert ready["how"] == "remote" and ready["base"] == str(remote.remote_home / folder)
    assert ready["files"] == ["scripts/hello.sh"]
    assert llm.requests[1].last_user_text.startswith("Command output:\nremote hello\n")
    assert not (remote.remote_home / ".cache/kosmos").exists()


def test_a_folder_over_1_mib_is_exit_2_naming_the_limit(
    llm: ScriptedLLM, cli_env: dict, tmp_path: Path
) -> None:
    folder = skill_folder(tmp_path)
    (folder / "assets").mkdir()
    (folder / "assets/blob.bin").write_bytes(os.urandom(MAX_FOLDER_BYTES))
    llm.script("[DONE] never")
    proc = run_cli(["run", "probe", "--non-interactive", "--yes"], env=cli_env, cwd=tmp_path)
    assert proc.returncode == 2
    [line] = [x for x in proc.stderr.splitlines() if x.startswith("kosmos: ")]
    assert "hold more than 1024 KiB, the most kosmos takes to a host with a skill" in line
    assert "move large data out of the folder" in line
    assert llm.requests == []


async def test_a_host_without_sftp_gets_the_files_through_the_command_channel(
    llm: ScriptedLLM,
    ssh_home: Path,
    ssh_server: InProcessSSHServer,
    ssh_keys: tuple,
    tmp_path: Path,
) -> None:
    # asyncssh's server offers no sftp subsystem unless asked to.
    write_inproc_home(ssh_home, ssh_server, ssh_keys[1])
    skill = load_skill_file(skill_folder(tmp_path) / "SKILL.md", "test")
    runner = SSHRunner(parse_target("inproc"), connect_timeout=5)
    llm.default = run_the_script
    await runner.connect()
    try:
        run = await run_session(
            llm.base_url, skill, runner=runner, options=SessionOptions(policy="auto")
        )
    finally:
        await runner.close()
    assert run.result.exit_code == 0, run.result.message
    [ready] = run.of(SkillFolderReady)
    assert ready.how == "uploaded" and ready.base.startswith(str(ssh_server.state.home))
    [note] = [n.message for n in run.of(Notice) if "sftp" in n.message]
    assert note.endswith(
        "offers no sftp subsystem, so the skill's files went through the "
        "command channel (a tar piped to `tar -x`)"
    )
    assert llm.requests[1].last_user_text.startswith("Command output:\nhello from scripts\n")


def test_a_skill_without_files_keeps_the_seed_prompt(tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "SKILL.md").write_text(SKILL)
    assert collect_folder(load_skill_file(folder / "SKILL.md", "test")) is None
    # A file named otherwise is a skill without a folder of its own.
    (tmp_path / "loose.md").write_text(SKILL)
    assert collect_folder(load_skill_file(tmp_path / "loose.md", "path")) is None


@pytest.mark.parametrize("count", [201])
def test_too_many_files_is_an_error_saying_what_to_do(tmp_path: Path, count: int) -> None:
    folder = tmp_path / "many"
    (folder / "assets").mkdir(parents=True)
    (folder / "SKILL.md").write_text(SKILL)
    for i in range(count):
        (folder / f"assets/{i}.txt").write_text("x")
    with pytest.raises(Exception, match="more than 200 files beside SKILL.md") as e:
        collect_folder(load_skill_file(folder / "SKILL.md", "test"))
    assert getattr(e.value, "exit_code", None) == 2


async def test_skill_folder_event_is_in_the_run(llm: ScriptedLLM, tmp_path: Path) -> None:
    skill = load_skill_file(skill_folder(tmp_path) / "SKILL.md", "test")
    llm.script("[DONE] ok")
    run = await run_session(llm.base_url, skill)
    [ready] = run.of(SkillFolderReady)
    assert ready.how == "local" and ready.bytes == len("# Notes\n") + len(
        (tmp_path / ".kosmos/skills/probe/scripts/hello.sh").read_bytes()
    )


def test_a_shell_error_names_the_shell_not_kosmos(
    llm: ScriptedLLM, ssh_cli_env: dict, remote: Sshd, tmp_path: Path
) -> None:
    """`$0` of the shell that runs a command is the shell's name, here and over OpenSSH (the
    first command, before the host's shell is known, and the next), so an error in a command
    does not read as kosmos's own."""
    skill_folder(tmp_path)
    script = ["[CMD] no-such-cmd-xyz", "[CMD] no-such-cmd-xyz", "[DONE] ok"]
    for host in ("local", "box"):
        llm.script(*script)
        args = ["run", "probe", "--host", host, "--non-interactive", "--yes", "--json"]
        proc = run_cli(args, env=ssh_cli_env, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        for request in llm.requests[-2:]:
            seen = request.last_user_text
            assert "bash: line 1: no-such-cmd-xyz: command not found" in seen, (host, seen)
            assert "kosmos:" not in seen
