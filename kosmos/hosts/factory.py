"""Turn a TARGET (`local`, `[user@]host[:port]`, an ssh_config alias) into a Runner."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from kosmos.config import Settings
from kosmos.hosts.environment import command_env, hide_keys
from kosmos.hosts.local import LocalRunner
from kosmos.hosts.lock import DEFAULT_PORTS, LockConfig
from kosmos.hosts.passphrases import Passphrases
from kosmos.hosts.runner import HostPrompter, Runner
from kosmos.hosts.target import LOCAL, parse_target

if TYPE_CHECKING:
    from kosmos.hosts.sshconfig import SSHConfigFile


def make_runner(
    target: str,
    settings: Settings,
    prompter: HostPrompter | None = None,
    notify: Callable[[str], None] | None = None,
    ssh_config: SSHConfigFile | None = None,
    passphrases: Passphrases | None = None,
) -> Runner:
    """The runner for one host. `prompter` asks a person about a new host key or a passphrase
    (None: headless, those are errors); `notify` hears about reconnects and what connecting
    has to say (a host key added, a known_hosts line skipped). `ssh_config` is the run's
    ~/.ssh/config, read once for all its hosts; `passphrases` the keys unlocked in this run
    (in memory only), so that a host connected again is not asked again. Commands get no
    key kosmos knows in their environment, here or forwarded by ssh_config's SendEnv."""
    lock = lock_config(settings, target.strip() or LOCAL)
    secrets = settings.secrets()
    if target.strip() in (LOCAL, ""):
        # Commands here could read kosmos's own first environment: no key is left in it.
        hide_keys(secrets)
        return LocalRunner(env=command_env(os.environ, secrets), lock=lock)
    from kosmos.hosts.ssh import SSHRunner  # asyncssh: only for a run that opens SSH

    return SSHRunner(
        parse_target(target),
        connect_timeout=settings.connect_timeout,
        prompter=prompter,
        notify=notify,
        ssh_config=ssh_config,
        passphrases=passphrases,
        lock=lock,
        secrets=secrets,
    )


def lock_config(settings: Settings, target: str) -> LockConfig:
    """The host's kernel lock settings from config (`hosts: NAME: {lock, lock_ports}`)."""
    found = settings.host(target)
    if found is None:
        return LockConfig()
    entry = found[1]
    ports = entry.lock_ports if entry.lock_ports is not None else DEFAULT_PORTS
    return LockConfig(required=entry.lock == "required", ports=tuple(ports))
