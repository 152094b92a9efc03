"""Reads through a local service's socket are marked as such (`Assessment.service`)."""

from __future__ import annotations

import pytest

from kosmos.safety import assess

SERVICE_READS = [
    "systemctl status nginx --no-pager",
    "systemctl list-units --failed",
    "ss -tlnp",
    "ip addr show",
    "docker ps -a",
    "podman ps",
    "docker logs --tail 100 web",
    "loginctl list-sessions",
    "hostnamectl",
    "timedatectl status",
    "ls /etc | grep x; systemctl is-active sshd",
    "sh -c 'docker inspect web'",
    "timeout 5 ss -s",
    "find . -maxdepth 0 -exec ip route \\;",
    "busctl list",
    "busctl introspect org.freedesktop.hostname1 /org/freedesktop/hostname1",
    "networkctl status",
    "nmcli",
    "nmcli c s",
    "nmcli -t -f NAME,DEVICE connection show",
    "nmcli dev wifi list",
    "nmcli radio wifi",
    "crictl ps -a",
    "crictl logs abc",
]

# Service clients whose other commands change something, or show secrets.
SERVICE_WRITES = [
    "busctl call org.x /x org.x.Y Method",
    "busctl --address=unix:path=/run/docker.sock list",
    "networkctl reload",
    "nmcli con del x",
    "nmcli c up x",
    "nmcli r wifi off",
    "nmcli networking off",
    "nmcli g hostname web01",
    "nmcli dev wifi connect x",
    "nmcli dev wifi show-password",
    "nmcli -s connection show x",
    "crictl exec x ls",
    "crictl rm x",
]

PLAIN_READS = ["ls -la", "cat /etc/hostname", "ps aux | grep x", "curl -s https://example.com"]


@pytest.mark.parametrize("command", SERVICE_READS)
def test_a_read_through_a_service_says_so(command: str) -> None:
    result = assess(command)
    assert result.verdict == "read_only", result.reason
    assert result.service


@pytest.mark.parametrize("command", SERVICE_WRITES)
def test_their_other_commands_are_writes(command: str) -> None:
    assert assess(command).verdict == "write"


@pytest.mark.parametrize("command", PLAIN_READS)
def test_a_plain_read_does_not(command: str) -> None:
    result = assess(command)
    assert result.verdict == "read_only", result.reason
    assert not result.service
