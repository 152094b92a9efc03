"""Config layering, as git and ssh layer theirs: each file over the one before it, mappings
merged key by key (a later `providers.openai` or `hosts.NAME` sets only the keys it names),
lists and scalars replaced; and where each value came from (`kosmos config --show-origin`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from kosmos.config_keys import KEY_SOURCES
from kosmos.errors import ConfigError

# Where a value came from: the config file (a Path), or `default`, `env NAME`, `--flag`.
Origin = Path | str
# A setting's place in the nested settings: ("providers", "openai", "base_url").
Key = tuple[str, ...]
DEFAULT = "default"


def given_files(paths: Iterable[Path]) -> list[Path]:
    """The `--config` files, in the order given; a missing one is an error (a typo), while an
    empty one, /dev/null included, is an empty layer."""
    found = []
    for path in paths:
        if not path.exists():
            raise ConfigError(f"{path}: config file not found; check --config")
        found.append(path)
    return found


def layer(
    merged: dict[str, Any],
    data: Mapping[str, Any],
    origins: dict[Key, Origin],
    source: Origin,
    prefix: Key = (),
) -> None:
    """Put `data` over `merged` in place, recording `source` as the origin of each value set."""
    for key, value in data.items():
        path = (*prefix, str(key))
        old = merged.get(key)
        if isinstance(value, dict) and isinstance(old, dict):
            merged[key] = dict(old)  # the lower layer's own mapping stays as it was read
            layer(merged[key], value, origins, source, path)
            continue
        forget(origins, path)
        merged[key] = value
        _record(value, path, origins, source)


def _record(value: Any, path: Key, origins: dict[Key, Origin], source: Origin) -> None:
    if isinstance(value, dict) and value:
        for key, inner in value.items():
            _record(inner, (*path, str(key)), origins, source)
    else:
        origins[path] = source


def forget(origins: dict[Key, Origin], path: Key) -> None:
    """Drop the origins of `path` and of everything under it (its value is replaced)."""
    for known in [k for k in origins if k[: len(path)] == path]:
        del origins[known]


def file_of(origins: Mapping[Key, Origin], *keys: Key) -> Path | None:
    """The config file that set the first of `keys` a file set; None when no file did."""
    for key in keys:
        found = origins.get(key)
        if isinstance(found, Path):
            return found
    return None


def read_layers(paths: Sequence[Path], read: Any, origins: dict[Key, Origin]) -> dict[str, Any]:
    """The files `paths`, each read by `read` (one file's mapping), layered in order."""
    merged: dict[str, Any] = {}
    for path in paths:
        data = read(path)
        _one_key_source(merged, data, origins)
        layer(merged, data, origins, path)
    return merged


def _one_key_source(
    merged: dict[str, Any], data: Mapping[str, Any], origins: dict[Key, Origin]
) -> None:
    """A file that says where the API key comes from replaces what the files before it said
    (its api_key_file over their api_key_command), at the top level or in a provider's
    section; only one file naming two sources is an error (`load_settings`)."""
    places: list[tuple[Key, dict[str, Any], Mapping[str, Any]]] = [((), merged, data)]
    sections = data.get("providers")
    below = merged.get("providers")
    for name, section in sections.items() if isinstance(sections, dict) else ():
        if isinstance(below, dict) and isinstance(below.get(name), dict):
            below = merged["providers"] = dict(below)
            below[name] = dict(below[name])
            places.append((("providers", str(name)), below[name], section))
    for prefix, lower, over in places:
        if isinstance(over, dict) and any(over.get(k) is not None for k in KEY_SOURCES):
            for key in KEY_SOURCES:
                if key not in over and key in lower:
                    del lower[key]
                    forget(origins, (*prefix, key))


def provider_section(
    merged: dict[str, Any],
    provider: str,
    origins: dict[Key, Origin],
    provider_defaults: Mapping[str, Mapping[str, str]],
) -> None:
    """Fill base_url, api_key and model from `providers.<provider>`, else that provider's defaults.

    The `providers` section wins over the top-level keys of the files, which apply only to the
    provider the files name (openai unless they say otherwise); environment and flags are
    applied after this and win over both.
    """
    if merged.get("provider", "openai") != provider:
        # Top-level keys belong to the file's own provider; another one starts from its section.
        for key in ("base_url", "model", *KEY_SOURCES):
            merged.pop(key, None)
            forget(origins, (key,))
    section = (merged.get("providers") or {}).get(provider) or {}
    if not isinstance(section, dict):
        return
    if any(section.get(key) is not None for key in KEY_SOURCES):
        # The section's key, from wherever it says, wins over the top level's.
        for key in KEY_SOURCES:
            merged.pop(key, None)
            forget(origins, (key,))
            if section.get(key) is not None:
                merged[key] = section[key]
                origins[(key,)] = origins.get(("providers", provider, key), DEFAULT)
    defaults = provider_defaults.get(provider, {})
    for key in ("base_url", "api_key", "model"):
        if section.get(key) is not None:
            merged[key] = section[key]
            origins[(key,)] = origins.get(("providers", provider, key), DEFAULT)
        elif key not in merged and key in defaults:
            merged[key] = defaults[key]


def file_url_source(
    merged: dict[str, Any], origins: dict[Key, Origin], provider: str
) -> str | None:
    """Which key of which file sets the provider's base URL (as `_provider_section` will
    pick it), or None when no file does."""
    section = (merged.get("providers") or {}).get(provider)
    if isinstance(section, dict) and section.get("base_url") is not None:
        found = file_of(origins, ("providers", provider, "base_url"))
        return f"providers.{provider}.base_url in {found}"
    found = file_of(origins, ("base_url",))
    if found is not None and merged.get("provider", "openai") == provider:
        return f"base_url in {found}"
    return None
