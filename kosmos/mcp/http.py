"""`kosmos mcp --http ADDR:PORT`: streamable HTTP behind a bearer token.

The token comes from the environment (`KOSMOS_MCP_TOKEN`) or a file (`--token-file`), never
from the command line, where every user of the machine could read it in the process list.
Every HTTP request must carry `Authorization: Bearer TOKEN`; anything else gets 401 before
it reaches the MCP server. There is no HTTP without a token, loopback included.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer

from kosmos.errors import UsageError

TOKEN_ENV = "KOSMOS_MCP_TOKEN"
DEFAULT_HOST = "127.0.0.1"
# A session nobody has used this long is closed, and with it what it still runs.
SESSION_IDLE_TIMEOUT_S = 30 * 60
# On Ctrl-C or SIGTERM, how long open requests get to end before they are cut.
SHUTDOWN_TIMEOUT_S = 10

log = logging.getLogger("kosmos.mcp")


def parse_address(text: str) -> tuple[str, int]:
    """`ADDR:PORT`, `[::1]:PORT` or a bare `PORT` (loopback)."""
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = DEFAULT_HOST, text
    host = host.strip("[]") or DEFAULT_HOST
    try:
        number = int(port)
    except ValueError:
        number = -1
    if not 0 <= number <= 65535:
        raise UsageError(
            f"--http {text}: expected ADDR:PORT with a port from 0 to 65535, "
            "e.g. --http 127.0.0.1:8765"
        )
    return host, number


def read_token(env: Mapping[str, str], token_file: Path | None) -> str:
    """The bearer token clients must send; UsageError naming where to put one."""
    if token_file is not None:
        try:
            token = token_file.read_text(encoding="utf-8").strip()
        except OSError as e:
            raise UsageError(f"--token-file {token_file}: {e.strerror or e}") from None
        if not token:
            raise UsageError(f"--token-file {token_file}: the file is empty; put the token in it")
        return token
    token = env.get(TOKEN_ENV, "").strip()
    if not token:
        raise UsageError(
            f"kosmos mcp --http needs a bearer token: set {TOKEN_ENV}, or pass --token-file "
            "FILE (make one with: openssl rand -hex 32 > FILE)"
        )
    return token


class BearerAuth:
    """ASGI middleware: an HTTP request without `Authorization: Bearer TOKEN` gets 401."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.expected = b"Bearer " + token.encode("utf-8")

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or ()).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                await self._refuse(send, "missing" if not given else "wrong")
                return
        await self.app(scope, receive, send)

    async def _refuse(self, send: Any, what: str) -> None:
        body = json.dumps(
            {"error": f"{what} bearer token; send Authorization: Bearer TOKEN"}
        ).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"www-authenticate", b'Bearer realm="kosmos"'),
            (b"content-length", str(len(body)).encode()),
        ]
        await send({"type": "http.response.start", "status": 401, "headers": headers})
        await send({"type": "http.response.body", "body": body})


async def serve_http(server: MCPServer, host: str, port: int, token: str) -> None:
    """Serve streamable HTTP on host:port until Ctrl-C or SIGTERM; says where on stderr."""
    import uvicorn

    app = BearerAuth(
        server.streamable_http_app(host=host, session_idle_timeout=SESSION_IDLE_TIMEOUT_S),
        token,
    )
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_config=None,
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=SHUTDOWN_TIMEOUT_S,
    )
    userver = uvicorn.Server(config)
    task = asyncio.ensure_future(userver.serve())
    while not userver.started and not task.done():
        await asyncio.sleep(0.02)
    if userver.started:
        bound = userver.servers[0].sockets[0].getsockname()[1]
        shown = f"[{host}]" if ":" in host else host
        print(f"kosmos mcp: serving http://{shown}:{bound}/mcp", file=sys.stderr, flush=True)
    await task
