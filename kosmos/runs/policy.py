"""Which approval policy a host runs under: the flag, the host's config, `--yes`, or ask."""

from __future__ import annotations

from kosmos.config import Settings
from kosmos.engine.approval import Policy


def resolve_policy(
    settings: Settings,
    host: str,
    *,
    flag: Policy | None = None,
    yes: bool = False,
    target: str | None = None,
) -> tuple[Policy, str]:
    """`--policy` > the host's policy in config > `--yes` (auto) > ask; with where it came from.

    Config may name the host as it is typed, without its user, or without its port too; a
    fleet host is looked up by its name and then by its `target`. A host pinned in config
    (say, production at read-only) stays pinned under `--yes`; only `--policy` overrides it.
    """
    if flag:
        return flag, "--policy"
    for typed in dict.fromkeys(t for t in (host, target) if t):
        bare = typed.split("@", 1)[-1]
        for name in dict.fromkeys((typed, bare, bare.rsplit(":", 1)[0])):
            pinned = settings.hosts.get(name)
            if pinned is not None and pinned.policy:
                return pinned.policy, f"config hosts.{name}.policy"
    if yes:
        return "auto", "--yes"
    return "ask", "default"
