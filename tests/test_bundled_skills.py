"""Each bundled skill, driven by a scripted LLM with the commands its body prescribes, for real."""

from __future__ import annotations

import json
import re
import socket
import subprocess
from pathlib import Path

import pytest

from kosmos.resources import bundled_skills_dir
from tests.conftest import run_cli
from tests.llmserver import Recorded, ScriptedLLM


def run_skill(
    llm: ScriptedLLM, env: dict, cwd: Path, skill: str, *extra: str
) -> tuple[dict, list[str]]:
    proc = run_cli(
        ["run", skill, "--non-interactive", "--yes", "--json", *extra], env=env, cwd=cwd, timeout=90
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.splitlines()[-1])
    outputs = [r.last_user_text for r in llm.requests[1:]]
    return result, outputs


def test_system_overview(llm: ScriptedLLM, cli_env: dict, tmp_path: Path) -> None:
    llm.script(
        "[CMD] hostname; uname -srm; grep -E '^PRETTY_NAME=' /etc/os-release 2>/dev/null",
        "[CMD] uptime; nproc 2>/dev/null || grep -c ^processor /proc/cpuinfo",
        "[CMD] free -h 2>/dev/null || head -n 5 /proc/meminfo",
        "[CMD] (ps -eo pid,user,%cpu,%mem,etime,comm --sort=-%cpu 2>/dev/null || ps aux) | head -n 6",
        "[DONE] OK",
    )
    result, outputs = run_skill(llm, cli_env, tmp_path, "system-overview", "--param", "top=5")
    assert result["status"] == "done" and result["steps"] == 5
    assert "Parameters:\n- top: 5" in llm.requests[0].messages[1]["content"]
    assert "--- Active Skill: system-overview ---" in llm.requests[0].system
    assert socket.gethostname() in outputs[0] and "Linux" in outputs[0]
    assert "load average" in outputs[1]
    assert "Mem" in outputs[2]
    assert "PID" in outputs[3]


def test_disk_usage(llm: ScriptedLLM, cli_env: dict, tmp_path: Path) -> None:
    big = tmp_path / "data" / "big"
    big.mkdir(parents=True)
    (big / "blob").write_bytes(b"\0" * 3_000_000)
    (tmp_path / "data" / "small").mkdir()
    path = tmp_path / "data"
    llm.script(
        f"[CMD] df -hP '{path}'",
        f"[CMD] du -xh --max-depth=1 '{path}' 2>/dev/null | sort -rh | head -n 20",
        f"[DONE] {path}/big holds the most",
    )
    result, outputs = run_skill(
        llm, cli_env, tmp_path, "disk-usage", "--param", f"path={path}", "--param", "depth=1"
    )
    assert result["status"] == "done"
    assert "Filesystem" in outputs[0]
    lines = outputs[1].split("\n\n[Step")[0].splitlines()[1:]
    big_line = next(line for line in lines if line.endswith(f"{path}/big"))
    small_line = next(line for line in lines if line.endswith(f"{path}/small"))
    assert lines.index(big_line) < lines.index(small_line)


def test_service_health_reports_a_failing_command(
    llm: ScriptedLLM, cli_env: dict, tmp_path: Path
) -> None:
    llm.script(
        "[CMD] systemctl status kosmos-test-none.service --no-pager 2>&1",
        "[DONE] kosmos-test-none.service: not found",
    )
    result, outputs = run_skill(
        llm, cli_env, tmp_path, "service-health", "--param", "unit=kosmos-test-none.service"
    )
    assert result["status"] == "done"
    assert "[exit code:" in outputs[0]


def test_service_health_needs_its_unit(cli_env: dict, tmp_path: Path) -> None:
    proc = run_cli(["run", "service-health", "--non-interactive"], env=cli_env, cwd=tmp_path)
    assert proc.returncode == 2
    assert "unit" in proc.stderr


def test_log_errors(llm: ScriptedLLM, cli_env: dict, tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    log.write_text(
        "info: started\nERROR: disk full\nwarning: slow\nERROR: disk full\nerror: timeout\n"
    )
    llm.script(
        f"[CMD] grep -iE 'error|fail|crit' '{log}' | tail -n 100",
        "[DONE] 3 errors: disk full (2), timeout (1)",
    )
    result, outputs = run_skill(llm, cli_env, tmp_path, "log-errors", "--param", "since=today")
    assert result["status"] == "done"
    assert outputs[0] == (
        "Command output:\nERROR: disk full [repeated 2 times]\nerror: timeout\n\n[Step 2 of 100]"
    )


def test_port_check(llm: ScriptedLLM, cli_env: dict, tmp_path: Path) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    try:
        llm.script(
            f"[CMD] (ss -lnt 2>/dev/null || netstat -lnt 2>/dev/null) | grep -E ':{port}[[:space:]]'",
            f"[CMD] timeout 5 bash -c 'exec 3<>/dev/tcp/$0/$1' 127.0.0.1 {port} 2>/dev/null "
            "&& echo open || echo 'closed or filtered'",
            "[DONE] listening: yes; reachable: yes",
        )
        result, outputs = run_skill(llm, cli_env, tmp_path, "port-check", "--param", f"port={port}")
    finally:
        listener.close()
    assert result["status"] == "done"
    assert f"127.0.0.1:{port}" in outputs[0]
    assert outputs[1].startswith("Command output:\nopen\n")


@pytest.mark.parametrize("changes", [True, False])
def test_git_quick_commit(llm: ScriptedLLM, cli_env: dict, tmp_path: Path, changes: bool) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    env = {
        **cli_env,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.org",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.org",
    }
    if changes:
        (repo / "new-file.txt").write_text("hello\n")
        llm.script(
            f"[CMD] git -C '{repo}' status --porcelain",
            "[ASK] Введи сообщение коммита:",
            f"[CMD] git -C '{repo}' add . && git -C '{repo}' commit -m \"fix: add file\"",
            "[DONE] Коммит успешно создан",
        )
    else:
        llm.script(f"[CMD] git -C '{repo}' status --porcelain", "[DONE] No uncommitted changes")
    result, outputs = run_skill(
        llm,
        env,
        tmp_path,
        "git-quick-commit",
        "--param",
        f"path={repo}",
        "--answer",
        "fix: add file",
    )
    assert result["status"] == "done"
    log = subprocess.run(
        ["git", "-C", str(repo), "log", "--oneline"], capture_output=True, text=True
    ).stdout
    if changes:
        assert outputs[0] == "Command output:\n?? new-file.txt\n\n[Step 2 of 100]"
        assert outputs[1] == "User response: fix: add file\n\n[Step 3 of 100]"
        assert "fix: add file" in log
    else:
        assert outputs[0] == "Command output:\n(no output)\n\n[Step 2 of 100]"
        assert log == ""


def test_host_notes_keeps_a_note_and_reads_it_back_next_time(
    llm: ScriptedLLM, cli_env: dict, tmp_path: Path
) -> None:
    host = socket.gethostname()
    note = "MEMORY_host_" + "".join(c if c.isalnum() else "_" for c in host.lower()) + ".md"
    llm.script(
        "[CMD] hostname",
        "[CMD] uname -srm; grep -E '^PRETTY_NAME=' /etc/os-release 2>/dev/null",
        "[CMD] df -hP -x tmpfs -x devtmpfs -x squashfs 2>/dev/null || df -hP",
        f"[STORE] {note}\n{host}: Linux, 2 CPUs\nkernel: seen",
        "[DONE] first visit",
    )
    result, outputs = run_skill(llm, cli_env, tmp_path, "host-notes", "--memory")
    assert result["status"] == "done"
    system = llm.requests[0].system
    assert system.startswith("--- Target OS: Linux ---")
    assert "--- Active Skill: host-notes ---" in system
    assert system.endswith("--- Current Memory Index ---\n(no notes yet)")
    assert outputs[0].startswith(f"Command output:\n{host}")
    assert "Filesystem" in outputs[2]
    assert outputs[3] == f"Memory stored: {note}\n\n[Step 5 of 100]"
    stored = tmp_path / ".kosmos-panel/memory" / note
    assert stored.read_text() == f"{host}: Linux, 2 CPUs\nkernel: seen\n"
    # The next visit finds the note in the index and reads it.
    llm.script("[CMD] hostname", f"[RETRIEVE] {note}", "[DONE] nothing changed")
    result, _ = run_skill(llm, cli_env, tmp_path, "host-notes", "--memory")
    assert result["status"] == "done"
    second = llm.requests[-3]
    assert second.system.endswith(f"--- Current Memory Index ---\n{note}\n{host}: Linux, 2 CPUs")
    assert llm.requests[-1].last_user_text == (
        f"Memory content:\n{host}: Linux, 2 CPUs\nkernel: seen\n\n[Step 3 of 100]"
    )


def test_quick_health_runs_the_script_it_ships(
    llm: ScriptedLLM, cli_env: dict, tmp_path: Path
) -> None:
    base = bundled_skills_dir() / "quick-health"

    def reply(record: Recorded) -> str:
        if sum(m["role"] == "user" for m in record.messages) > 1:
            return "[DONE] OK"
        found = re.search(r"^Base directory for this skill: (.+)$", record.system, re.M)
        return f"[CMD] sh {found.group(1)}/scripts/health.sh 1" if found else "[DONE] no base"

    llm.default = reply
    result, outputs = run_skill(llm, cli_env, tmp_path, "quick-health", "--param", "threshold=70")
    assert result["status"] == "done"
    system = llm.requests[0].system
    assert system.endswith(
        f"\n\nBase directory for this skill: {base.resolve()}\n- scripts/health.sh\n"
        "Commands do not run in this directory: name the skill's files by their full path "
        f"({base.resolve()}/scripts/health.sh)."
    )
    assert "Parameters:\n- threshold: 70" in llm.requests[0].messages[1]["content"]
    for section in ("load", "memory", "disks over 1%", "failed services", "busiest processes"):
        assert f"== {section} ==" in outputs[0]
    assert "cpus: " in outputs[0] and "available: " in outputs[0]
