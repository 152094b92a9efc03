"""Whether a command reads a secret-named variable: the data is in `secret_files`
(SECRET_VARIABLE_WORDS and _ENDS, VARIABLE_PRINTERS, ENV_DUMPERS, LINE_KEEPERS).

A variable's value is secret material when its name says it is one (`AWS_SECRET_ACCESS_KEY`,
`DB_PASSWORD`, `GITHUB_TOKEN`, `APP_KEY`). It is read by an expansion of it in any word
(`echo $X`, `"${X}"`, `cat <<< $X`; only `${#X}`, its length, is not), by a program that
prints it by name (`printenv X`, `declare -p X`), and by a dump of the whole environment
(`env`, `printenv`, `set`) piped into a grep aimed at secret names (`env | grep -i token`)
or into a program that may print a value without its name beside it (`env | rev`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from kosmos.safety.secret_files import (
    ENV_DUMPERS,
    LINE_KEEPERS,
    SECRET_GREP_WORDS,
    SECRET_VARIABLE_ENDS,
    SECRET_VARIABLE_WORDS,
    VARIABLE_PRINTERS,
)
from kosmos.safety.shell import Word

__all__ = ["dump_reads_secrets", "env_dump", "expands_secret", "printed_secret", "secret_name"]

# `$NAME`, `${NAME...}`; `${#NAME}` (a length) is told apart by its `#`.
_EXPANDED = re.compile(r"\$(?:\{(#?)([A-Za-z_]\w*)|([A-Za-z_]\w*))")
_GREPS = frozenset({"grep", "egrep", "fgrep"})


def secret_name(name: str) -> bool:
    """Whether a variable's name says it holds a secret."""
    upper = name.upper()
    return any(w in upper for w in SECRET_VARIABLE_WORDS) or upper.endswith(SECRET_VARIABLE_ENDS)


def expands_secret(word: Word) -> str | None:
    """Why a word reads a secret-named variable (it expands it), or None."""
    if word.literal or "$" not in word.text:
        return None
    for m in _EXPANDED.finditer(word.text):
        name = m.group(2) or m.group(3)
        if not m.group(1) and secret_name(name):
            return f"reads a secret-named variable (${name})"
    return None


def printed_secret(name: str, args: Sequence[Word]) -> str | None:
    """Why `name args` prints a secret-named variable by its name (`printenv X`), or None."""
    if name not in VARIABLE_PRINTERS:
        return None
    needs = VARIABLE_PRINTERS[name]
    options = {w.text for w in args if w.text.startswith("-")}
    if needs and not any(o.startswith("-") and set(needs[0][1:]) <= set(o[1:]) for o in options):
        return None
    for word in args:
        if not word.text.startswith("-") and (not word.literal or secret_name(word.text)):
            return f"reads a secret-named variable ({name} {word.raw})"
    return None


def env_dump(name: str, args: Sequence[Word]) -> bool:
    """Whether `name args` prints every variable with its value (`env`, `printenv`, `set`)."""
    if name not in ENV_DUMPERS:
        return False
    operands = [w for w in args if not w.text.startswith("-")]
    if name == "env":
        return not operands or all("=" in w.text for w in operands)
    if name == "set":
        return not args
    if name == "printenv":
        return not operands
    # export, declare, typeset, readonly: alone, or with -p and no names
    return not operands and all("f" not in w.text for w in args)


def dump_reads_secrets(name: str, args: Sequence[Word]) -> str | None:
    """Why `name args`, fed a dump of the environment, reads secret-named variables, or None
    when its output keeps each name beside its value and is not aimed at secrets."""
    if name not in LINE_KEEPERS:
        return f"reads the environment's values without their names (env | {name})"
    if name not in _GREPS:
        return None
    texts = [w.text for w in args]
    if any(t == "--only-matching" or (t[:1] == "-" and t[1:2] != "-" and "o" in t) for t in texts):
        return f"reads the environment's values without their names (env | {name} -o)"
    inverted = any(t == "--invert-match" or (t[:1] == "-" and t[1:2] != "-" and "v" in t)
                   for t in texts)  # fmt: skip
    if inverted:
        return None
    for word in args:
        upper = word.text.upper()
        if not word.literal or any(w in upper for w in SECRET_GREP_WORDS):
            return f"reads secret-named variables (env | {name} {word.raw})"
    return None
