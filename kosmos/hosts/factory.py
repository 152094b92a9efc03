"""Turn a TARGET (`local`, `[user@]host[:port]`, an ssh_config alias) into a Runner."""

from __future__ import annotations

from kosmos.config import Settings
from kosmos.errors import UsageError
from kosmos.hosts.local import LocalRunner
from kosmos.hosts.runner import HostPrompter, Runner


def make_runner(target: str, settings: Settings, prompter: HostPrompter | None = None) -> Runner:
    """`prompter` answers host-key and passphrase questions while connecting (None: headless)."""
    if target in ("local", "localhost-local"):
        return LocalRunner()
    raise UsageError(
        f"--host {target}: SSH hosts are not supported by this build; use --host local"
    )
