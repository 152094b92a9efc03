"""What `kosmos mcp` was started with: settings, approval policy, skills folders, inventory."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from kosmos.config import Settings
from kosmos.engine.approval import Policy
from kosmos.fleet.inventory import Inventory, load_inventory
from kosmos.hosts.sshconfig import SSHConfigFile, local_user

# The policy an MCP client's calls run under unless `--policy` says otherwise: it can look,
# inside the kernel lock, but not touch without a person's yes.
DEFAULT_POLICY: Policy = "locked"


@dataclass(frozen=True)
class McpOptions:
    """The server's settings, resolved once when it starts; every tool call reads them."""

    settings: Settings
    env: Mapping[str, str]
    home: Path
    policy: Policy = DEFAULT_POLICY
    skills_dirs: tuple[Path, ...] = ()
    inventory: Path | None = None
    forks: int = 10

    @functools.cached_property
    def ssh_config(self) -> SSHConfigFile:
        return SSHConfigFile(self.home / ".ssh" / "config", local_user())

    @functools.cached_property
    def hosts_inventory(self) -> Inventory | None:
        return load_inventory(self.inventory) if self.inventory is not None else None

    def target(self, host: str) -> str:
        """What kosmos dials for `host`: an inventory host's target, else `host` as given."""
        inv = self.hosts_inventory
        if inv is not None and host in inv.hosts:
            return inv.resolve(host).target
        return host
