"""kosmos tui over SSH: the in-process asyncssh server runs the commands for real."""

from __future__ import annotations

from pathlib import Path

import asyncssh

from kosmos.transcript import read_transcript
from kosmos.tui.hostlist import host_choices
from kosmos.tui.screens.modals import HostKeyModal, SecretModal
from tests.llmserver import ScriptedLLM
from tests.sshserver import InProcessSSHServer, write_client_home
from tests.tuihelpers import (
    awaiting_step,
    finished,
    front_view,
    make_app,
    processes_running,
    until,
)

Keys = tuple[asyncssh.SSHKey, asyncssh.SSHKey]


def _connected(app, target: str):
    return lambda: app.main.sidebar.states.get(target, ("", ""))[0] == "connected"


async def test_unknown_host_key_is_trusted_in_a_modal_then_the_run_goes_over_ssh(
    llm: ScriptedLLM, ssh_home: Path, ssh_server: InProcessSSHServer, ssh_keys: Keys
) -> None:
    write_client_home(ssh_home, ssh_server, ssh_keys[1], trust=False)
    llm.script("[CMD] echo over-ssh; echo $HOME", "[DONE] checked")
    hosts = host_choices(ssh_home)
    assert hosts == ["local", "inproc"]
    app = make_app(llm.base_url, ssh_home, params={"unit": "x"}, hosts=hosts, host="inproc")
    async with app.run_test(size=(140, 45)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, HostKeyModal), "the host key modal")
        fingerprint = ssh_server.host_key.get_fingerprint("sha256")
        assert fingerprint in str(app.screen.query_one("#fingerprint").render())
        # The host as the operator knows it, its address beside it.
        title = str(app.screen.query_one(".dialog-title").render())
        assert title == f"Unknown host key for inproc (127.0.0.1:{ssh_server.port})"
        await pilot.press("t")
        await until(pilot, _connected(app, "inproc"), "inproc connected")
        assert str(ssh_server.port) in (ssh_home / ".ssh" / "known_hosts").read_text()
        await pilot.press("ctrl+r")
        await until(pilot, awaiting_step(app, 1), "step 1 awaiting approval")
        await pilot.press("enter")
        await until(pilot, finished(app), "the run's end")
        view = front_view(app)
        assert view.result.status == "done"
        output = "\n".join(view.cmd_steps[1].query_one("#output").lines)
        assert "over-ssh" in output and str(ssh_server.state.home) in output
        path = view.controller.transcript_path
    assert llm.requests[1].last_user_text.startswith("Command output:\nover-ssh")
    assert [e.host for e in read_transcript(path) if e.type == "result"] == ["inproc"]


async def test_cancelling_the_host_key_leaves_the_host_unconnected(
    llm: ScriptedLLM, ssh_home: Path, ssh_server: InProcessSSHServer, ssh_keys: Keys
) -> None:
    write_client_home(ssh_home, ssh_server, ssh_keys[1], trust=False)
    app = make_app(llm.base_url, ssh_home, hosts=host_choices(ssh_home), host="inproc")
    async with app.run_test(size=(140, 45)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, HostKeyModal), "the host key modal")
        await pilot.press("escape")
        await until(
            pilot, lambda: app.main.sidebar.states.get("inproc", ("",))[0] == "failed", "failed"
        )
    assert (ssh_home / ".ssh" / "known_hosts").read_text() == ""
    assert ssh_server.state.commands == []


async def test_stop_key_ends_the_remote_process_tree(
    llm: ScriptedLLM, ssh_home: Path, ssh_server: InProcessSSHServer, ssh_keys: Keys
) -> None:
    write_client_home(ssh_home, ssh_server, ssh_keys[1])
    llm.script("[CMD] echo begun; sleep 4713.5; echo never", "[DONE] stopped")
    app = make_app(
        llm.base_url, ssh_home, params={"unit": "x"}, hosts=host_choices(ssh_home), host="inproc"
    )
    async with app.run_test(size=(140, 45)) as pilot:
        await until(pilot, _connected(app, "inproc"), "inproc connected")
        await pilot.press("ctrl+r")
        await until(pilot, awaiting_step(app, 1), "step 1 awaiting approval")
        await pilot.press("enter")
        view = front_view(app)
        await until(
            pilot,
            lambda: "begun" in "".join(view.cmd_steps[1].query_one("#output").lines),
            "its first output",
        )
        assert processes_running("sleep 4713.5")
        await pilot.press("ctrl+c")
        await until(pilot, finished(app), "the run's end")
        assert "stopped after" in view.cmd_steps[1].head.state
        await until(pilot, lambda: not processes_running("sleep 4713.5"), "the sleep gone")
    assert "never" not in llm.requests[1].last_user_text


async def test_remote_skills_and_the_system_context_come_from_the_host(
    llm: ScriptedLLM, ssh_home: Path, ssh_server: InProcessSSHServer, ssh_keys: Keys
) -> None:
    write_client_home(ssh_home, ssh_server, ssh_keys[1])
    panel_dir = ssh_server.state.home / ".config" / "kosmos-panel"
    skill = panel_dir / "skills" / "remote-probe" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: remote-probe\ndescription: lives on the host\n---\nProbe.\n")
    (panel_dir / "ai_system_promt.md").write_text("This host runs **nginx** behind haproxy.\n")
    llm.script("[DONE] seen")
    app = make_app(llm.base_url, ssh_home, skill=None, hosts=host_choices(ssh_home), host="inproc")
    async with app.run_test(size=(140, 45)) as pilot:
        sidebar = app.main.sidebar
        await until(pilot, lambda: sidebar.remote_skills, "the host's skills listed")
        assert [s.name for s in sidebar.remote_skills] == ["remote-probe"]
        assert sidebar.remote_skills[0].source == "remote"
        sidebar.select_skill(sidebar.remote_skills[0])
        await until(pilot, lambda: app.main.query("#params-form"), "the remote skill's form")
        await pilot.press("ctrl+r")
        await until(pilot, finished(app), "the run's end")
        await pilot.press("ctrl+o")
        panel = app.main.query_one("#context")
        assert panel.display and panel.has_class("shown")
        knowledge = str(panel.query_one("#knowledge").render())
        assert "haproxy" in knowledge and "ai_system_promt.md" in knowledge
        assert "--- Active Skill: remote-probe ---" in str(
            panel.query_one("#system-prompt").render()
        )
    assert "haproxy" in llm.requests[0].system


async def test_a_key_passphrase_is_typed_once_per_session(
    llm: ScriptedLLM, ssh_home: Path, ssh_server: InProcessSSHServer, ssh_keys: Keys
) -> None:
    ssh_dir = write_client_home(ssh_home, ssh_server, ssh_keys[1])
    ssh_keys[1].write_private_key(
        str(ssh_dir / "id_ed25519"), passphrase="tui sesame", rounds=2, ignore_few_rounds=True
    )
    llm.script("[CMD] echo after-reconnect", "[DONE] checked")
    app = make_app(
        llm.base_url, ssh_home, params={"unit": "x"}, hosts=host_choices(ssh_home), host="inproc"
    )
    async with app.run_test(size=(140, 45)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, SecretModal), "the passphrase modal")
        assert "id_ed25519" in str(app.screen.query_one(".dialog-title").render())
        await pilot.press(*"tui sesame", "enter")
        await until(pilot, _connected(app, "inproc"), "inproc connected")
        # The connection goes; the run connects again, and the key opens without asking.
        await app.pool.drop("inproc")
        await pilot.press("ctrl+r")
        await until(
            pilot,
            lambda: isinstance(app.screen, SecretModal) or awaiting_step(app, 1)(),
            "step 1 or a second passphrase question",
        )
        assert not isinstance(app.screen, SecretModal)
        await pilot.press("enter")
        await until(pilot, finished(app), "the run's end")
        view = front_view(app)
        assert view.result.status == "done"
        path = view.controller.transcript_path
    assert any("echo after-reconnect" in c for c in ssh_server.state.commands)
    assert "tui sesame" not in path.read_text(encoding="utf-8")
    assert all("tui sesame" not in str(r.body) for r in llm.requests)
