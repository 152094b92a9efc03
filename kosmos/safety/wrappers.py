"""Programs that run other programs: sudo, su, sh -c, eval, env, nice, timeout, xargs,
find -exec, watch, ssh... Each handler assesses the command it would run, through the walk.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from kosmos.safety.catalogue import FIND_NAMES
from kosmos.safety.option_tables import OPTION_VALUES
from kosmos.safety.options import Opts, opts, texts_of
from kosmos.safety.paths import command_name, is_critical_dir
from kosmos.safety.queries import is_interpreter, mentions_download, risky_assignment, risky_name
from kosmos.safety.rules import hidden_option
from kosmos.safety.shell import Dialect, Word
from kosmos.safety.verdict import Assessment, Context, dangerous, ro, worse, write

__all__ = ["WRAPPERS", "shell"]

Handler = Callable[[list[Word], Context], tuple[Assessment, list[Word]]]


# What xargs appends: unknown text, which may start with `-` and so be an option.
INPUT = Word("$INPUT", "{input}", literal=False)


def as_root(name: str, inner: Assessment) -> Assessment:
    if inner.verdict != "read_only":
        return inner
    return write(f"{name} runs it as another user (always asks)")


def _sudo(words: list[Word], ctx: Context) -> tuple[Assessment, list[Word]]:
    name = command_name(words[0].text)
    o = opts(name, words[1:], stop=True)
    rest = words[1:][o.rest :]
    if not rest:
        return write(f"{name} without a command (a root shell or a {name} action)"), words
    inner, core = ctx.argv(rest)
    return as_root(name, inner), core


def _su(words: list[Word], ctx: Context) -> tuple[Assessment, list[Word]]:
    name = command_name(words[0].text)
    if name == "runuser" and any(w.text in ("-u", "--user") for w in words[1:]):
        return _sudo(words, ctx)
    o = opts(name, words[1:])
    scripts = o.values("-c", "--command", "--session-command")
    if not scripts:
        return write(f"{name} starts a shell as another user"), words
    # su runs the script under the other user's login shell, whatever that is
    return as_root(name, ctx.script_word(scripts[-1], f"{name} -c", None)), words


# The shells whose scripts kosmos reads, and in which dialect.
_DIALECTS: dict[str, Dialect] = {"bash": "bash", "sh": "sh", "dash": "sh", "ash": "sh"}
# Options of those shells that change nothing about what the script does.
_PLAIN_SHELL_FLAGS = frozenset("cseuxvlfn")


def shell(words: list[Word], ctx: Context) -> tuple[Assessment, list[Word]]:
    name = command_name(words[0].text)
    o = opts("sh", words[1:], stop=True)
    if o.has("--version") and not o.operands:
        return ro(name), words
    if o.has("-c"):
        if not o.operands:
            return write(f"{name} -c without a script"), words
        label = f"{name} -c"
        dialect = _DIALECTS.get(name)
        odd = next((f"-{c}" for c, _ in o.short if c not in _PLAIN_SHELL_FLAGS), None)
        odd = odd or next((f"--{g}" for g in o.longs() if g not in ("norc", "noprofile")), None)
        if dialect is None or odd:
            # Still looked into, for what is dangerous in any reading.
            inner = ctx.script_word(o.operands[0], label, None)
            why = f"{label} with {odd}" if odd else f"{name}'s syntax is not read by kosmos"
            return worse(write(f"{label}: {why}"), inner), words
        return ctx.script_word(o.operands[0], label, dialect), words
    if o.operands and not o.has("-s"):
        script = o.operands[0]
        if mentions_download(script):
            return dangerous(f"runs a downloaded script ({name} {script.raw})"), words
        return write(f"runs a script file: {name} {script.raw}"), words
    return write(f"{name} runs the commands it reads"), words


def _eval(words: list[Word], ctx: Context) -> tuple[Assessment, list[Word]]:
    args = words[1:]
    if not args:
        return ro("eval"), words
    if all(w.literal for w in args):
        return ctx.nested(" ".join(texts_of(args)), "eval", ctx.dialect), words
    if any(mentions_download(w) for w in args):
        return dangerous('runs a downloaded script (eval "$(curl ...)")'), words
    return write("eval runs a string built at run time"), words


def _look_through(words: list[Word], ctx: Context) -> tuple[Assessment, list[Word]]:
    """A wrapper (nice, nohup, stdbuf...) that only changes how its command runs."""
    name = command_name(words[0].text)
    short_arg, long_arg = OPTION_VALUES.get(name, ("a" if name == "exec" else "", ()))
    o = Opts(words[1:], short_arg, long_arg, stop=True)
    rest = words[1:][o.rest :]
    if not rest:
        return ro(name), words
    return ctx.argv(rest)


def _env(words: list[Word], ctx: Context) -> tuple[Assessment, list[Word]]:
    o = opts("env", words[1:], stop=True)
    if o.has("-S", "--split-string"):
        return write("env -S runs a command from a string"), words
    rest = words[1:][o.rest :]
    risky = None
    while rest and re.match(r"[A-Za-z_][A-Za-z0-9_]*=", rest[0].text):
        risky = risky or risky_assignment(rest[0].text)
        rest = rest[1:]
    if not rest:
        return (write(risky) if risky else ro("env")), words
    inner, core = ctx.argv(rest)
    if risky and inner.verdict == "read_only":
        return write(risky), core
    return inner, core


def _ionice(words: list[Word], ctx: Context) -> tuple[Assessment, list[Word]]:
    o = opts("ionice", words[1:], stop=True)
    rest = words[1:][o.rest :]
    if rest and not o.has("-p", "-P", "-u", "--pid", "--pgid", "--uid"):
        return ctx.argv(rest)
    if o.has("-c", "-n", "--class", "--classdata"):
        return write("ionice changes the I/O priority of running processes"), words
    return ro("ionice"), words


def _timeout(words: list[Word], ctx: Context) -> tuple[Assessment, list[Word]]:
    o = opts("timeout", words[1:], stop=True)
    rest = words[1:][o.rest + 1 :]  # past the duration
    return ctx.argv(rest) if rest else (ro("timeout"), words)


def _time(words: list[Word], ctx: Context) -> tuple[Assessment, list[Word]]:
    o = opts("time", words[1:], stop=True)
    rest = words[1:][o.rest :]
    inner, core = ctx.argv(rest) if rest else (ro("time"), words)
    if o.has("-o", "--output") and inner.verdict == "read_only":
        return write("time -o writes a file"), core
    return inner, core


def _command(words: list[Word], ctx: Context) -> tuple[Assessment, list[Word]]:
    o = Opts(words[1:], stop=True)
    if o.has("-v", "-V"):
        return ro("command"), words
    rest = words[1:][o.rest :]
    return ctx.argv(rest) if rest else (ro("command"), words)


def _xargs(words: list[Word], ctx: Context) -> tuple[Assessment, list[Word]]:
    o = opts("xargs", words[1:], stop=True)
    own, rest = words[1 : 1 + o.rest], words[1:][o.rest :]
    for name in o.values("--process-slot-var"):
        risky = risky_name(name.text) if name.literal else "is named at run time"
        if risky:
            return write(f"xargs --process-slot-var {risky}"), words
    if not rest:
        return ro("xargs"), words  # runs echo
    replace = [v.text for v in o.values("-I")] + [
        w.text[2:] or "{}" if w.text.startswith("-i") else w.text.partition("=")[2] or "{}"
        for w in own
        if w.text.startswith("-i") or (len(w.text) > 3 and "--replace".startswith(w.text[:9]))
    ]
    # With -I each input line takes the place of the replace string wherever it stands, the
    # program's name and its options included: those words are known only at run time.
    argv = [_replaced(w, replace) for w in rest] if replace else [*rest, INPUT]
    inner, core = ctx.argv(argv)
    if inner.verdict == "read_only" and replace and is_interpreter(command_name(rest[0].text)):
        return write("xargs -I puts its input into a script"), core
    return inner, core


def _replaced(word: Word, replace: list[str]) -> Word:
    if not any(r and r in word.text for r in replace):
        return word
    text = word.text
    for r in replace:
        text = text.replace(r, INPUT.text) if r else text
    return Word(text, word.raw, literal=False)


def _find(words: list[Word], ctx: Context) -> tuple[Assessment, list[Word]]:
    args = words[1:]
    hidden = hidden_option("find", args)
    if hidden is not None:
        return write(f"find: {hidden.raw} could expand to an action such as -delete"), words
    i = 0
    while i < len(args) and (args[i].text in ("-H", "-L", "-P", "-D") or args[i].text[:2] == "-O"):
        i += 2 if args[i].text == "-D" else 1
    starts: list[Word] = []
    while i < len(args) and not (args[i].text.startswith("-") or args[i].text in ("(", "!", ",")):
        starts.append(args[i])
        i += 1
    critical = next((w for w in starts or [Word(".", ".")] if is_critical_dir(w, ctx)), None)
    if critical and _find_narrowed(args[i:]):
        critical = None  # `find / -name core -delete` picks files; it does not empty /
    where = f"find {critical.raw}" if critical else "find"
    result = ro("find")
    while i < len(args):
        text = args[i].text
        if text in ("-exec", "-execdir", "-ok", "-okdir"):
            end = next((k for k in range(i + 1, len(args)) if args[k].text in (";", "+")), None)
            if end is None or end == i + 1:
                return write(f"find {text} without a command and its ';'"), words
            run = args[i + 1 : end]
            inner, _ = ctx.argv(run)
            name = command_name(run[0].text)
            if critical and name in ("rm", "shred", "unlink"):
                inner = dangerous(f"{where} {text} {name} empties a system or home directory")
            elif inner.verdict == "read_only" and is_interpreter(name):
                inner = write(f"find {text} puts file names into a script")
            result = worse(result, inner)
            i = end + 1
            continue
        if text == "-delete":
            finding = (
                dangerous(f"{where} -delete empties a system or home directory")
                if critical
                else write("find -delete deletes files")
            )
            result = worse(result, finding)
        elif text in ("-fprint", "-fprint0", "-fprintf", "-fls"):
            result = worse(result, write(f"find {text} writes a file"))
        i += 1
    return result, words


def _find_narrowed(expression: Sequence[Word]) -> bool:
    """Whether a find expression only picks files by name or identity (and has no -o)."""
    texts = texts_of(expression)
    if "-o" in texts or "-or" in texts:
        return False
    return any(
        t in FIND_NAMES and i + 1 < len(texts) and texts[i + 1] not in ("*", ".*", "")
        for i, t in enumerate(texts)
    )


def _watch(words: list[Word], ctx: Context) -> tuple[Assessment, list[Word]]:
    o = opts("watch", words[1:], stop=True)
    rest = words[1:][o.rest :]
    if not rest:
        return ro("watch"), words
    if o.has("-x", "--exec"):
        return ctx.argv(rest)
    if not all(w.literal for w in rest):
        return write("watch runs a command built at run time"), words
    return ctx.nested(" ".join(texts_of(rest)), "watch", "sh"), words  # watch runs sh -c


def _ssh(words: list[Word], ctx: Context) -> tuple[Assessment, list[Word]]:
    o = opts("ssh", words[1:], stop=True)
    rest = words[1:][o.rest :]
    if o.has("-V") and not rest:
        return ro("ssh"), words
    if len(rest) < 2:
        return write("ssh opens a session on another host"), words
    host, remote = rest[0], rest[1:]
    if all(w.literal for w in remote):
        inner = ctx.nested(" ".join(texts_of(remote)), "ssh", None)
        if inner.verdict == "dangerous":
            return dangerous(f"on {host.text}: {inner.reason}"), words
    return write(f"runs a command on another host over ssh ({host.text})"), words


WRAPPERS: dict[str, Callable[[list[Word], Context], tuple[Assessment, list[Word]]]] = {
    "sudo": _sudo,
    "doas": _sudo,
    "pkexec": _sudo,
    "su": _su,
    "runuser": _su,
    "eval": _eval,
    "env": _env,
    "nice": _look_through,
    "nohup": _look_through,
    "exec": _look_through,
    "builtin": _look_through,
    "stdbuf": _look_through,
    "ionice": _ionice,
    "timeout": _timeout,
    "time": _time,
    "command": _command,
    "xargs": _xargs,
    "find": _find,
    "watch": _watch,
    "ssh": _ssh,
}
