"""TARGET as `ssh` takes it: `local`, `[user@]host[:port]` or an ~/.ssh/config alias."""

from __future__ import annotations

import re
from dataclasses import dataclass

from kosmos.errors import UsageError

LOCAL = "local"

_HOST = re.compile(r"^[\w.%-]+$")


@dataclass(frozen=True)
class Target:
    """Where to connect. `host` may be an ssh_config alias; user and port are given or None."""

    host: str
    user: str | None = None
    port: int | None = None

    @property
    def label(self) -> str:
        """How kosmos names the host in messages and events: what the operator typed."""
        text = f"{self.user}@{self.host}" if self.user else self.host
        if self.port is not None:
            host = f"[{self.host}]" if ":" in self.host else self.host
            text = f"{self.user}@{host}" if self.user else host
            text += f":{self.port}"
        return text


def _port(text: str, target: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise UsageError(f"--host {target}: port must be a number from 1 to 65535, got {text!r}")
    return int(text)


def parse_target(text: str) -> Target:
    """`[user@]host[:port]`, with `[v6addr]:port` for IPv6; raises UsageError on a bad one."""
    raw = text.strip()
    if not raw or raw == LOCAL:
        raise UsageError("--host local needs no SSH; pass a host name or ~/.ssh/config alias")
    user = None
    rest = raw
    if "@" in rest:
        user, rest = rest.rsplit("@", 1)
        if not user:
            raise UsageError(f"--host {text}: empty user before '@'; use user@host")
    port = None
    if rest.startswith("["):
        end = rest.find("]")
        if end < 0:
            raise UsageError(f"--host {text}: missing ']' after an IPv6 address")
        host, after = rest[1:end], rest[end + 1 :]
        if after:
            if not after.startswith(":"):
                raise UsageError(f"--host {text}: expected :PORT after ']'")
            port = _port(after[1:], text)
    elif rest.count(":") == 1:
        host, port_text = rest.split(":")
        port = _port(port_text, text)
    else:
        host = rest  # a bare IPv6 address has several colons and no port
    if not host or not (_HOST.match(host) or ":" in host):
        raise UsageError(
            f"--host {text}: not a host name; use local, [user@]host[:port] or an "
            "alias from ~/.ssh/config"
        )
    return Target(host=host, user=user, port=port)
