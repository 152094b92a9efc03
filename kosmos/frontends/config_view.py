"""`kosmos config`: the merged settings, one `key=value` a line, and with --show-origin where
each came from (`default`, the file, `env AI_MODEL`, `--model`), as `git config --list
--show-origin` shows git's. Secrets show as `****`, never their value."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from kosmos.config import Secret, Settings
from kosmos.config_layers import DEFAULT, Key, Origin

MASK = "****"
# What kosmos derives itself: no setting a user gives.
_DERIVED = ("base_url_from", "api_key_from")


def _builtin(value: Any) -> Any:
    if isinstance(value, Secret):
        return MASK
    if isinstance(value, Path):
        return str(value)
    raise NotImplementedError(type(value).__name__)


def _masked(value: Any, secrets: list[str]) -> Any:
    """`value` with every secret in it (a key, a password in a URL) replaced by the mask."""
    if isinstance(value, dict):
        return {k: _masked(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [_masked(v, secrets) for v in value]
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, MASK)
    return value


def settings_tree(settings: Settings) -> dict[str, Any]:
    """The settings as nested builtins, secrets masked, what kosmos derives left out."""
    tree = msgspec.to_builtins(settings, enc_hook=_builtin)
    for key in _DERIVED:
        tree.pop(key, None)
    masked: dict[str, Any] = _masked(tree, sorted(settings.secrets(), key=len, reverse=True))
    return masked


def _leaves(tree: Mapping[str, Any], prefix: Key = ()) -> list[tuple[Key, Any]]:
    """Every value set, by its place: mappings walked into, unset values (None) left out."""
    found: list[tuple[Key, Any]] = []
    for key, value in tree.items():
        path = (*prefix, str(key))
        if isinstance(value, dict):
            found.extend(_leaves(value, path))
        elif value is not None:
            found.append((path, value))
    return found


def origin_of(origins: Mapping[Key, Origin], path: Key) -> str:
    """Where the value at `path` came from: its own origin, else the mapping's that holds it."""
    for end in range(len(path), 0, -1):
        found = origins.get(path[:end])
        if found is not None:
            return str(found)
    return DEFAULT


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def config_command(
    settings: Settings,
    origins: Mapping[Key, Origin],
    *,
    show_origin: bool = False,
    json_out: bool = False,
) -> int:
    """Print the merged settings (and their origins); 0."""
    tree = settings_tree(settings)
    leaves = _leaves(tree)
    if json_out:
        where = {".".join(path): origin_of(origins, path) for path, _ in leaves}
        print(json.dumps({"settings": tree, "origins": where}, ensure_ascii=False, indent=2))
        return 0
    rows = [(origin_of(origins, path), ".".join(path), _text(value)) for path, value in leaves]
    width = max((len(origin) for origin, _, _ in rows), default=0)
    out = sys.stdout
    for origin, key, value in rows:
        shown = f"{key}={value}"
        out.write(f"{origin.ljust(width)}  {shown}\n" if show_origin else f"{shown}\n")
    out.flush()
    return 0
