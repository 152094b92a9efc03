"""Ask a program which of its options take a value: run `prog -X` and `prog --name` alone,
as the shell judge's throwaway user, and read getopt's complaint that an argument is missing.

`long_options` lists the long options a program's `--help` names; `takes_value` asks the
program itself about each.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Iterable

# getopt, argp, cobra, git's parse-options, curl, mawk, dpkg and apt, each in its words.
MISSING = re.compile(
    r"requires an argument|requires a value|requires parameter|needs an argument"
    r"|lacks argument|takes a value|missing (?:command )?argument|expects an? \w+"
    r"|requires \d+ argument|no \w+(?: \w+)? given for",
    re.IGNORECASE,
)
LETTERS = string.ascii_letters + string.digits

Run = Callable[[list[str]], str]


def long_options(run: Run, prog: list[str], *help_args: str) -> list[str]:
    text = run([*prog, *(help_args or ("--help",))])
    return sorted(set(re.findall(r"(?<![\w-])--([a-z0-9][a-z0-9_-]*[a-z0-9])", text)))


def takes_value(run: Run, prog: list[str], options: Iterable[str]) -> set[str]:
    """Which of `options` (as `-X` or `--name`) the program says need a value."""
    return {option for option in options if MISSING.search(run([*prog, option]))}


def short_values(run: Run, prog: list[str]) -> str:
    return "".join(sorted(o[1] for o in takes_value(run, prog, (f"-{c}" for c in LETTERS))))


def long_values(run: Run, prog: list[str], *help_args: str) -> set[str]:
    names = long_options(run, prog, *help_args)
    return {o[2:] for o in takes_value(run, prog, (f"--{n}" for n in names))}


UNKNOWN = re.compile(
    r"invalid option|unrecognized option|unknown (?:shorthand )?(?:flag|option|switch)"
    r"|not an option|illegal option|Bad flag|Incorrect parameters|no such option"
    r"|unknown argument|ambiguous|is unknown",
    re.IGNORECASE,
)


def mismatches(
    run: Run, prog: list[str], table: tuple[str, tuple[str, ...]], *help_args: str
) -> list[str]:
    """Where `table` (short options, long options that take a value) and the program differ:
    an option the program reads a value for that the table misses, or one the table says
    takes a value that the program knows as a plain flag. An option the program does not
    know at all is no mismatch: the table also serves other versions."""
    short, long = table
    out = []
    for c in LETTERS:
        said = run([*prog, f"-{c}"])
        needs = bool(MISSING.search(said))
        if needs and c not in short:
            out.append(f"-{c} takes a value")
        elif c in short and not needs and not UNKNOWN.search(said):
            out.append(f"-{c} takes no value")
    names = set(long_options(run, prog, *help_args)) | set(long)
    for name in sorted(names):
        said = run([*prog, f"--{name}"])
        needs = bool(MISSING.search(said))
        if needs and name not in long:
            out.append(f"--{name} takes a value")
        elif name in long and not needs and not UNKNOWN.search(said):
            out.append(f"--{name} takes no value")
    return out
