"""`kosmos mcp`: resolve what it was started with, then serve on stdio or streamable HTTP."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from msgspec.structs import replace

from kosmos.config import Settings
from kosmos.engine.approval import Policy
from kosmos.mcp.options import DEFAULT_POLICY, McpOptions


@dataclass(frozen=True)
class McpRequest:
    """What `kosmos mcp` was asked for on the command line."""

    http: str | None = None
    token_file: Path | None = None
    policy: Policy | None = None
    skills_dirs: Sequence[Path] = ()
    inventory: Path | None = None
    forks: int = 10
    log: Path | None = None
    verbose: bool = False
    transcript_dir: Path | None = None


def mcp_command(
    request: McpRequest, settings: Settings, *, env: Mapping[str, str], home: Path
) -> int:
    """Serve until the client leaves (stdio) or Ctrl-C / SIGTERM (HTTP); 0 then."""
    from kosmos.mcp.http import parse_address, read_token, serve_http
    from kosmos.mcp.server import build_server, configure_logging, serve_stdio

    address = parse_address(request.http) if request.http is not None else None
    token = read_token(env, request.token_file) if address is not None else None
    if request.transcript_dir is not None:
        settings = replace(settings, transcript_dir=request.transcript_dir)
    options = McpOptions(
        settings=settings,
        env=dict(env),
        home=home,
        policy=request.policy or DEFAULT_POLICY,
        skills_dirs=tuple(request.skills_dirs),
        inventory=request.inventory,
        forks=request.forks,
    )
    options.hosts_inventory  # noqa: B018 - a bad inventory fails now, not at the first call
    configure_logging(str(request.log) if request.log else None, verbose=request.verbose)
    server = build_server(options)
    if address is None:
        asyncio.run(serve_stdio(server))
    else:
        assert token is not None
        asyncio.run(serve_http(server, *address, token))
    return 0
