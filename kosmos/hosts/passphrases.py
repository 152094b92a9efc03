"""Key passphrases typed during a run, kept in memory only, so a reconnect does not ask again."""

from __future__ import annotations

from pathlib import Path


class Passphrases:
    """What the operator typed to unlock each key file, for this run only.

    Never written anywhere: no file, log or transcript; the repr shows only which keys it holds.
    """

    def __init__(self) -> None:
        self._typed: dict[Path, str] = {}

    def get(self, path: Path) -> str | None:
        return self._typed.get(path)

    def keep(self, path: Path, passphrase: str) -> None:
        self._typed[path] = passphrase

    def forget(self, path: Path) -> None:
        """The passphrase no longer opens the key (the file changed): ask again next time."""
        self._typed.pop(path, None)

    def __repr__(self) -> str:
        return f"Passphrases({len(self._typed)} key(s))"
