"""What `kosmos mcp --http` checks before it loads the MCP SDK: the address and the token.

Both are read and refused (one line, exit 2) in milliseconds, before the seconds the SDK and
its web server take to import.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from kosmos.errors import UsageError

TOKEN_ENV = "KOSMOS_MCP_TOKEN"
DEFAULT_HOST = "127.0.0.1"


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
