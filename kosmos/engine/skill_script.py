"""A skill's own script: a file of the skill's folder that a command line runs.

kosmos puts a skill's files on the host (skills/folder.py) and names their base directory
in the prompt; the skill then says "run `sh BASE/scripts/health.sh`". The safety policy
cannot read that file, so it judges such a line a write; the `read-only` policy lets the
kernel lock decide instead, as the `locked` policy does for every command (engine/approval.py).

Only a plain line counts: one command, its words all literal, that runs one of the skill's
files by its full path, either itself or through an interpreter with no options. Output
thrown away (`2>/dev/null`) or joined (`2>&1`) is allowed; any other redirection, pipe, list
or expansion makes it an ordinary command.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from kosmos.safety.shell import Dialect, Redirect, Script, ShellSyntaxError, Simple, parse

# Interpreters that run the file named as their first operand.
INTERPRETERS = frozenset({"sh", "bash", "dash", "ash", "python3", "python", "perl"})


@dataclass(frozen=True)
class SkillFiles:
    """Where a skill's files are on the host (`base`) and their paths relative to it."""

    base: str
    files: tuple[str, ...]

    def script(self, command: str) -> str | None:
        """The skill file `command` runs (its path in the folder); None for any other line."""
        path = _runs(command)
        if path is None or not path.startswith("/"):
            return None
        wanted = posixpath.normpath(path)
        base = posixpath.normpath(self.base)
        for name in self.files:
            if posixpath.normpath(posixpath.join(base, name)) == wanted:
                return name
        return None


def _runs(command: str) -> str | None:
    """The file a plain one-command line runs, read the same by bash and sh; else None."""
    found: set[str | None] = set()
    dialects: tuple[Dialect, ...] = ("bash", "sh")
    for dialect in dialects:
        try:
            script = parse(command, dialect)
        except ShellSyntaxError:
            return None
        if script.bashisms:
            return None
        found.add(_file_of(script))
    return found.pop() if len(found) == 1 else None


def _file_of(script: Script) -> str | None:
    pipelines = script.pipelines
    if len(pipelines) != 1:
        return None
    pipeline = pipelines[0]
    if pipeline.background or pipeline.negated or len(pipeline.commands) != 1:
        return None
    command = pipeline.commands[0]
    if not isinstance(command, Simple) or command.assigns or not command.words:
        return None
    if not all(_harmless(r) for r in command.redirects):
        return None
    words = command.words
    if any(not w.literal or w.glob or w.tilde or w.brace or w.subs for w in words):
        return None
    first = words[0].text
    if posixpath.basename(first) not in INTERPRETERS:
        return first
    if len(words) < 2 or words[1].text.startswith("-"):
        return None
    return words[1].text


def _harmless(redirect: Redirect) -> bool:
    """Output thrown away or joined to another stream: nothing written anywhere."""
    target = redirect.target
    if not target.literal or target.fd_var or redirect.heredoc is not None:
        return False
    if redirect.op in (">&", "<&"):
        return target.text.isdigit() or target.text == "-"
    return redirect.op in (">", ">>") and target.text == "/dev/null"
