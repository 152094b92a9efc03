"""Wrappers the fleet puts around each host's parts: a shared, bounded LLM and named runners."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from kosmos.hosts.runner import Runner
from kosmos.llm.provider import Capabilities, Provider, Reply


class BoundedProvider:
    """A provider shared by every host, with at most `limit` requests in flight."""

    def __init__(self, provider: Provider, limit: int) -> None:
        self.inner = provider
        self.name = provider.name
        self.model = provider.model
        self.base_url = provider.base_url
        self._slots = asyncio.Semaphore(limit)

    @property
    def capabilities(self) -> Capabilities:
        # Shared on purpose: a capability one host's request had refused stays off for all.
        return self.inner.capabilities

    async def complete(self, messages: Sequence[Any], **kwargs: Any) -> Reply:
        async with self._slots:
            return await self.inner.complete(messages, **kwargs)

    async def aclose(self) -> None:
        return None


class NamedRunner:
    """A runner shown under the fleet's name for its host (an inventory name, an alias)."""

    def __init__(self, runner: Runner, name: str) -> None:
        self.inner = runner
        self.name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.inner, attr)

    async def connect(self) -> None:
        await self.inner.connect()

    async def run(self, command: str, **kwargs: Any) -> Any:
        return await self.inner.run(command, **kwargs)

    async def read_file(self, path: str, *, timeout: float) -> str | None:
        return await self.inner.read_file(path, timeout=timeout)

    async def read_first(self, paths: Sequence[str], *, timeout: float) -> tuple[str, str] | None:
        return await self.inner.read_first(paths, timeout=timeout)

    async def close(self) -> None:
        await self.inner.close()
