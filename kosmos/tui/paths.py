"""Paths as the TUI shows them: short, yet unambiguous."""

from __future__ import annotations

from pathlib import Path


def shown_path(path: str | Path) -> str:
    """Relative to the working folder when inside it, else with `~` for the home folder."""
    full = Path(path)
    if not full.is_absolute():
        return str(full)
    for base, prefix in ((Path.cwd(), ""), (Path.home(), "~/")):
        if full.is_relative_to(base):
            return prefix + str(full.relative_to(base))
    return str(full)
