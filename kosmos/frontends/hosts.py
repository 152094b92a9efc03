"""`kosmos hosts [--check]`: the aliases in ~/.ssh/config, and whether each one answers."""

from __future__ import annotations

import asyncio
from pathlib import Path

from kosmos.config import Settings
from kosmos.engine.guard import visible
from kosmos.errors import EXIT_HOST
from kosmos.hosts.sshconfig import SSHConfigFile, local_user
from kosmos.runs.hostcheck import HostCheck, check_all


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
