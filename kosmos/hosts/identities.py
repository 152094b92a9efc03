"""The client's side of ssh_config: which agent to ask and which keys and certificates to offer.

asyncssh offers IdentityFile keys with their certificates (CertificateFile, or `KEY-cert.pub`
beside the key) and honours IdentitiesOnly. kosmos reads the same keywords where it handles
keys itself (a passphrase typed for an encrypted key), and resolves IdentityAgent as ssh does:
asyncssh takes `SSH_AUTH_SOCK` and `$VARIABLE` for file names.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from pathlib import Path

from kosmos.hosts.sshlib import asyncssh

from asyncssh.config import SSHClientConfig

from kosmos.hosts.keywords import expand_home, words_option

# The keys `ssh` tries by default, in its order.
DEFAULT_KEYS = ("id_ed25519", "id_ecdsa", "id_ecdsa_sk", "id_ed25519_sk", "id_rsa", "id_dsa")
# IdentityAgent's value that means "the socket SSH_AUTH_SOCK names" (ssh_config(5)).
AUTH_SOCK = "SSH_AUTH_SOCK"


def agent_path(config: SSHClientConfig, environ: Mapping[str, str], home: Path) -> str | None:
    """The agent socket to use, or None for no agent (`IdentityAgent none`, or nothing set)."""
    value = config.get("IdentityAgent", ())
    if value == ():
        return environ.get(AUTH_SOCK) or None
    if value is None:  # asyncssh reads `none` as None
        return None
    text = str(value)
    if text == AUTH_SOCK:
        return environ.get(AUTH_SOCK) or None
    if text.startswith("$"):  # `${NAME}` was expanded by the parser; `$NAME` is ssh's own form
        return environ.get(text[1:]) or None
    return str(expand_home(text, home))


def identity_files(config: SSHClientConfig, ssh_dir: Path, home: Path) -> list[Path]:
    """IdentityFile's keys that exist, else the default ones."""
    configured = words_option(config, "IdentityFile")
    files = [expand_home(f, home) for f in configured] or [ssh_dir / name for name in DEFAULT_KEYS]
    return [f for f in files if f.is_file()]


def present_identities(config: SSHClientConfig, home: Path) -> list[str] | tuple[()]:
    """What to give asyncssh as `client_keys` when kosmos leaves the keys to it: () to have it
    read IdentityFile itself, or, where some of the keys IdentityFile names are missing, the
    ones that exist. ssh skips a missing IdentityFile (a dotfiles `Host *` naming id_rsa and
    id_ed25519 where only one exists); asyncssh would fail the connection on it."""
    configured = [expand_home(f, home) for f in words_option(config, "IdentityFile")]
    if all(f.is_file() for f in configured):
        return ()
    return [str(f) for f in configured if f.is_file()]


def certificates(config: SSHClientConfig, home: Path) -> list[asyncssh.SSHCertificate]:
    """CertificateFile's certificates that can be read (ssh skips the others too)."""
    found: list[asyncssh.SSHCertificate] = []
    for name in words_option(config, "CertificateFile"):
        with contextlib.suppress(OSError, asyncssh.KeyImportError):
            found += asyncssh.load_certificates(str(expand_home(name, home)))
    return found


def identity_blobs(files: list[Path], certs: list[asyncssh.SSHCertificate]) -> set[bytes]:
    """The public keys of the configured identities, for IdentitiesOnly's agent filter."""
    blobs = {cert.key.public_data for cert in certs}
    for path in files:
        for public in (Path(f"{path}.pub"), Path(f"{path}-cert.pub")):
            with contextlib.suppress(OSError, asyncssh.KeyImportError):
                blobs.add(asyncssh.read_public_key(str(public)).public_data)
            with contextlib.suppress(OSError, asyncssh.KeyImportError):
                blobs.add(asyncssh.read_certificate(str(public)).key.public_data)
    return blobs


async def agent_key_blobs(path: str | None) -> list[bytes]:
    """The public keys the agent at `path` holds; none when it cannot be asked."""
    if path is None:
        return []
    agent = None
    with contextlib.suppress(Exception):
        agent = await asyncssh.connect_agent(path)
    if agent is None:
        return []
    try:
        return [key.key_public_data for key in await agent.get_keys()]
    except Exception:  # an agent that does not answer holds no keys
        return []
    finally:
        agent.close()
