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
    (say, production at read-only) stays pinned under `--yes`; only `--policy` overrides it,
    and then where it came from names the pin it overrode.
    """
    pin = _pinned(settings, host, target)
    if flag:
        if pin is not None and pin[0] != flag:
            # Said where it shows, as for --yes: a flag that overrides a pin is no surprise.
            return flag, f"--policy, over {pin[1]} ({pin[0]})"
        return flag, "--policy"
    if pin is not None:
        return pin
    if yes:
        return "auto", "--yes"
    return "ask", "default"


def _pinned(settings: Settings, host: str, target: str | None) -> tuple[Policy, str] | None:
    """The host's policy in config, and the key that set it, if any."""
    for typed in dict.fromkeys(t for t in (host, target) if t):
        bare = typed.split("@", 1)[-1]
        for name in dict.fromkeys((typed, bare, bare.rsplit(":", 1)[0])):
            pinned = settings.hosts.get(name)
            if pinned is not None and pinned.policy:
                return pinned.policy, f"config hosts.{name}.policy"
    return None
