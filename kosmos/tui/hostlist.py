"""The hosts the sidebar offers: `local`, then the aliases of ~/.ssh/config."""

from __future__ import annotations

from pathlib import Path

from kosmos.hosts.sshconfig import SSHConfigFile, local_user
from kosmos.hosts.target import LOCAL


def host_choices(home: Path, extra: str | None = None) -> list[str]:
    """`local`, the ssh_config aliases, and the host given with --host if it is none of those."""
    aliases = SSHConfigFile(home / ".ssh" / "config", local_user()).aliases()
    hosts = [LOCAL, *(a for a in aliases if a != LOCAL)]
    if extra and extra not in hosts:
        hosts.insert(1, extra)
    return hosts
