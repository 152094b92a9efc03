"""`kosmos hosts [--check]`: the aliases in ~/.ssh/config, and whether each one answers."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path

from kosmos.config import Settings
from kosmos.engine.guard import visible
from kosmos.errors import EXIT_HOST, HostError
from kosmos.hosts.connect import ConnectFailed
from kosmos.hosts.hostkeys import HostKeyChanged, HostKeyRevoked, HostKeyUnknown
from kosmos.hosts.lock import PROBE_MARK
from kosmos.hosts.osname import os_name
from kosmos.hosts.own import run_own
from kosmos.hosts.ssh import SSHRunner
from kosmos.hosts.sshconfig import SSHConfigFile, local_user
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


def table(rows: list[HostCheck]) -> str:
    header = ("HOST", "REACHABLE", "AUTH", "OS", "LATENCY", "LOCK")
    cells = [
        (
            r.alias,
            r.reachable,
            r.auth,
            r.os,
            f"{r.latency_ms:.0f} ms" if r.latency_ms is not None else "-",
            r.lock,
        )
        for r in rows
    ]
    rows_text = [header, *[tuple(visible(c, one_line=True) for c in row) for row in cells]]
    widths = [max(len(str(c[i])) for c in rows_text) for i in range(len(header))]
    lines = [
        "  ".join(str(c[i]).ljust(widths[i]) for i in range(len(header))).rstrip()
        for c in rows_text
    ]
    return "\n".join(lines)


def hosts_command(settings: Settings, *, home: Path, check: bool) -> int:
    config = home / ".ssh" / "config"
    ssh_config = SSHConfigFile(config, local_user())
    aliases = ssh_config.aliases()
    if not aliases:
        print(f"no host aliases in {config}; add `Host NAME` entries, or pass --host user@host")
        return 0
    if not check:
        for alias in aliases:
            print(visible(alias, one_line=True))
        return 0
    rows = asyncio.run(check_all(aliases, settings, ssh_config))
    print(table(rows))
    for row in rows:
        if row.error:
            print(visible(row.error))
    return 0 if all(r.ok for r in rows) else EXIT_HOST
