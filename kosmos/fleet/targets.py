"""Which hosts a fleet run covers: --host, --hosts over ~/.ssh/config aliases, or -i INVENTORY."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

from kosmos.errors import UsageError
from kosmos.fleet.inventory import load_inventory
from kosmos.hosts.sshconfig import SSHConfigFile


@dataclass(frozen=True)
class HostSpec:
    """One host of a fleet: `name` as the operator knows it, `target` as the runner dials it."""

    name: str
    target: str


def resolve_hosts(
    hosts: Sequence[str],
    pattern: str | None,
    *,
    inventory: Path | None,
    ssh_config: SSHConfigFile,
) -> list[HostSpec]:
    """The hosts of a run, each once, in the order given: --host values first, then --hosts.

    With an inventory, `--hosts` is an Ansible pattern over it (default: all of its hosts);
    without one, a glob (or several, comma-separated) over the ssh_config aliases.
    """
    specs: dict[str, HostSpec] = {}
    for target in hosts:
        specs.setdefault(target, HostSpec(target, target))
    if inventory is not None:
        inv = load_inventory(inventory)
        chosen = inv.select(pattern or "all")
        if not chosen:
            groups = ", ".join(g for g in inv.groups if g not in ("all", "ungrouped")) or "none"
            raise UsageError(
                f"--hosts {pattern or 'all'!r} matches no host in {inventory} (groups: {groups})"
            )
        for name in chosen:
            host = inv.resolve(name)
            specs.setdefault(name, HostSpec(name, host.target))
    elif pattern is not None:
        aliases = ssh_config.aliases()
        globs = [p.strip() for p in pattern.split(",") if p.strip()]
        chosen = [a for a in aliases if any(fnmatchcase(a, g) for g in globs)]
        if not chosen:
            known = ", ".join(aliases[:10]) + (", …" if len(aliases) > 10 else "")
            raise UsageError(
                f"--hosts {pattern!r} matches no alias in {ssh_config.path} "
                f"(aliases: {known or 'none'}); for an inventory group add -i INVENTORY"
            )
        for alias in chosen:
            specs.setdefault(alias, HostSpec(alias, alias))
    return list(specs.values())
