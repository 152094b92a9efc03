"""The HostPrompter seam answered with modal screens (host keys, passwords, passphrases)."""

from __future__ import annotations

import asyncio
from typing import Any

from textual.app import App
from textual.screen import ModalScreen

from kosmos.tui.screens.modals import HostKeyModal, SecretModal


class ModalPrompter:
    """Asks through modals on top of whatever screen is showing; safe to call from any worker."""

    def __init__(self, app: App[Any]) -> None:
        self.app = app

    async def _show(self, screen: ModalScreen[Any]) -> Any:
        done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

        def dismissed(value: Any) -> None:
            if not done.done():
                done.set_result(value)

        self.app.push_screen(screen, callback=dismissed)
        return await done

    async def confirm_host_key(self, host: str, key_type: str, fingerprint: str) -> bool:
        return bool(await self._show(HostKeyModal(host, key_type, fingerprint)))

    async def ask_secret(self, prompt: str) -> str | None:
        return await self._show(SecretModal(prompt))
