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
    # with programs that open no socket of their own (`catalogue.NO_SOCKETS`)
    "systemctl status nginx | grep Active",
    "ss -tlnp | grep :80 | awk '{print $4}' | sort -u | head -n 5",
    "(ss -lntH 2>/dev/null || netstat -lnt 2>/dev/null) | wc -l",
    'x=$(systemctl is-active nginx); echo "$x"',
    "for u in nginx ssh; do systemctl is-active nginx; done",
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

# The socket exception holds for the whole line, so a line with a service read gets it only
# when no other program in it could open a unix or netlink socket of its own choosing.
MIXED = [
    "ss -s; openssl s_client -connect 127.0.0.1:443 </dev/null",
    "ss -s; curl -s http://127.0.0.1/",
    "systemctl status nginx | grep x; dig example.com",
    "sh -c 'ss -s; curl -s http://x/'",
    "find . -maxdepth 0 -exec ip route \\; -exec curl -s http://x/ \\;",
    "f() { curl -s http://x/; }; ss -s; f",
    'echo "$(curl -s http://x/)"; ss -s',
    "docker ps; ping -c 1 127.0.0.1",
]


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


@pytest.mark.parametrize("command", MIXED)
def test_the_exception_needs_every_program_of_the_line(command: str) -> None:
    for dialect in ("bash", "sh", None):
        result = assess(command, dialect)
        assert result.verdict == "read_only", (dialect, result.reason)
        assert not result.service, (dialect, result.reason)


def test_a_socket_client_is_no_service_read() -> None:
    # the line: openssl's -unix is a write of its own now (as curl --unix-socket)
    result = assess("ss -s; openssl s_client -unix /run/svc.sock </dev/null")
    assert result.verdict == "write", result.reason
    assert "-unix" in result.reason
