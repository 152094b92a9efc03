"""The hosts the sidebar offers: `local`, then the aliases of ~/.ssh/config."""

from __future__ import annotations

import glob
import os
import shlex
from pathlib import Path

LOCAL = "local"
# ssh_config's Include may nest; a loop of Includes stops here.
MAX_INCLUDE_DEPTH = 8


def ssh_aliases(path: Path) -> list[str]:
    """The `Host` names of an ssh_config file and its Includes; patterns and negations left out."""
    found: list[str] = []
    _read(path, path.parent, found, 0)
    return found


def _read(path: Path, base: Path, found: list[str], depth: int) -> None:
    if depth > MAX_INCLUDE_DEPTH:
        return
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, _, rest = line.replace("=", " ", 1).partition(" ")
        key = key.lower()
        try:
            words = shlex.split(rest, comments=True)
        except ValueError:
            words = rest.split()
        if key == "host":
            for name in words:
                if not any(c in name for c in "*?!") and name not in found:
                    found.append(name)
        elif key == "include":
            for pattern in words:
                full = os.path.expanduser(pattern)
                if not os.path.isabs(full):
                    full = str(base / full)
                for included in sorted(glob.glob(full)):
                    _read(Path(included), base, found, depth + 1)


def host_choices(home: Path, extra: str | None = None) -> list[str]:
    """`local`, the ssh_config aliases, and the host given with --host if it is none of those."""
    hosts = [LOCAL, *(a for a in ssh_aliases(home / ".ssh" / "config") if a != LOCAL)]
    if extra and extra not in hosts:
        hosts.insert(1, extra)
    return hosts
