"""Questions about a parsed command that several rule modules ask."""

from __future__ import annotations

import re
from collections.abc import Sequence

from kosmos.safety.catalogue import (
    DOWNLOADERS,
    HARMLESS_PAGERS,
    HARMLESS_PREFIXES,
    HARMLESS_VARS,
    PYTHON,
    RISKY_LOWER,
    SCRIPTING,
    SHELLS,
)
from kosmos.safety.options import Opts
from kosmos.safety.paths import command_name
from kosmos.safety.shell import Command, Compound, Dialect, Function, Script, Simple, Word


def is_interpreter(name: str) -> bool:
    return name in SHELLS or name in SCRIPTING or bool(PYTHON.fullmatch(name))


def calls(command: Command, name: str) -> bool:
    if isinstance(command, Simple):
        return bool(command.words) and command.words[0].text == name
    if isinstance(command, Function):
        return calls(command.body, name)
    return any(
        calls(c, name) for body in command.bodies for p in body.pipelines for c in p.commands
    )


def mentions_download(word: Word) -> bool:
    """Whether a word's substitutions run curl, wget or fetch anywhere inside."""

    def in_script(script: Script) -> bool:
        return any(in_command(c) for p in script.pipelines for c in p.commands)

    def in_command(command: Command) -> bool:
        if isinstance(command, Function):
            return in_command(command.body)
        if isinstance(command, Compound):
            return any(in_script(b) for b in command.bodies) or any(
                mentions_download(w) for w in command.words
            )
        return any(
            (w.literal and command_name(w.text) in DOWNLOADERS) or mentions_download(w)
            for w in (*command.assigns, *command.words)
        )

    return any(in_script(s) for s in word.subs)


def runs_its_input(name: str, args: Sequence[Word]) -> bool:
    """Whether `name args` executes what it reads on stdin (`sh`, `python3 -`, `sudo bash`)."""
    if name in SHELLS:
        o = Opts(args, "oO", stop=True)
        return not o.has("-c") and (not o.operands or o.has("-s"))
    if PYTHON.fullmatch(name):
        o = Opts(args, "cmWXQ", stop=True)
        return not o.has("-c", "-m") and (not o.operands or o.operands[0].text == "-")
    if name in SCRIPTING:
        o = Opts(args, "eErI", stop=True)
        return not o.has("-e", "-E", "-r", "-p") and (not o.operands or o.operands[0].text == "-")
    if name in ("source", ".", "eval"):
        return any(w.text in ("/dev/stdin", "/proc/self/fd/0", "-") for w in args)
    return False


def risky_name(name: str) -> str | None:
    """Why setting the variable `name` can change what later commands run, or None."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        return f"sets {name}, which the shell evaluates"
    if name in RISKY_LOWER:
        return f"sets {name}, which sends a program's requests through a proxy"
    if any(c.islower() for c in name) or name in HARMLESS_VARS:
        return None  # programs read upper-case names; lower-case ones are the shell's own
    if name.startswith(HARMLESS_PREFIXES):
        return None
    return f"sets {name}, which can change what later commands run"


def risky_assignment(text: str, dialect: Dialect = "bash") -> str | None:
    """An assignment that changes what runs (PATH, IFS, LD_PRELOAD, a pager command...)."""
    target, _, value = text.partition("=")
    target = target.removesuffix("+")
    name, bracket, subscript = target.partition("[")
    if bracket:
        if dialect == "sh":
            return f"{target}=... is a command, not an assignment, in sh"
        if not re.fullmatch(r"\s*\d+\s*\]", subscript):
            return f"bash evaluates the subscript of {target} as arithmetic"
    if name.endswith("PAGER") and value in HARMLESS_PAGERS:
        return None
    return risky_name(name)
