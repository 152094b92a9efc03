"""Skills stored on the target host (seed 001 remote skills) as tools of `kosmos chat`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import asyncssh
import yaml

from kosmos.chat.host_skills import with_host_skills
from kosmos.hosts.local import LocalRunner
from kosmos.hosts.ssh import SSHRunner
from kosmos.hosts.target import parse_target
from kosmos.runs.skills import host_skills
from tests.chatkit import (
    converse,
    example_chat,
    load_services_module,
    relevant,
    select,
    settings_for,
)
from tests.conftest import run_cli
from tests.helpers import make_skill
from tests.llmserver import ScriptedLLM
from tests.sshserver import InProcessSSHServer, write_client_home

SERVICES = load_services_module()

BACKUP = """---
name: backup
description: Back up a database on this host
params:
  - name: db
    description: the database
    required: true
---
## What I do
Back it up.
"""

REMOTE_SKILLS = ".config/kosmos-panel/skills"


def put(root: Path, folder: str, text: str) -> None:
    path = root / REMOTE_SKILLS / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


async def test_host_skills_join_the_tools_local_ones_first(
    llm: ScriptedLLM,
    services: Any,
    tmp_path: Path,
    ssh_home: Path,
    ssh_server: InProcessSSHServer,
    ssh_keys: tuple[asyncssh.SSHKey, asyncssh.SSHKey],
) -> None:
    write_client_home(ssh_home, ssh_server, ssh_keys[1])
    server_home = ssh_server.state.home
    put(server_home, "backup", BACKUP)
    put(server_home, "ops/probe", BACKUP.replace("backup", "probe"))
    put(server_home, "broken", "---\nname: [unclosed\n")
    runner = SSHRunner(parse_target("inproc"), connect_timeout=5)
    try:
        await runner.connect()
        found = await host_skills(runner, timeout=5)
    finally:
        await runner.close()
    assert sorted(s.name for s in found.skills) == ["backup", "probe"]
    assert len(found.problems) == 1 and found.problems[0].startswith("inproc: ")
    assert "broken/SKILL.md" in found.problems[0]
    # A local skill of the same name wins, as `kosmos run` finds local skills first.
    local = make_skill("## What I do\nProbe here.", name="probe", description="The local probe")
    skills = with_host_skills([local], found)
    llm.script(relevant(False))
    settings = settings_for(llm.base_url, example_chat(services.base_url))
    chat = await converse(settings, ["hello"], tmp_path / "chat.log", skills=skills)
    tools = [t.name for t in chat.agent.tools]
    assert tools.count("probe") == 1 and "backup" in tools
    prompt = llm.requests[0].system
    assert "- backup: Back up a database on this host" in prompt
    assert "- probe: The local probe" in prompt and "probe: Back up" not in prompt


async def test_the_local_hosts_own_skills_folder_counts_too(tmp_path: Path) -> None:
    # One rule for every front end: the host's skills folder is looked at on `local` too.
    put(tmp_path, "backup", BACKUP)
    found = await host_skills(LocalRunner(env={"HOME": str(tmp_path)}), timeout=5)
    assert [(s.name, s.source) for s in found.skills] == [("backup", "remote")]
    assert found.problems == []


def test_kosmos_chat_offers_and_runs_the_hosts_skills(
    llm: ScriptedLLM, services: Any, cli_env: dict[str, str], tmp_path: Path, remote: Any
) -> None:
    from tests.sshd import write_client_home as write_sshd_client_home

    write_sshd_client_home(Path(cli_env["HOME"]), remote, alias="box")
    remote.write_remote(f"{REMOTE_SKILLS}/backup/SKILL.md", BACKUP)
    chat = example_chat(services.base_url)
    (tmp_path / "kosmos.yaml").write_text(yaml.safe_dump({"chat": chat}), encoding="utf-8")
    llm.script(relevant(), select("backup", db="orders"))
    llm.script("[CMD] echo dump-$(whoami)", "[DONE] orders backed up")
    result = run_cli(
        ["chat", "--host", "box", "--lang", "en", "--log", str(tmp_path / "chat.log")],
        env=cli_env,
        cwd=tmp_path,
        stdin="back up orders\ny\nq\n",
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    offered = out.index("Skills stored on box, offered as tools: backup")
    assert offered < out.index("What I can do:") < out.index("• backup: Back up a database")
    assert "Skill backup finished: orders backed up" in out
    assert f"dump-{remote.user}" in llm.requests[3].last_user_text
    assert "- backup: Back up a database on this host" in llm.requests[1].system
    log = (tmp_path / "chat.log").read_text()
    assert "INFO     [main] host_skills // box: backup" in log
