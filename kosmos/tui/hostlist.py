"""The hosts the sidebar offers: `local`, then the aliases of ~/.ssh/config."""

from __future__ import annotations

from pathlib import Path

from kosmos.hosts.target import LOCAL, config_aliases


def host_choices(home: Path, extra: str | None = None) -> list[str]:
    """`local`, the ssh_config aliases, and the host given with --host if it is none of those."""
    hosts = [LOCAL, *(a for a in config_aliases(home / ".ssh" / "config") if a != LOCAL)]
    if extra and extra not in hosts:
        hosts.insert(1, extra)
    return hosts
