"""Checking hosts without asking anything: reachable, trusted, OS, kernel lock, latency.

`kosmos hosts --check` prints these as a table; an MCP client's `hosts` tool returns them.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path

from kosmos.config import Settings
from kosmos.errors import HostError
from kosmos.hosts.connect import ConnectFailed
from kosmos.hosts.hostkeys import HostKeyChanged, HostKeyRevoked, HostKeyUnknown
from kosmos.hosts.lock import PROBE_MARK
from kosmos.hosts.osname import os_name
from kosmos.hosts.own import run_own
from kosmos.hosts.ssh import SSHRunner
from kosmos.hosts.sshconfig import SSHConfigFile
from kosmos.hosts.target import parse_target

# What the host runs: `uname -s` (the target OS the memory prompt names, as a run detects
# it), then the distribution's name, else the kernel's release.
OS_COMMAND = 'uname -s; (. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME") || uname -sr'
OS_TIMEOUT = 5.0
# How many hosts are checked at once (as a fleet's --forks bounds a run).
CHECK_FORKS = 100


@dataclass
class HostCheck:
    alias: str
    reachable: str = "no"
    auth: str = "-"
    os: str = "-"
    lock: str = "-"
    latency_ms: float | None = None
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.auth == "ok"


async def check_host(
    alias: str,
    settings: Settings,
    home: Path | None = None,
    ssh_config: SSHConfigFile | None = None,
) -> HostCheck:
    """Connect without asking anything; record reachability, auth result, OS, the kernel lock
    (learnt in the same command as the OS) and latency."""
    row = HostCheck(alias)
    runner = SSHRunner(
        parse_target(alias),
        connect_timeout=settings.connect_timeout,
        prompter=None,
        home=home,
        ssh_config=ssh_config,
        secrets=settings.secrets(),  # kept out of what ssh_config's SendEnv forwards
    )
    started = time.monotonic()
    try:
        await runner.connect()
        row.latency_ms = (time.monotonic() - started) * 1000
        row.reachable, row.auth = "yes", "ok"
        probe = runner.host_lock.probe_script()
        result = await run_own(
            runner, f"{OS_COMMAND}; {probe}", purpose="check", timeout=OS_TIMEOUT
        )
        status = runner.host_lock.learn(result.output.text())
        row.lock = status.describe() if status is not None else "not held: the host did not say"
        lines = [
            line
            for line in result.output.text().strip().splitlines()
            if not line.startswith(PROBE_MARK)
        ]
        target = os_name(lines[0]) if lines else None
        detail = lines[1].strip() if len(lines) > 1 and result.exit_code == 0 else ""
        row.os = " · ".join(part for part in (target or "?", detail) if part)
    except (HostKeyUnknown, HostKeyChanged, HostKeyRevoked) as e:
        row.reachable = "yes"
        row.auth = {HostKeyChanged: "host key changed", HostKeyRevoked: "host key revoked"}.get(
            type(e), "unknown host key"
        )
        row.error = str(e)
    except ConnectFailed as e:
        row.reachable = "no" if e.reason in ("refused", "timeout", "dns", "other") else "yes"
        row.auth = {"auth": "failed", "not_ssh": "not SSH", "host_key": "host key"}.get(
            e.reason, "-"
        )
        row.error = str(e)
    except HostError as e:
        row.error = str(e)
    finally:
        await runner.close()
    return row


async def check_all(
    aliases: list[str], settings: Settings, ssh_config: SSHConfigFile
) -> list[HostCheck]:
    slots = asyncio.Semaphore(CHECK_FORKS)

    async def one(alias: str) -> HostCheck:
        async with slots:
            return await check_host(alias, settings, ssh_config=ssh_config)

    return list(await asyncio.gather(*(one(a) for a in aliases)))
