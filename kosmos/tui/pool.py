"""One runner per host for the whole TUI session, connected on first use and shared by runs."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from kosmos.config import Settings
from kosmos.errors import HostError
from kosmos.hosts.factory import make_runner
from kosmos.hosts.passphrases import Passphrases
from kosmos.hosts.runner import HostPrompter, Runner
from kosmos.hosts.sshconfig import SSHConfigFile, local_user

OnState = Callable[[str, str, str], None]
Notify = Callable[[str], None]


class HostPool:
    """Connects each host once (asking through `prompter`), reports states via `on_state`."""

    def __init__(
        self, settings: Settings, prompter: HostPrompter, on_state: OnState, notify: Notify
    ) -> None:
        self.settings = settings
        self.prompter = prompter
        self.on_state = on_state
        self.notify = notify
        self._runners: dict[str, Runner] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        # ~/.ssh/config, read once for every host the session opens.
        self.ssh_config = SSHConfigFile(Path.home() / ".ssh" / "config", local_user())
        # Key passphrases typed in this session, in memory only: a host connected again (its
        # connection broke, a fleet run) unlocks the key without asking.
        self.passphrases = Passphrases()

    def connected(self, target: str) -> bool:
        return target in self._runners

    async def get(self, target: str) -> Runner:
        """The connected runner for `target`; raises KosmosError (HostError, UsageError)."""
        lock = self._locks.setdefault(target, asyncio.Lock())
        async with lock:
            runner = self._runners.get(target)
            if runner is not None:
                return runner
            self.on_state(target, "connecting", "")
            try:
                runner = make_runner(
                    target,
                    self.settings,
                    prompter=self.prompter,
                    notify=self.notify,
                    ssh_config=self.ssh_config,
                    passphrases=self.passphrases,
                )
                await runner.connect()
            except HostError as e:
                self.on_state(target, "failed", str(e))
                raise
            except Exception as e:
                self.on_state(target, "failed", str(e))
                raise
            self._runners[target] = runner
            self.on_state(target, "connected", "")
            return runner

    async def drop(self, target: str, *, report: bool = True) -> None:
        """Forget a host's runner (its connection broke), so the next `get` connects again."""
        runner = self._runners.pop(target, None)
        if runner is not None:
            await runner.close()
            if report:
                self.on_state(target, "idle", "")

    async def close(self) -> None:
        """Close every connection (the app is quitting)."""
        for target in list(self._runners):
            await self.drop(target, report=False)
