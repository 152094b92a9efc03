"""Key passphrases typed during a run, kept in memory only, so a reconnect does not ask again."""

from __future__ import annotations

from collections.abc import Callable
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

    def typed(self) -> dict[Path, str]:
        """A copy of what is held (for a process of this session that opens keys too)."""
        return dict(self._typed)

    def __repr__(self) -> str:
        return f"Passphrases({len(self._typed)} key(s))"


class EncryptedKeys:
    """Which private key files need a passphrase, each file read once per run (again only
    when it changes): a fleet's thousand connects share one read of each key."""

    def __init__(self) -> None:
        self._seen: dict[Path, tuple[tuple[int, int, int], bool]] = {}

    def need(self, path: Path, check: Callable[[Path], bool]) -> bool:
        """`check(path)`, or what it said for the file as it is now."""
        try:
            st = path.stat()
        except OSError:
            return check(path)  # missing or unreadable: check says what that means
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        cached = self._seen.get(path)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        answer = check(path)
        self._seen[path] = (stamp, answer)
        return answer
