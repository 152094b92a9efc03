"""Paths as the TUI shows them: short, yet unambiguous."""

from __future__ import annotations

from pathlib import Path


def shown_path(path: str | Path) -> str:
    """Relative to the working folder or with `~` for the home folder, whichever is nearer."""
    full = Path(path)
    if not full.is_absolute():
        return str(full)
    bases = sorted(((Path.cwd(), ""), (Path.home(), "~/")), key=lambda b: -len(b[0].parts))
    for base, prefix in bases:
        if full.is_relative_to(base):
            return prefix + str(full.relative_to(base))
    return str(full)
