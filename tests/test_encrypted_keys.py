"""Which key files need a passphrase: read once per run, again when the file changes."""

from __future__ import annotations

import subprocess
from pathlib import Path

from kosmos.hosts.connect import _needs_passphrase
from kosmos.hosts.passphrases import EncryptedKeys
from tests.sshd import keygen


def test_a_key_is_read_once_and_again_when_it_changes(tmp_path: Path) -> None:
    key = keygen(tmp_path / "id_ed25519")
    reads: list[Path] = []

    def check(path: Path) -> bool:
        reads.append(path)
        return _needs_passphrase(path)

    keys = EncryptedKeys()
    assert [keys.need(key, check) for _ in range(50)] == [False] * 50
    assert reads == [key]
    # ssh-keygen -p gives it a passphrase in place: the next connect sees that.
    subprocess.run(["ssh-keygen", "-q", "-p", "-P", "", "-N", "sesame", "-f", str(key)], check=True)
    assert keys.need(key, check) is True and keys.need(key, check) is True
    assert reads == [key, key]
    missing = tmp_path / "gone"
    assert keys.need(missing, check) is False and reads[-1] == missing
