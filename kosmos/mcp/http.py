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
from typing import Any

from mcp.server.mcpserver import MCPServer

from kosmos.mcp.address import TOKEN_ENV

__all__ = ["TOKEN_ENV", "BearerAuth", "serve_http"]

# A session nobody has used this long is closed, and with it what it still runs.
SESSION_IDLE_TIMEOUT_S = 30 * 60
# On Ctrl-C or SIGTERM, how long open requests get to end before they are cut.
SHUTDOWN_TIMEOUT_S = 10

log = logging.getLogger("kosmos.mcp")


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
