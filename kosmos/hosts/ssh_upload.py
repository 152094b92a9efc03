"""Putting a skill's files on an SSH host: SFTP over the run's own connection.

The files go to a temporary folder beside the destination, which is renamed into place
once every file is written: a destination that exists is complete, and is reused as it is.
Two runs uploading the same skill to one host at once (a fleet whose aliases reach one
account) both end with that one complete folder.
"""

from __future__ import annotations

import asyncio
import contextlib
import posixpath
import secrets
from collections.abc import Sequence

import asyncssh

from kosmos.errors import HostError

__all__ = ["RemoteUploads"]


class RemoteUploads:
    """upload_tree for SSHRunner."""

    name: str
    _epoch: int

    async def _conn(self, epoch: int) -> asyncssh.SSHClientConnection:
        raise NotImplementedError  # SSHRunner's

    async def upload_tree(
        self, dest: str, files: Sequence[tuple[str, bytes, bool]]
    ) -> tuple[str, bool]:
        """Write `files` (relative path, bytes, executable) under `dest` (relative to the login
        directory); (the folder's absolute path, whether anything was sent)."""
        conn = await self._conn(self._epoch)
        try:
            async with conn.start_sftp_client() as sftp:
                home = await sftp.realpath(".")
                final = posixpath.join(str(home), dest)
                if await sftp.isdir(final):
                    return final, False
                await sftp.makedirs(posixpath.dirname(final), exist_ok=True)
                part = f"{final}.part-{secrets.token_hex(4)}"
                try:
                    await self._write(sftp, part, files)
                    try:
                        await sftp.rename(part, final)
                    except asyncssh.SFTPError:
                        if not await sftp.isdir(final):
                            raise
                        await sftp.rmtree(part, ignore_errors=True)  # another run was first
                        return final, False
                except BaseException:
                    with contextlib.suppress(Exception):
                        await asyncio.shield(sftp.rmtree(part, ignore_errors=True))
                    raise
                return final, True
        except (asyncssh.Error, OSError) as e:
            raise HostError(
                f"{self.name}: could not upload the skill's files to ~/{dest} by SFTP ({e}); "
                "check that the host's sshd offers the sftp subsystem and that ~/.cache is "
                "writable"
            ) from e

    @staticmethod
    async def _write(
        sftp: asyncssh.SFTPClient, root: str, files: Sequence[tuple[str, bytes, bool]]
    ) -> None:
        await sftp.mkdir(root)
        made = {root}
        for path, data, executable in files:
            target = posixpath.join(root, path)
            folder = posixpath.dirname(target)
            if folder not in made:
                await sftp.makedirs(folder, exist_ok=True)
                made.add(folder)
            async with sftp.open(target, "wb") as f:
                await f.write(data)
            await sftp.chmod(target, 0o755 if executable else 0o644)
