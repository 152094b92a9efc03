"""Putting a skill's files on an SSH host: SFTP over the run's own connection, or, where the
host's sshd offers no sftp subsystem, a tar piped through the command channel (as Ansible
falls back from sftp to piped transfers).

The files go to a temporary folder beside the destination, which is renamed into place
once every file is written: a destination that exists is complete, and is reused as it is.
Two runs uploading the same skill to one host at once (a fleet whose aliases reach one
account) both end with that one complete folder. Only the login user can read what arrives:
files 0600 (0700 when they run), folders 0700; a link stays a link.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import posixpath
import secrets
import shlex
import tarfile
from collections.abc import Sequence

from kosmos.hosts.sshlib import asyncssh

from kosmos.errors import HostError

__all__ = ["RemoteUploads", "UploadFile"]

# (path relative to the folder, bytes, whether it runs, where a link points or None)
UploadFile = tuple[str, bytes, bool, str | None]

FILE_MODE, EXEC_MODE, DIR_MODE = 0o600, 0o700, 0o700

# The same steps as over SFTP, in sh: $1 the destination under the login directory, $2 the
# temporary folder's suffix. It prints the folder's path, then `sent` or `reused`. No single
# quote in it: any login shell passes it to sh as it is.
# Whatever way it ends (the copy already there, no tar, an error), the script reads what is
# left of its input first: a command that exits with input unread closes the channel while
# kosmos may still be sending, and the upload fails with "Channel not open for sending".
_UNTAR = (
    'set -e; trap "cat >/dev/null" EXIT; umask 077; home=$(pwd -P); final=$home/$1; '
    "part=$final.part-$2; "
    'if [ -d "$final" ]; then echo "$final"; echo reused; exit 0; fi; '
    "command -v tar >/dev/null 2>&1 || exit 97; "
    'mkdir -p "${final%/*}"; mkdir "$part"; '
    'if ! tar -x -o -f - -C "$part"; then rm -rf "$part"; exit 98; fi; '
    'if mv -T "$part" "$final" 2>/dev/null; then :; '
    'elif [ -d "$final" ]; then rm -rf "$part"; echo "$final"; echo reused; exit 0; '
    'else mv "$part" "$final"; fi; echo "$final"; echo sent'
)


def tar_of(files: Sequence[UploadFile]) -> bytes:
    """A tar of `files` with the modes they get on the host and no owner of this machine."""
    out = io.BytesIO()
    made: set[str] = set()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path, data, executable, link in files:
            parts = path.split("/")[:-1]
            for i in range(len(parts)):
                folder = "/".join(parts[: i + 1])
                if folder not in made:
                    made.add(folder)
                    tar.addfile(_info(folder, tarfile.DIRTYPE, DIR_MODE))
            if link is not None:
                info = _info(path, tarfile.SYMTYPE, 0o777)
                info.linkname = link
                tar.addfile(info)
            else:
                info = _info(path, tarfile.REGTYPE, EXEC_MODE if executable else FILE_MODE)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def _info(name: str, kind: bytes, mode: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.mode = kind, mode
    return info


def _text(out: bytes | str | None) -> str:
    """A command's output, run with `encoding=None`, as text."""
    return out.decode(errors="replace") if isinstance(out, bytes) else out or ""


class RemoteUploads:
    """upload_tree for SSHRunner."""

    name: str
    _epoch: int

    async def _conn(self, epoch: int) -> asyncssh.SSHClientConnection:
        raise NotImplementedError  # SSHRunner's

    async def upload_tree(
        self, dest: str, files: Sequence[UploadFile]
    ) -> tuple[str, bool, str | None]:
        """Write `files` under `dest` (relative to the login directory); (the folder's absolute
        path, whether anything was sent, a note when the files took the command channel)."""
        conn = await self._conn(self._epoch)
        try:
            try:
                sftp = await conn.start_sftp_client()
            except asyncssh.ChannelOpenError:
                # No sftp subsystem (or a session refused): the command channel still works.
                base, sent = await self._untar(conn, dest, files)
                note = (
                    f"{self.name}: its sshd offers no sftp subsystem, so the skill's files went "
                    "through the command channel (a tar piped to `tar -x`)"
                )
                return base, sent, note
            try:
                base, sent = await self._sftp(sftp, dest, files)
            finally:
                sftp.exit()
                with contextlib.suppress(Exception):
                    await asyncio.shield(sftp.wait_closed())
            return base, sent, None
        except (asyncssh.Error, OSError) as e:
            raise HostError(
                f"{self.name}: could not upload the skill's files to ~/{dest} ({e}); check "
                "that ~/.cache on the host is writable"
            ) from e

    async def _sftp(
        self, sftp: asyncssh.SFTPClient, dest: str, files: Sequence[UploadFile]
    ) -> tuple[str, bool]:
        home = await sftp.realpath(".")
        final = posixpath.join(str(home), dest)
        if await sftp.isdir(final):
            return final, False
        private = asyncssh.SFTPAttrs(permissions=DIR_MODE)
        await sftp.makedirs(posixpath.dirname(final), attrs=private, exist_ok=True)
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

    @staticmethod
    async def _write(sftp: asyncssh.SFTPClient, root: str, files: Sequence[UploadFile]) -> None:
        private = asyncssh.SFTPAttrs(permissions=DIR_MODE)
        await sftp.mkdir(root, attrs=private)
        await sftp.chmod(root, DIR_MODE)  # whatever the server's umask made of it
        made = {root}
        for path, data, executable, link in files:
            target = posixpath.join(root, path)
            folder = posixpath.dirname(target)
            if folder not in made:
                await sftp.makedirs(folder, attrs=private, exist_ok=True)
                made.add(folder)
            if link is not None:
                await sftp.symlink(link, target)
                continue
            mode = EXEC_MODE if executable else FILE_MODE
            async with sftp.open(target, "wb", asyncssh.SFTPAttrs(permissions=mode)) as f:
                await f.write(data)
            await sftp.chmod(target, mode)

    async def _untar(
        self, conn: asyncssh.SSHClientConnection, dest: str, files: Sequence[UploadFile]
    ) -> tuple[str, bool]:
        token = secrets.token_hex(4)
        command = f"exec sh -c {shlex.quote(_UNTAR)} kosmos {shlex.quote(dest)} {token}"
        result = await conn.run(command, input=tar_of(files), encoding=None, check=False)
        lines = _text(result.stdout).split()
        if result.exit_status == 0 and len(lines) >= 2 and lines[-1] in ("sent", "reused"):
            return lines[-2], lines[-1] == "sent"
        why = {97: "it has no `tar` either", 98: "`tar -x` failed there"}.get(
            result.exit_status or 0, _text(result.stderr).strip()
        )
        raise HostError(
            f"{self.name}: could not upload the skill's files to ~/{dest}: its sshd offers no "
            f"sftp subsystem and piping a tar through the command channel failed ({why}); add "
            "`Subsystem sftp internal-sftp` to its sshd_config, or install tar there"
        )
