"""The TUI's fleet view over SSH: two aliases of the in-process server, opened as `kosmos tui`
opens them (host keys asked in the app's modal, through the fleet's broker)."""

from __future__ import annotations

import socket
from pathlib import Path

import asyncssh

from kosmos.fleet.targets import HostSpec
from kosmos.tui.hostlist import host_choices
from kosmos.tui.screens.modals import HostKeyModal
from tests.llmserver import ScriptedLLM
from tests.sshserver import InProcessSSHServer, write_client_home
from tests.test_tui_fleet import fleet_done, fleet_screen, shown, start_fleet, waiting_on
from tests.tuihelpers import make_app, until

Keys = tuple[asyncssh.SSHKey, asyncssh.SSHKey]


async def test_a_fleet_over_ssh_trusts_the_key_in_a_modal_and_runs_on_all(
    llm: ScriptedLLM, ssh_home: Path, ssh_server: InProcessSSHServer, ssh_keys: Keys
) -> None:
    port = ssh_server.port
    second = f"Host inproc2\n  HostName 127.0.0.1\n  Port {port}\n  User tester\n"
    write_client_home(ssh_home, ssh_server, ssh_keys[1], trust=False, extra_config=second)
    llm.default = lambda r: "[CMD] echo over-ssh" if len(r.messages) < 4 else "[DONE] ok"
    names = ["inproc", "inproc2"]
    hosts = host_choices(ssh_home)
    assert hosts == ["local", *names]
    app = make_app(llm.base_url, ssh_home, params={"unit": "x"}, hosts=hosts)
    app.config.fleet = [HostSpec(n, n) for n in names]
    async with app.run_test(size=(140, 45)) as pilot:
        await start_fleet(pilot, app)
        await until(pilot, lambda: isinstance(app.screen, HostKeyModal), "the host key modal")
        asked = app.screen.host
        # Each host by its alias, the address beside it.
        assert asked in [f"{n} (127.0.0.1:{port})" for n in names]
        fingerprint = ssh_server.host_key.get_fingerprint("sha256")
        await until(
            pilot,
            lambda: fingerprint in str(app.screen.query_one("#fingerprint").render()),
            "the key's fingerprint in the modal",
        )
        await pilot.press("t")
        # The other host may have asked too, before the key was in known_hosts.
        await until(
            pilot,
            lambda: isinstance(app.screen, HostKeyModal) or waiting_on(app, "echo over-ssh", 2)(),
            "the second host's key or both hosts waiting",
        )
        if isinstance(app.screen, HostKeyModal):
            assert app.screen.host != asked
            await pilot.press("t")
        await until(pilot, waiting_on(app, "echo over-ssh", 2), "echo waiting on both hosts")
        await pilot.press("A")
        await until(pilot, fleet_done(app), "the summary")
        screen = fleet_screen(app)
        assert screen.controller.result.counts == {"done": 2}
        for name in names:
            view = await shown(pilot, screen, name)
            output = "\n".join(view.cmd_steps[1].query_one("#output").lines)
            assert "over-ssh" in output
    assert f"[127.0.0.1]:{port}" in (ssh_home / ".ssh" / "known_hosts").read_text()


async def test_a_dead_host_in_a_fleet_over_ssh_is_unreachable_and_the_others_run(
    llm: ScriptedLLM, ssh_home: Path, ssh_server: InProcessSSHServer, ssh_keys: Keys
) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        dead_port = probe.getsockname()[1]
    dead = f"Host hdead\n  HostName 127.0.0.1\n  Port {dead_port}\n  User tester\n"
    write_client_home(ssh_home, ssh_server, ssh_keys[1], extra_config=dead)
    llm.default = lambda r: "[CMD] echo alive" if len(r.messages) < 4 else "[DONE] ok"
    names = ["inproc", "hdead"]
    app = make_app(llm.base_url, ssh_home, params={"unit": "x"}, hosts=host_choices(ssh_home))
    app.config.fleet = [HostSpec(n, n) for n in names]
    async with app.run_test(size=(140, 45)) as pilot:
        await start_fleet(pilot, app)
        screen = fleet_screen(app)
        await until(pilot, lambda: screen.table.state_of("hdead") == "unreachable", "hdead down")
        await until(pilot, waiting_on(app, "echo alive", 1), "echo waiting on the live host")
        await pilot.press("A")
        await until(pilot, fleet_done(app), "the summary")
        assert screen.controller.result.counts == {"done": 1, "unreachable": 1}
        # The dead host's view, built from its packed story, says why, and what to check.
        view = await shown(pilot, screen, "hdead")
        assert view.result.status == "unreachable"
        assert f"127.0.0.1:{dead_port}" in view.result.message, view.result.message
        assert "echo alive" not in {step.command for step in view.cmd_steps.values()}
    # Only the live host spoke to the LLM.
    assert len(llm.requests) == 2
