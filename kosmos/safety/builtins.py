"""Shell builtins that change how later commands run.

`hash -p` points a name at another program, `read`/`printf -v`/`getopts`/`mapfile` set
variables (PATH, IFS...), `declare -n` makes one name stand for another, `export`, `alias`,
`enable`, `set`, `shopt`, `trap`, `ulimit` and `umask` change the shell itself. Each is
read-only only in the forms that list or query, or when the variables it sets are harmless
(lower-case names, and the few upper-case ones in the catalogue).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from kosmos.safety.arith import arith_hazard
from kosmos.safety.catalogue import SAFE_SET_FLAGS, SAFE_SET_OPTIONS
from kosmos.safety.options import Opts
from kosmos.safety.queries import risky_name
from kosmos.safety.shell import Word
from kosmos.safety.verdict import Assessment, Context, ro, worse, write

__all__ = ["BUILTINS"]

Handler = Callable[[list[Word], Context], tuple[Assessment, list[Word]]]
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _sets(label: str, names: Sequence[Word]) -> Assessment | None:
    """A write when any of `names` is computed at run time or not a harmless variable."""
    for word in names:
        if not word.literal:
            return write(f"{label} sets a variable named at run time")
        why = risky_name(word.text)
        if why:
            return write(f"{label} {why}")
    return None


def _read(words: list[Word], ctx: Context) -> tuple[Assessment, list[Word]]:
    o = Opts(words[1:], "adinNptu")
    return _sets("read", [*o.operands, *o.values("-a")]) or ro("read"), words


def _mapfile(words: list[Word], ctx: Context) -> tuple[Assessment, list[Word]]:
    name = words[0].text
    o = Opts(words[1:], "dnOsuCc")
    if o.has("-C"):
        return write(f"{name} -C runs a callback"), words
    return _sets(name, o.operands) or ro(name), words


def _printf(words: list[Word], ctx: Context) -> tuple[Assessment, list[Word]]:
    o = Opts(words[1:], "v", stop=True)
    return _sets("printf -v", o.values("-v")) or ro("printf"), words


def _getopts(words: list[Word], ctx: Context) -> tuple[Assessment, list[Word]]:
    operands = [w for w in words[1:] if w.text != "--"]
    return _sets("getopts", operands[1:2]) or ro("getopts"), words


def _declare(words: list[Word], ctx: Context) -> tuple[Assessment, list[Word]]:
    """declare, typeset, local, readonly, export: only listing is read-only."""
    name = words[0].text
    o = Opts(words[1:])
    if o.has("-n"):
        return write(f"{name} -n makes one variable stand for another"), words
    assigns = [w for w in o.operands if "=" in w.text or not w.literal]
    if not assigns and (not o.operands or o.has("-p", "-f", "-F")):
        return ro(name), words  # lists variables or functions
    shown = (assigns or o.operands)[0].raw
    return write(f"{name} {shown} changes a variable for later commands"), words


def _listing_only(name: str, flags: str = "", *, operands: bool = False) -> Handler:
    """A builtin that only reads when it has no operands and no option outside `flags`."""

    def handler(words: list[Word], ctx: Context) -> tuple[Assessment, list[Word]]:
        o = Opts(words[1:])
        bad = next((c for c, _ in o.short if c not in flags), None) or o.longs()[:1]
        if bad or (o.operands and not operands) or not all(w.literal for w in words[1:]):
            return write(f"{name} changes how later commands run"), words
        return ro(name), words

    return handler


def _hash(words: list[Word], ctx: Context) -> tuple[Assessment, list[Word]]:
    o = Opts(words[1:], "p")
    if o.has("-t") and not o.has("-p", "-d", "-r"):
        return ro("hash"), words  # prints where names are found
    if o.short or o.operands:
        return write("hash changes where later commands are found"), words
    return ro("hash"), words


def _set(words: list[Word], ctx: Context) -> tuple[Assessment, list[Word]]:
    args = words[1:]
    i = 0
    while i < len(args):
        word = args[i]
        text = word.text
        if not word.literal:
            return write("set with options computed at run time"), words
        if text in ("-o", "+o"):
            if i + 1 == len(args):
                break  # lists the options
            option = args[i + 1].text
            if option not in SAFE_SET_OPTIONS:
                return write(f"set {text} {option} changes how later commands run"), words
            i += 2
            continue
        if text[:1] in "-+" and len(text) > 1 and text != "--":
            bad = next((c for c in text[1:] if c not in SAFE_SET_FLAGS), None)
            if bad:
                return write(f"set {text[0]}{bad} changes how later commands run"), words
            i += 1
            continue
        return write("set with operands replaces the positional parameters"), words
    return ro("set"), words


def _shopt(words: list[Word], ctx: Context) -> tuple[Assessment, list[Word]]:
    if Opts(words[1:]).has("-s", "-u"):
        return write("shopt -s/-u changes how later commands run"), words
    return ro("shopt"), words


def _trap(words: list[Word], ctx: Context) -> tuple[Assessment, list[Word]]:
    args = [w for w in words[1:] if w.text != "--"]
    if not args or args[0].text in ("-p", "-l"):
        return ro("trap"), words  # lists traps or signals
    if len(args) < 2 or args[0].text == "-":
        return write("trap resets what runs on a signal"), words
    inner = ctx.script_word(args[0], "trap", ctx.dialect)
    return worse(write("trap sets a command to run later"), inner), words


def _ulimit(words: list[Word], ctx: Context) -> tuple[Assessment, list[Word]]:
    if any(not w.text.startswith("-") for w in words[1:]):
        return write("ulimit with a value sets a limit"), words
    return ro("ulimit"), words


def _umask(words: list[Word], ctx: Context) -> tuple[Assessment, list[Word]]:
    if any(not w.text.startswith("-") for w in words[1:]):
        return write("umask with a mode changes the mode of later files"), words
    return ro("umask"), words


def _alias(words: list[Word], ctx: Context) -> tuple[Assessment, list[Word]]:
    if any("=" in w.text or not w.literal for w in words[1:]):
        return write("alias defines a command"), words
    return ro("alias"), words


def _let(words: list[Word], ctx: Context) -> tuple[Assessment, list[Word]]:
    for word in words[1:]:
        reason = arith_hazard(word.text if word.literal else word.raw, word.subs, "let")
        if reason:
            return write(reason), words
    return ro("let"), words


def _unset(words: list[Word], ctx: Context) -> tuple[Assessment, list[Word]]:
    o = Opts(words[1:])
    for word in o.operands:
        if not (word.literal and _NAME.fullmatch(word.text)):
            return write(f"unset {word.raw}: bash evaluates the subscript"), words
        # With PATH unset, bash runs a command found in the working directory; IFS, a
        # pager or a GIT_ variable unset changes what later commands do just as setting it.
        why = None if o.has("-f") else risky_name(word.text)
        if why:
            return write(f"unset {why.removeprefix('sets ')}"), words
        if word.text in ctx.functions:
            # `unset -f f` removes the function; a plain `unset f` may: the next `f` may be
            # the program of that name.
            if o.has("-f"):
                del ctx.functions[word.text]
            elif not o.has("-v"):
                ctx.functions[word.text] = False
    return ro("unset"), words


def _jobs(words: list[Word], ctx: Context) -> tuple[Assessment, list[Word]]:
    if Opts(words[1:]).has("-x"):
        return write("jobs -x runs a command"), words
    return ro("jobs"), words


def _wait(words: list[Word], ctx: Context) -> tuple[Assessment, list[Word]]:
    o = Opts(words[1:], "p")
    return _sets("wait -p", o.values("-p")) or ro("wait"), words


def _test(words: list[Word], ctx: Context) -> tuple[Assessment, list[Word]]:
    """test and [: bash's `-v NAME` evaluates a subscript in NAME."""
    name = words[0].text
    args = words[1:-1] if name == "[" and words[-1].text == "]" else words[1:]
    if ctx.dialect == "bash" and any(not w.literal and w.text.startswith("-") for w in args):
        return write(f"{name}: an operator built at run time may be -v, which evaluates"), words
    if ctx.dialect == "bash" and len(args) == 2 and not args[0].literal:
        return write(f"{name}: a unary operator known only at run time may be -v"), words
    for i, word in enumerate(words[1:-1], 1):
        target = words[i + 1]
        if word.text == "-v" and not (target.literal and _NAME.fullmatch(target.text)):
            return write(f"{name} -v evaluates a subscript or a name known only at run time"), words
    return ro(name), words


BUILTINS: dict[str, Handler] = {
    "read": _read,
    "mapfile": _mapfile,
    "readarray": _mapfile,
    "printf": _printf,
    "getopts": _getopts,
    **dict.fromkeys(("declare", "typeset", "local", "readonly", "export"), _declare),
    "hash": _hash,
    "set": _set,
    "shopt": _shopt,
    "trap": _trap,
    "ulimit": _ulimit,
    "umask": _umask,
    "alias": _alias,
    "unalias": _listing_only("unalias", "a", operands=True),
    "enable": _listing_only("enable", "aps"),
    "let": _let,
    "unset": _unset,
    "jobs": _jobs,
    "wait": _wait,
    "test": _test,
    "[": _test,
}
