"""kosmos's own commands and reads on a host: the one road to a host besides the approval gate.

Everything kosmos does on a host either passed the approval gate (a skill's `[CMD]` and
`[GET-FILE]`, `run_command` and `read_file` in `kosmos.engine.direct`) or is one of kosmos's
own operations below. Their text is fixed by kosmos, never written by the LLM or the host,
and each has a purpose in `WHY` that says why it needs no person's yes. A test holds the
rest of the package to these two roads: nothing else calls a runner's `run`, `read_file`,
`read_first` or `upload_tree`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Literal

from kosmos.hosts.runner import CommandResult, Runner

Purpose = Literal["sudo probe", "target os", "knowledge", "host skills", "skill folder", "check"]

WHY: Final[dict[Purpose, str]] = {
    "sudo probe": (
        "`sudo -n true` asks sudo whether the approved command that calls it will need a "
        "password; it runs nothing as root"
    ),
    "target os": "`uname -s` names the kernel, so that open_app/close_app become its command",
    "knowledge": "reads the host's knowledge file, which the system prompt carries",
    "host skills": "lists and reads the SKILL.md files in the host's own skills folder",
    "skill folder": (
        "puts a skill's own files where it runs: lists a host-kept skill's folder, or uploads "
        "a local skill's files (by SFTP, else as a tar piped to `tar -x`) to "
        "~/.cache/kosmos/skills, a folder kosmos owns"
    ),
    "check": "`kosmos hosts --check` asks a host its OS once connected",
}


async def run_own(
    runner: Runner, command: str, *, purpose: Purpose, timeout: float
) -> CommandResult:
    """Run one of kosmos's own commands (never the LLM's) without asking; see `WHY`."""
    return await runner.run(command, timeout=timeout)


async def read_own(runner: Runner, path: str, *, purpose: Purpose, timeout: float) -> str | None:
    """Read a file for kosmos itself (`Runner.read_file`), without asking; see `WHY`."""
    return await runner.read_file(path, timeout=timeout)


async def read_first_own(
    runner: Runner, paths: Sequence[str], *, purpose: Purpose, timeout: float
) -> tuple[str, str] | None:
    """The first of `paths` that holds text (`Runner.read_first`), for kosmos itself."""
    return await runner.read_first(paths, timeout=timeout)


async def upload_own(
    runner: Runner,
    root: str,
    files: Sequence[tuple[str, bytes, bool, str | None]],
    *,
    purpose: Purpose,
) -> tuple[str, bool, str | None] | None:
    """Upload files (relative path, bytes, whether it runs, where a link points or None) under
    `root` (relative to the login directory) for kosmos itself: (the folder's absolute path,
    whether anything was sent, a note when the files took the command channel); None for a
    runner on this machine, which has no upload (its files are already here)."""
    upload = getattr(runner, "upload_tree", None)
    if upload is None:
        return None
    placed: tuple[str, bool, str | None] = await upload(root, files)
    return placed
