"""Decide whether a shell command only reads, writes, or is dangerous.

`assess` parses the command (`kosmos.safety.shell`, no shell runs) and looks at every simple
command it would run: in pipelines and lists, subshells, groups, functions, `$(...)`,
backticks (also inside double quotes and here-documents), `<(...)`, the scripts of `sh -c`,
`eval`, `su -c`, `watch` and `ssh`, and the commands that wrappers start (sudo, env, nice,
ionice, timeout, nohup, time, command, exec, stdbuf, xargs, find -exec).

* read_only: every command is on the read-only list with only read-only options, no
  redirection writes anywhere but /dev/null or another descriptor, and no assignment sets
  a variable that changes what runs (PATH, LD_PRELOAD, a pager...).
* dangerous: one step can wreck the host or its data (wipe, reformat, reboot, firewall
  lockout, dropped database...): the operator types the host's name, headless refuses.
* write: everything else, including text that cannot be parsed. sudo is never read-only.

When unsure the answer is "write": a false "write" costs one question, a false "read_only"
runs something nobody approved.

Judgement calls:
* `rm -r` is dangerous on /, ~, $HOME and the top-level system directories (and /usr/bin,
  /usr/lib, /usr/sbin, /usr/lib64, /var/lib), with or without a trailing / or /*, also
  through globs and braces (/e*, /{etc,usr}) and through a literal `cd` earlier in the same
  line (`cd / && rm -rf *`). `.`, `..` and `*` alone are only "write": the working
  directory is unknown, and `cd build && rm -rf *` is an everyday clean-up.
* `rm`, truncation (`>`), `cp`/`mv`/`tee`/`truncate` onto /etc/passwd, shadow, group,
  gshadow, sudoers or fstab are dangerous; `>>` onto them is only "write".
* SQL drop statements count anywhere in the text, but only when the command is not
  otherwise read-only: `grep -i 'drop table' schema.sql` still only reads (a known false
  alarm: `grep 'drop table' f | less` is dangerous, as less is not on the read-only list).
* sudo, doas, su and ssh are never read-only; they are dangerous when what they run is.
* `iptables -P INPUT|OUTPUT DROP|REJECT` is dangerous, `-P FORWARD DROP` is not.
* `find` on such a directory with -delete or `-exec rm` is dangerous unless a -name,
  -path, -regex (not `*`) or -inum test picks the files and there is no -o:
  `find / -name core -delete` is only "write".
* A recursive shell function is treated as a fork bomb.
* A downloader piped into an interpreter is dangerous only when the interpreter runs what
  it reads: `curl ... | python3 -m json.tool` is only a write (python3 is not read-only).
* For commands whose options can write (sed, sort, git, find...), an argument the shell
  expands at run time into something that may start with `-` (`$OPTS`, an unquoted `*`)
  makes the command a write: it could become `-i` or `-delete`. `$HOME` is exempt.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Literal

from kosmos.safety.shell import (
    Command,
    Compound,
    Function,
    Pipeline,
    Redirect,
    Script,
    ShellSyntaxError,
    Simple,
    Word,
    parse,
)

__all__ = ["Assessment", "Verdict", "assess"]

Verdict = Literal["read_only", "write", "dangerous"]
_RANK = {"read_only": 0, "write": 1, "dangerous": 2}


@dataclass(frozen=True)
class Assessment:
    """The verdict on one command line and a one-line reason for the operator and the LLM."""

    verdict: Verdict
    reason: str


def assess(command: str) -> Assessment:
    """Classify one command line as read_only, write or dangerous, with a one-line reason."""
    try:
        script = parse(command)
        ctx = _Ctx()
        _walk_script(script, ctx)
    except ShellSyntaxError as e:
        return _unparseable(command, str(e))
    except RecursionError:  # the parser bounds nesting; this is the last line of defence
        return _unparseable(command, "too deeply nested to follow")
    result = ctx.result()
    if result.verdict == "write":
        reason = _text_danger(command)
        if reason:
            return _dangerous(reason)
    return result


# -- findings ---------------------------------------------------------------------------------


def _ro(names: str) -> Assessment:
    # Internally a read-only finding carries the command names; `_Ctx.result` words it.
    return Assessment("read_only", names)


def _write(reason: str) -> Assessment:
    return Assessment("write", reason)


def _dangerous(reason: str) -> Assessment:
    return Assessment("dangerous", reason)


def _worse(a: Assessment, b: Assessment) -> Assessment:
    if _RANK[b.verdict] > _RANK[a.verdict]:
        return b
    if a.verdict == b.verdict == "read_only":
        return _ro(f"{a.reason}, {b.reason}")
    return a


@dataclass
class _Ctx:
    """What the walk over one script knows: the working directory if a literal `cd` set it,
    the functions defined so far, and the worst finding."""

    cwd: str | None = None
    functions: set[str] = field(default_factory=set)
    depth: int = 0
    worst: Assessment | None = None
    names: list[str] = field(default_factory=list)

    def add(self, finding: Assessment) -> None:
        if finding.verdict == "read_only":
            self.names.append(finding.reason)
        elif self.worst is None or _RANK[finding.verdict] > _RANK[self.worst.verdict]:
            self.worst = finding

    def result(self) -> Assessment:
        if self.worst is not None:
            return self.worst
        names = list(dict.fromkeys(n for joined in self.names for n in joined.split(", ") if n))
        if not names:
            return _ro("nothing runs")
        shown = ", ".join(names[:6]) + (", ..." if len(names) > 6 else "")
        return _ro(f"read-only: {shown}")

    def child(self) -> _Ctx:
        return _Ctx(cwd=self.cwd, functions=set(self.functions), depth=self.depth + 1)


def _split(text: str) -> tuple[str, ...]:
    return tuple(text.split())


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


# -- paths --------------------------------------------------------------------------------------

_HOME = "/home/~"  # stands for the user's home: `~/..` then lands on /home, as it would
_CRITICAL_DIRS = frozenset(
    {
        "/",
        _HOME,
        *(
            f"/{d}"
            for d in _split(
                "bin boot dev etc home lib lib32 lib64 libx32 opt root sbin srv usr var "
                "usr/bin usr/sbin usr/lib usr/lib64 var/lib"
            )
        ),
    }
)
_CRITICAL_FILES = frozenset(
    f"/etc/{f}" for f in ("passwd", "shadow", "group", "gshadow", "sudoers", "fstab")
)
_BLOCK_PREFIXES = tuple(
    f"/dev/{p}"
    for p in ("sd", "vd", "xvd", "hd", "nvme", "mmcblk", "md", "dm-", "mapper/", "disk/")
)
_SINKS = frozenset(
    {"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/fd/1", "/dev/fd/2"}
)
_HOME_VAR = re.compile(r"\$(?:HOME|\{HOME\})(?![A-Za-z0-9_])")
_BIN_DIRS = frozenset(
    {"/bin", "/usr/bin", "/sbin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin"}
)


def _normpath(path: str) -> str:
    return posixpath.normpath(re.sub(r"/+", "/", path))


def _expand_braces(text: str, limit: int = 64) -> list[str]:
    """`/{etc,usr}` as `/etc`, `/usr` (and `{1..3}`), up to `limit` words."""
    done: list[str] = []
    todo = [text]
    while todo and len(done) + len(todo) <= limit:
        word = todo.pop()
        m = re.search(r"\{([^{}]*)\}", word)
        inner = m.group(1) if m else ""
        if m and "," in inner:
            alternatives = inner.split(",")
        elif m and re.fullmatch(r"-?\d+\.\.-?\d+", inner):
            a, b = (int(x) for x in inner.split(".."))
            step = 1 if b >= a else -1
            alternatives = [str(i) for i in range(a, b + step, step)][:limit]
        else:
            done.append(word)
            continue
        todo.extend(word[: m.start()] + alt + word[m.end() :] for alt in alternatives)
    return (done + todo)[:limit]


def _paths(word: Word, ctx: _Ctx) -> list[str]:
    """Absolute, normalised paths a word names, or [] where that is not known."""
    out = []
    for text in _expand_braces(word.text) if word.brace else [word.text]:
        home = False
        if not word.literal:
            m = _HOME_VAR.match(text)
            if not m or any(c in text[m.end() :] for c in "$`"):
                continue
            text, home = "~" + text[m.end() :], True
        elif word.tilde and (text == "~" or text.startswith("~/")):
            home = True
        if home:
            text = _HOME + text[1:]
        elif not text.startswith("/"):
            if ctx.cwd is None:
                continue
            text = f"{ctx.cwd}/{text}"
        out.append(_normpath(text))
    return out


def _matches(path: str, names: frozenset[str]) -> bool:
    if any(c in path for c in "*?["):
        return any(fnmatchcase(name, path) for name in names)
    return path in names


def _is_critical_dir(word: Word, ctx: _Ctx) -> bool:
    for path in _paths(word, ctx):
        # X/* and X/.* empty X as surely as removing X itself.
        while path.endswith(("/*", "/.*")):
            path = path.rsplit("/", 1)[0] or "/"
        if _matches(path, _CRITICAL_DIRS):
            return True
    return False


def _is_critical_file(word: Word, ctx: _Ctx) -> bool:
    return any(_matches(p, _CRITICAL_FILES) for p in _paths(word, ctx))


def _is_block_device(word: Word) -> bool:
    if not word.literal:
        return False
    path = _normpath(word.text)
    return any(path.startswith(p) and len(path) > len(p) for p in _BLOCK_PREFIXES)


def _command_name(text: str) -> str:
    """`/usr/bin/ls` is `ls`; `./ls` or `/tmp/ls` stay as they are: they are not the real ls."""
    head, _, base = text.rpartition("/")
    return base if head in _BIN_DIRS else text


# -- options ----------------------------------------------------------------------------------


class _Opts:
    """A command's options and operands, read the way getopt_long reads them.

    `short_arg` lists the short options that take a value, `long_arg` the long ones; a long
    option may be abbreviated, as GNU tools allow (`--in-pl` is `--in-place`). With
    `stop=True`, the first operand ends the options (wrappers: what follows is a command).
    """

    def __init__(
        self,
        args: Sequence[Word],
        short_arg: str = "",
        long_arg: Sequence[str] = (),
        *,
        stop: bool = False,
    ) -> None:
        self.short: list[tuple[str, Word | None]] = []
        self.long: list[tuple[str, Word | None]] = []
        self.operands: list[Word] = []
        self.rest = len(args)  # index of the first operand when stop=True
        i = 0
        while i < len(args):
            text = args[i].text
            if text == "--":
                self.operands.extend(args[i + 1 :])
                self.rest = i + 1
                break
            if text.startswith("--"):
                name, eq, value = text[2:].partition("=")
                if eq:
                    self.long.append((name, Word(value, value, literal=args[i].literal)))
                elif any(n.startswith(name) for n in long_arg) and i + 1 < len(args):
                    self.long.append((name, args[i + 1]))
                    i += 1
                else:
                    self.long.append((name, None))
            elif text.startswith("-") and len(text) > 1:
                for j, ch in enumerate(text[1:], 1):
                    if ch in short_arg:
                        rest = text[j + 1 :]
                        if rest:
                            self.short.append((ch, Word(rest, rest, literal=args[i].literal)))
                        elif i + 1 < len(args):
                            self.short.append((ch, args[i + 1]))
                            i += 1
                        else:
                            self.short.append((ch, None))
                        break
                    self.short.append((ch, None))
            elif stop:
                self.operands.extend(args[i:])
                self.rest = i
                break
            else:
                self.operands.append(args[i])
            i += 1

    def _hit(self, name: str) -> list[Word | None]:
        if name.startswith("--"):
            return [v for given, v in self.long if given and name[2:].startswith(given)]
        return [v for given, v in self.short if given == name[1]]

    def has(self, *names: str) -> bool:
        return any(self._hit(n) for n in names)

    def values(self, *names: str) -> list[Word]:
        return [v for n in names for v in self._hit(n) if v is not None]

    def longs(self) -> list[str]:
        return [given for given, _ in self.long]


def _texts(words: Sequence[Word]) -> list[str]:
    return [w.text for w in words]


# -- the walk ---------------------------------------------------------------------------------

_DOWNLOADERS = frozenset({"curl", "wget", "fetch"})
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish"})
_SCRIPTING = frozenset({"perl", "ruby", "node", "nodejs", "php", "lua"})
_PYTHON = re.compile(r"python[0-9.]*")


def _is_interpreter(name: str) -> bool:
    return name in _SHELLS or name in _SCRIPTING or bool(_PYTHON.fullmatch(name))


def _walk_script(script: Script, ctx: _Ctx) -> None:
    for pipeline in script.pipelines:
        _walk_pipeline(pipeline, ctx)


def _walk_pipeline(pipeline: Pipeline, ctx: _Ctx) -> None:
    alone = len(pipeline.commands) == 1 and not pipeline.background
    downloader = ""
    for command in pipeline.commands:
        core = _walk_command(command, ctx, alone)
        if not core or not core[0].literal:
            continue
        name = _command_name(core[0].text)
        if downloader and _runs_its_input(name, core[1:]):
            ctx.add(_dangerous(f"pipes a download into {name} ({downloader} ... | {name})"))
        if name in _DOWNLOADERS or any(_mentions_download(w) for w in core):
            downloader = name  # `curl ...`, and also `cat <(curl ...)`


def _walk_command(command: Command, ctx: _Ctx, alone: bool) -> list[Word]:
    """Assess one command into ctx; return the argv it finally runs (for pipeline checks)."""
    if isinstance(command, Simple):
        for word in (*command.assigns, *command.words):
            _walk_word(word, ctx)
        for redirect in command.redirects:
            _walk_redirect(redirect, ctx)
        for word in command.assigns:
            risky = _risky_assignment(word.text)
            if risky:
                ctx.add(_write(risky))
        if not command.words:
            return []
        finding, core = _argv(command.words, ctx)
        ctx.add(finding)
        if core and core[0].literal and _runs_its_input(_command_name(core[0].text), core[1:]):
            # `sh < <(curl ...)`, `bash <<EOF` with a $(curl ...) in the body
            fed = [r for r in command.redirects if r.op in ("<", "<<", "<<-", "<<<")]
            if any(_mentions_download(Word(subs=[*r.target.subs, *r.subs])) for r in fed):
                ctx.add(_dangerous(f"feeds a download to {_command_name(core[0].text)}"))
        if alone and command.words[0].text in ("cd", "pushd"):
            ctx.cwd = _cd_target(command.words[1:], ctx)
        return core
    if isinstance(command, Compound):
        for word in command.words:
            _walk_word(word, ctx)
        for redirect in command.redirects:
            _walk_redirect(redirect, ctx)
        saved = ctx.cwd
        for body in command.bodies:
            _walk_script(body, ctx)
        if command.kind == "subshell":
            ctx.cwd = saved
        return []
    if _calls(command.body, command.name):
        ctx.add(_dangerous(f"fork bomb: {command.name}() calls itself"))
    ctx.functions.add(command.name)
    _walk_command(command.body, ctx, alone=False)
    return []


def _walk_word(word: Word, ctx: _Ctx) -> None:
    for sub in word.subs:
        saved = ctx.cwd
        _walk_script(sub, ctx)
        ctx.cwd = saved


def _walk_redirect(redirect: Redirect, ctx: _Ctx) -> None:
    _walk_word(redirect.target, ctx)
    for sub in redirect.subs:
        _walk_script(sub, ctx)
    op, target = redirect.op, redirect.target
    if op in ("<", "<<", "<<-", "<<<"):
        return
    if op == "<&" or (op == ">&" and (target.text.isdigit() or target.text == "-")):
        return  # duplicating or closing a descriptor writes nothing
    shown = f"{'' if redirect.fd is None else redirect.fd}{op} {target.raw}"
    path = _normpath(target.text) if target.literal and target.text else ""
    if path in _SINKS:
        return
    if _is_block_device(target):
        ctx.add(_dangerous(f"writes to a block device ({shown})"))
    elif op in (">", ">|", "&>", ">&") and _is_critical_file(target, ctx):
        ctx.add(_dangerous(f"truncates a system file ({shown})"))
    elif path == "/proc/sysrq-trigger":
        ctx.add(
            _dangerous(
                f"writes to /proc/sysrq-trigger, which can reboot or halt the host ({shown})"
            )
        )
    else:
        ctx.add(_write(f"writes to a file ({shown})"))


def _calls(command: Command, name: str) -> bool:
    if isinstance(command, Simple):
        return bool(command.words) and command.words[0].text == name
    if isinstance(command, Function):
        return _calls(command.body, name)
    return any(
        _calls(c, name) for body in command.bodies for p in body.pipelines for c in p.commands
    )


def _mentions_download(word: Word) -> bool:
    """Whether a word's substitutions run curl, wget or fetch anywhere inside."""

    def in_script(script: Script) -> bool:
        return any(in_command(c) for p in script.pipelines for c in p.commands)

    def in_command(command: Command) -> bool:
        if isinstance(command, Function):
            return in_command(command.body)
        if isinstance(command, Compound):
            return any(in_script(b) for b in command.bodies) or any(
                _mentions_download(w) for w in command.words
            )
        return any(
            (w.literal and _command_name(w.text) in _DOWNLOADERS) or _mentions_download(w)
            for w in (*command.assigns, *command.words)
        )

    return any(in_script(s) for s in word.subs)


def _runs_its_input(name: str, args: Sequence[Word]) -> bool:
    """Whether `name args` executes what it reads on stdin (`sh`, `python3 -`, `sudo bash`)."""
    if name in _SHELLS:
        o = _Opts(args, "oO", stop=True)
        return not o.has("-c") and (not o.operands or o.has("-s"))
    if _PYTHON.fullmatch(name):
        o = _Opts(args, "cmWXQ", stop=True)
        return not o.has("-c", "-m") and (not o.operands or o.operands[0].text == "-")
    if name in _SCRIPTING:
        o = _Opts(args, "eErI", stop=True)
        return not o.has("-e", "-E", "-r", "-p") and (not o.operands or o.operands[0].text == "-")
    if name in ("source", ".", "eval"):
        return any(w.text in ("/dev/stdin", "/proc/self/fd/0", "-") for w in args)
    return False


def _cd_target(args: Sequence[Word], ctx: _Ctx) -> str | None:
    operands = [w for w in args if not w.text.startswith("-") or w.text == "-"]
    if not operands:
        return _HOME
    word = operands[0]
    if word.text == "-" or word.glob:
        return None
    paths = _paths(word, ctx)
    return paths[0] if len(paths) == 1 else None


_RISKY_VARS = _names(
    "PATH BASH_ENV ENV PROMPT_COMMAND PS4 SHELLOPTS BASHOPTS PYTHONPATH PYTHONSTARTUP "
    "PYTHONHOME PERL5OPT PERL5LIB RUBYOPT NODE_OPTIONS EDITOR VISUAL BROWSER SSH_ASKPASS "
    "SUDO_ASKPASS LESSOPEN LESSCLOSE"
)
_HARMLESS_PAGERS = frozenset({"", "cat", "less", "more", "less -R", "less -FRX"})


def _risky_assignment(text: str) -> str | None:
    """An assignment that changes which program runs (PATH, LD_PRELOAD, a pager command)."""
    name, _, value = text.partition("=")
    name = re.sub(r"\[.*|\+$", "", name)
    if name.endswith("PAGER"):
        return None if value in _HARMLESS_PAGERS else f"sets {name}, which runs a program"
    if (
        name in _RISKY_VARS
        or name.startswith(("LD_", "DYLD_"))
        or (name.startswith("GIT_") and name not in ("GIT_DIR", "GIT_WORK_TREE"))
    ):
        return f"sets {name}, which changes what runs"
    return None


# -- one command ------------------------------------------------------------------------------

_INPUT = Word("{input}", "{input}", literal=False)  # what xargs appends: unknown text


def _argv(words: list[Word], ctx: _Ctx) -> tuple[Assessment, list[Word]]:
    """Assess one argv; return the finding and the argv that finally runs (past wrappers)."""
    head = words[0]
    if not head.literal:
        if _mentions_download(head):
            return _dangerous(f"runs a command fetched from the network ({head.raw})"), words
        return _write(f"the command name is computed at run time: {head.raw}"), words
    name = _command_name(head.text)
    if name in ctx.functions:
        return _ro(name), words
    wrapper = _WRAPPERS.get(name) or (_shell if name in _SHELLS else None)
    if wrapper is not None:
        return wrapper(words, ctx)
    args = words[1:]
    reason = _danger(name, args, ctx)
    if reason:
        return _dangerous(reason), words
    return _read_only_rule(name, args), words


def _nested(text: str, ctx: _Ctx, label: str) -> Assessment:
    """Assess a script that a command runs from a string (`sh -c`, `eval`, `ssh host ...`)."""
    if ctx.depth >= 8:
        return _write(f"{label}: scripts nested too deeply to follow")
    try:
        script = parse(text)
    except ShellSyntaxError as e:
        rough = _rough_danger(text)
        return _dangerous(rough) if rough else _write(f"cannot parse the script of {label}: {e}")
    child = ctx.child()
    _walk_script(script, child)
    result = child.result()
    if result.verdict == "read_only":
        return _ro(", ".join(child.names) or label.split()[0])
    return result


def _script_word(word: Word, ctx: _Ctx, label: str) -> Assessment:
    if word.literal:
        return _nested(word.text, ctx, label)
    if _mentions_download(word):
        return _dangerous(f'runs a downloaded script ({label} "$(curl ...)")')
    return _write(f"{label} runs a script built at run time")


def _as_root(name: str, inner: Assessment) -> Assessment:
    if inner.verdict != "read_only":
        return inner
    return _write(f"{name} runs it as another user (always asks)")


def _sudo(words: list[Word], ctx: _Ctx) -> tuple[Assessment, list[Word]]:
    name = _command_name(words[0].text)
    short_arg, long_arg = _SUDO_OPTIONS[name]
    o = _Opts(words[1:], short_arg, long_arg, stop=True)
    rest = words[1:][o.rest :]
    if not rest:
        return _write(f"{name} without a command (a root shell or a {name} action)"), words
    inner, core = _argv(rest, ctx)
    return _as_root(name, inner), core


_SUDO_OPTIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "sudo": (
        "ugCDpRrtTU",
        ("user", "group", "close-from", "chdir", "chroot", "prompt", "role", "type", "host")
        + ("command-timeout", "other-user"),
    ),
    "doas": ("uC", ()),
    "pkexec": ("", ("user",)),
    "runuser": ("ugG", ("user", "group", "supp-group")),
}


def _su(words: list[Word], ctx: _Ctx) -> tuple[Assessment, list[Word]]:
    name = _command_name(words[0].text)
    if name == "runuser" and any(w.text in ("-u", "--user") for w in words[1:]):
        return _sudo(words, ctx)
    o = _Opts(words[1:], "cgGsw", ("command", "session-command", "group", "supp-group", "shell"))
    scripts = o.values("-c", "--command", "--session-command")
    if not scripts:
        return _write(f"{name} starts a shell as another user"), words
    return _as_root(name, _script_word(scripts[-1], ctx, f"{name} -c")), words


def _shell(words: list[Word], ctx: _Ctx) -> tuple[Assessment, list[Word]]:
    name = _command_name(words[0].text)
    o = _Opts(words[1:], "oO", ("rcfile", "init-file"), stop=True)
    if o.has("--version") and not o.operands:
        return _ro(name), words
    if o.has("-c"):
        if not o.operands:
            return _write(f"{name} -c without a script"), words
        return _script_word(o.operands[0], ctx, f"{name} -c"), words
    if o.operands and not o.has("-s"):
        script = o.operands[0]
        if _mentions_download(script):
            return _dangerous(f"runs a downloaded script ({name} {script.raw})"), words
        return _write(f"runs a script file: {name} {script.raw}"), words
    return _write(f"{name} runs the commands it reads"), words


def _eval(words: list[Word], ctx: _Ctx) -> tuple[Assessment, list[Word]]:
    args = words[1:]
    if not args:
        return _ro("eval"), words
    if all(w.literal for w in args):
        return _nested(" ".join(_texts(args)), ctx, "eval"), words
    if any(_mentions_download(w) for w in args):
        return _dangerous('runs a downloaded script (eval "$(curl ...)")'), words
    return _write("eval runs a string built at run time"), words


def _look_through(
    short_arg: str = "", long_arg: Sequence[str] = ()
) -> Callable[[list[Word], _Ctx], tuple[Assessment, list[Word]]]:
    """A wrapper (nice, nohup, stdbuf...) that only changes how its command runs."""

    def handler(words: list[Word], ctx: _Ctx) -> tuple[Assessment, list[Word]]:
        o = _Opts(words[1:], short_arg, long_arg, stop=True)
        rest = words[1:][o.rest :]
        if not rest:
            return _ro(_command_name(words[0].text)), words
        return _argv(rest, ctx)

    return handler


def _env(words: list[Word], ctx: _Ctx) -> tuple[Assessment, list[Word]]:
    o = _Opts(words[1:], "uCS", ("unset", "chdir", "split-string"), stop=True)
    if o.has("-S", "--split-string"):
        return _write("env -S runs a command from a string"), words
    rest = words[1:][o.rest :]
    risky = None
    while rest and re.match(r"[A-Za-z_][A-Za-z0-9_]*=", rest[0].text):
        risky = risky or _risky_assignment(rest[0].text)
        rest = rest[1:]
    if not rest:
        return (_write(risky) if risky else _ro("env")), words
    inner, core = _argv(rest, ctx)
    if risky and inner.verdict == "read_only":
        return _write(risky), core
    return inner, core


def _ionice(words: list[Word], ctx: _Ctx) -> tuple[Assessment, list[Word]]:
    o = _Opts(words[1:], "cnpPut", ("class", "classdata", "pid", "pgid", "uid"), stop=True)
    rest = words[1:][o.rest :]
    if rest and not o.has("-p", "-P", "-u", "--pid", "--pgid", "--uid"):
        return _argv(rest, ctx)
    if o.has("-c", "-n", "--class", "--classdata"):
        return _write("ionice changes the I/O priority of running processes"), words
    return _ro("ionice"), words


def _timeout(words: list[Word], ctx: _Ctx) -> tuple[Assessment, list[Word]]:
    o = _Opts(words[1:], "sk", ("signal", "kill-after"), stop=True)
    rest = words[1:][o.rest + 1 :]  # past the duration
    return _argv(rest, ctx) if rest else (_ro("timeout"), words)


def _time(words: list[Word], ctx: _Ctx) -> tuple[Assessment, list[Word]]:
    o = _Opts(words[1:], "fo", ("format", "output"), stop=True)
    rest = words[1:][o.rest :]
    inner, core = _argv(rest, ctx) if rest else (_ro("time"), words)
    if o.has("-o", "--output") and inner.verdict == "read_only":
        return _write("time -o writes a file"), core
    return inner, core


def _command(words: list[Word], ctx: _Ctx) -> tuple[Assessment, list[Word]]:
    o = _Opts(words[1:], stop=True)
    if o.has("-v", "-V"):
        return _ro("command"), words
    rest = words[1:][o.rest :]
    return _argv(rest, ctx) if rest else (_ro("command"), words)


def _xargs(words: list[Word], ctx: _Ctx) -> tuple[Assessment, list[Word]]:
    o = _Opts(
        words[1:],
        "aEILnPsd",
        ("arg-file", "delimiter", "eof", "replace", "max-lines", "max-args", "max-procs")
        + ("max-chars", "process-slot-var"),
        stop=True,
    )
    rest = words[1:][o.rest :]
    if not rest:
        return _ro("xargs"), words  # runs echo
    inner, core = _argv([*rest, _INPUT], ctx)
    if (
        inner.verdict == "read_only"
        and o.has("-I", "-i", "--replace")
        and _is_interpreter(_command_name(rest[0].text))
    ):
        return _write("xargs -I puts its input into a script"), core
    return inner, core


def _find(words: list[Word], ctx: _Ctx) -> tuple[Assessment, list[Word]]:
    args = words[1:]
    injectable = _injectable(args)
    if injectable is not None:
        return _write(f"find: {injectable.raw} could expand to an action such as -delete"), words
    i = 0
    while i < len(args) and (args[i].text in ("-H", "-L", "-P", "-D") or args[i].text[:2] == "-O"):
        i += 2 if args[i].text == "-D" else 1
    starts: list[Word] = []
    while i < len(args) and not (args[i].text.startswith("-") or args[i].text in ("(", "!", ",")):
        starts.append(args[i])
        i += 1
    critical = next((w for w in starts or [Word(".", ".")] if _is_critical_dir(w, ctx)), None)
    if critical and _find_narrowed(args[i:]):
        critical = None  # `find / -name core -delete` picks files; it does not empty /
    where = f"find {critical.raw}" if critical else "find"
    result = _ro("find")
    while i < len(args):
        text = args[i].text
        if text in ("-exec", "-execdir", "-ok", "-okdir"):
            end = next((k for k in range(i + 1, len(args)) if args[k].text in (";", "+")), None)
            if end is None or end == i + 1:
                return _write(f"find {text} without a command and its ';'"), words
            run = args[i + 1 : end]
            inner, _ = _argv(run, ctx)
            name = _command_name(run[0].text)
            if critical and name in ("rm", "shred", "unlink"):
                inner = _dangerous(f"{where} {text} {name} empties a system or home directory")
            elif inner.verdict == "read_only" and _is_interpreter(name):
                inner = _write(f"find {text} puts file names into a script")
            result = _worse(result, inner)
            i = end + 1
            continue
        if text == "-delete":
            finding = (
                _dangerous(f"{where} -delete empties a system or home directory")
                if critical
                else _write("find -delete deletes files")
            )
            result = _worse(result, finding)
        elif text in ("-fprint", "-fprint0", "-fprintf", "-fls"):
            result = _worse(result, _write(f"find {text} writes a file"))
        i += 1
    return result, words


_FIND_NAMES = _names(
    "-name -iname -path -ipath -wholename -iwholename -regex -iregex -inum -samefile"
)


def _find_narrowed(expression: Sequence[Word]) -> bool:
    """Whether a find expression only picks files by name or identity (and has no -o)."""
    texts = _texts(expression)
    if "-o" in texts or "-or" in texts:
        return False
    return any(
        t in _FIND_NAMES and i + 1 < len(texts) and texts[i + 1] not in ("*", ".*", "")
        for i, t in enumerate(texts)
    )


def _trap(words: list[Word], ctx: _Ctx) -> tuple[Assessment, list[Word]]:
    args = [w for w in words[1:] if w.text != "--"]
    if len(args) < 2 or args[0].text.startswith("-"):
        return _ro("trap"), words  # lists or resets traps
    return _script_word(args[0], ctx, "trap"), words


def _watch(words: list[Word], ctx: _Ctx) -> tuple[Assessment, list[Word]]:
    o = _Opts(words[1:], "nq", ("interval", "equexit"), stop=True)
    rest = words[1:][o.rest :]
    if not rest:
        return _ro("watch"), words
    if o.has("-x", "--exec"):
        return _argv(rest, ctx)
    if not all(w.literal for w in rest):
        return _write("watch runs a command built at run time"), words
    return _nested(" ".join(_texts(rest)), ctx, "watch"), words


def _ssh(words: list[Word], ctx: _Ctx) -> tuple[Assessment, list[Word]]:
    o = _Opts(words[1:], "BbcDEeFIiJLlmOoPpQRSWw", stop=True)
    rest = words[1:][o.rest :]
    if o.has("-V") and not rest:
        return _ro("ssh"), words
    if len(rest) < 2:
        return _write("ssh opens a session on another host"), words
    host, remote = rest[0], rest[1:]
    if all(w.literal for w in remote):
        inner = _nested(" ".join(_texts(remote)), ctx, "ssh")
        if inner.verdict == "dangerous":
            return _dangerous(f"on {host.text}: {inner.reason}"), words
    return _write(f"runs a command on another host over ssh ({host.text})"), words


_WRAPPERS: dict[str, Callable[[list[Word], _Ctx], tuple[Assessment, list[Word]]]] = {
    "sudo": _sudo,
    "doas": _sudo,
    "pkexec": _sudo,
    "su": _su,
    "runuser": _su,
    "eval": _eval,
    "env": _env,
    "nice": _look_through("n", ("adjustment",)),
    "nohup": _look_through(),
    "exec": _look_through("a"),
    "builtin": _look_through(),
    "stdbuf": _look_through("ioe", ("input", "output", "error")),
    "ionice": _ionice,
    "timeout": _timeout,
    "time": _time,
    "command": _command,
    "xargs": _xargs,
    "find": _find,
    "watch": _watch,
    "ssh": _ssh,
    "trap": _trap,
}


# -- dangerous ----------------------------------------------------------------------------------


def _danger(name: str, args: list[Word], ctx: _Ctx) -> str | None:
    """Why `name args` can wreck the host in one go, or None."""
    check = _DANGER.get(name)
    if check is not None:
        reason = check(name, args, ctx)
        if reason:
            return reason
    if name.startswith("mkfs") or name in ("mke2fs", "mkswap", "wipefs", "blkdiscard", "mkdosfs"):
        return f"{name} destroys the data on a device"
    if (_is_interpreter(name) or name in ("source", ".")) and any(
        _mentions_download(w) for w in args
    ):
        return f"runs a downloaded script ({name} <(curl ...))"
    return None


def _d_rm(name: str, args: list[Word], ctx: _Ctx) -> str | None:
    o = _Opts(args)
    label = " ".join(["rm", *(w.text for w in args if w.text.startswith("-") and w.text != "--")])
    if o.has("--no-preserve-root"):
        return "rm --no-preserve-root can wipe /"
    recursive = o.has("-r", "-R", "--recursive")
    for word in o.operands:
        if (recursive and _is_critical_dir(word, ctx)) or _is_critical_file(word, ctx):
            relative = word.literal and not word.tilde and not word.text.startswith("/")
            return f"{label} on {word.raw}" + (f" (in {ctx.cwd})" if relative else "")
    return None


def _d_chmod(name: str, args: list[Word], ctx: _Ctx) -> str | None:
    o = _Opts(args, "", ("reference", "from"))
    if not o.has("-R", "--recursive"):
        return None
    # A mode such as -x reads as an option here; every operand is checked, modes and owners
    # never look like system directories.
    for word in o.operands:
        if _is_critical_dir(word, ctx):
            return f"recursive {name} on {word.raw}"
    return None


def _d_mv(name: str, args: list[Word], ctx: _Ctx) -> str | None:
    o = _Opts(args, "tS", ("target-directory", "suffix"))
    sources = o.operands if o.has("-t", "--target-directory") else o.operands[:-1]
    for word in sources:
        if _is_critical_dir(word, ctx) or _is_critical_file(word, ctx):
            return f"mv moves {word.raw} away"
    return _d_overwrite(name, args, ctx)


def _d_overwrite(name: str, args: list[Word], ctx: _Ctx) -> str | None:
    """cp, mv, install, tee, truncate, shred and dd onto a block device or a system file."""
    if name == "dd":
        targets = [Word(w.text[3:], w.raw, literal=w.literal) for w in args if w.text[:3] == "of="]
    else:
        o = _Opts(args, "tSmogs" if name != "tee" else "", ("target-directory", "suffix", "size"))
        targets = o.operands if name in ("tee", "truncate", "shred") else o.operands[-1:]
        if name == "tee" and o.has("-a", "--append"):
            return next(
                (f"tee writes to a block device ({w.raw})" for w in targets if _is_block_device(w)),
                None,
            )
    for word in targets:
        if _is_block_device(word):
            return f"{name} writes to a block device ({word.raw})"
        if _is_critical_file(word, ctx):
            return f"{name} overwrites {word.raw}"
    return None


def _d_power(name: str, args: list[Word], ctx: _Ctx) -> str | None:
    texts = _texts(args)
    if any(t in ("--help", "--version") for t in texts):
        return None
    if name == "shutdown" and "-c" in texts:
        return None
    return f"{name} takes the host down"


def _d_init(name: str, args: list[Word], ctx: _Ctx) -> str | None:
    if args and args[0].text in ("0", "6", "1", "s", "S", "single"):
        return f"{name} {args[0].text} halts, reboots or isolates the host"
    return None


_SYSTEMCTL_DOWN = _names(
    "reboot poweroff halt kexec soft-reboot rescue emergency isolate suspend hibernate "
    "hybrid-sleep suspend-then-hibernate"
)
_DOWN_TARGETS = frozenset(
    f"{t}.target" for t in _split("reboot poweroff halt kexec rescue emergency")
)
_SYSTEMCTL_OPTS = ("tpHMnosP", ("type", "property", "host", "machine", "lines", "output", "state"))


def _d_systemctl(name: str, args: list[Word], ctx: _Ctx) -> str | None:
    o = _Opts(args, *_SYSTEMCTL_OPTS)
    ops = _texts(o.operands)
    if ops and ops[0] in _SYSTEMCTL_DOWN:
        return f"systemctl {ops[0]} takes the host down or isolates it"
    if ops and ops[0] in ("start", "restart", "isolate") and _DOWN_TARGETS & set(ops[1:]):
        return f"systemctl {' '.join(ops)} takes the host down"
    return None


def _d_kill(name: str, args: list[Word], ctx: _Ctx) -> str | None:
    texts = _texts(args)
    if not texts or texts[0] in ("-l", "-L", "--list", "--table"):
        return None
    start = 0
    if texts[0] in ("-s", "-n", "--signal"):
        start = 2
    elif texts[0].startswith("-") and texts[0] != "--" and len(texts) > 1:
        start = 1  # the signal: -9, -KILL, -SIGTERM
    pids = [t for t in texts[start:] if t != "--"]
    if "1" in pids or "-1" in pids:
        return f"kill {' '.join(texts)} signals init or every process"
    return None


def _d_iptables(name: str, args: list[Word], ctx: _Ctx) -> str | None:
    texts = _texts(args)
    for i, text in enumerate(texts):
        if text in ("--flush", "--delete-chain") or re.fullmatch(r"-[nvxwZ]*[FX][nvxwFXZ]*", text):
            return f"{name} {text} removes firewall rules"
        if text in ("-P", "--policy") and i + 2 < len(texts):
            chain, target = texts[i + 1], texts[i + 2].upper()
            if chain.upper() in ("INPUT", "OUTPUT") and target in ("DROP", "REJECT"):
                return f"{name} -P {chain} {target} can lock everyone out"
    return None


def _d_firewall(name: str, args: list[Word], ctx: _Ctx) -> str | None:
    texts = [t.lower() for t in _texts(args)]
    if name == "nft" and "flush" in texts and "ruleset" in texts:
        return "nft flush ruleset removes every firewall rule"
    operands = [t for t in texts if not t.startswith("-")]
    if name == "ufw" and operands[:1] in (["disable"], ["reset"]):
        return f"ufw {operands[0]} turns the firewall off or wipes it"
    if name == "firewall-cmd" and "--panic-on" in texts:
        return "firewall-cmd --panic-on drops all traffic"
    return None


def _d_database(name: str, args: list[Word], ctx: _Ctx) -> str | None:
    texts = [t.lower() for t in _texts(args)]
    if name == "dropdb":
        return "dropdb drops a database"
    if name == "mysqladmin" and "drop" in texts:
        return "mysqladmin drop drops a database"
    if name == "redis-cli":
        hit = next((t for t in texts if t in ("flushall", "flushdb")), None)
        if hit:
            return f"redis-cli {hit} deletes every key"
    return None


def _d_crontab(name: str, args: list[Word], ctx: _Ctx) -> str | None:
    return "crontab -r deletes the whole crontab" if _Opts(args, "u").has("-r") else None


def _d_user(name: str, args: list[Word], ctx: _Ctx) -> str | None:
    return f"{name} deletes a user account"


def _d_containers(name: str, args: list[Word], ctx: _Ctx) -> str | None:
    texts = _texts(args)
    if name in ("docker", "podman"):
        if "system" in texts and "prune" in texts[texts.index("system") :]:
            rest = texts[texts.index("system") :]
            if "--all" in rest or any(re.fullmatch(r"-[a-z]*a[a-z]*", t) for t in rest):
                return f"{name} system prune -a deletes every unused image, container and volume"
        return None
    if "delete" in texts:
        rest = texts[texts.index("delete") + 1 :]
        for text in rest:
            if text in ("ns", "namespace", "namespaces", "--all", "-A", "--all-namespaces") or (
                text.startswith(("ns/", "namespace/", "namespaces/"))
            ):
                return f"kubectl delete {' '.join(rest)} deletes whole namespaces or all objects"
    return None


_DangerCheck = Callable[[str, list[Word], _Ctx], str | None]
_DANGER: dict[str, _DangerCheck] = {
    "rm": _d_rm,
    "chmod": _d_chmod,
    "chown": _d_chmod,
    "chgrp": _d_chmod,
    "mv": _d_mv,
    **dict.fromkeys(("cp", "install", "tee", "truncate", "shred", "dd"), _d_overwrite),
    **dict.fromkeys(("reboot", "poweroff", "halt", "shutdown"), _d_power),
    "init": _d_init,
    "telinit": _d_init,
    "systemctl": _d_systemctl,
    "kill": _d_kill,
    "killall5": lambda name, args, ctx: "killall5 signals every process",
    **dict.fromkeys(
        ("iptables", "ip6tables", "iptables-legacy", "ip6tables-legacy", "iptables-nft"),
        _d_iptables,
    ),
    **dict.fromkeys(("nft", "ufw", "firewall-cmd"), _d_firewall),
    **dict.fromkeys(("dropdb", "mysqladmin", "redis-cli"), _d_database),
    "crontab": _d_crontab,
    "userdel": _d_user,
    "deluser": _d_user,
    **dict.fromkeys(("docker", "podman", "kubectl"), _d_containers),
}

# SQL that destroys data, anywhere in a command line that is not read-only anyway.
_SQL_DROP = re.compile(
    r"\b(?:drop\s+(?:database|schema|table)|truncate\s+table)\b|\bdropDatabase\s*\(",
    re.IGNORECASE,
)
_FORK_BOMB = re.compile(r"([\w:.]+)\s*\(\s*\)\s*\{[^}]*\1\s*[|&]")


def _text_danger(text: str) -> str | None:
    m = _SQL_DROP.search(text)
    if not m:
        return None
    found = " ".join(m.group().split())
    if found.endswith("("):
        return "dropDatabase() destroys a database"
    return f"{found.upper()} destroys data"


def _rough_danger(text: str) -> str | None:
    """Dangers visible in text the parser could not follow: split it crudely and look."""
    if _FORK_BOMB.search(text):
        return "fork bomb: a function that calls itself in a pipe"
    ctx = _Ctx()
    for segment in re.split(r"[;&|\n()`]|\$\(", text):
        parts = [p.strip("'\"") for p in segment.split()]
        words = [Word(p, p, literal="$" not in p, glob="*" in p) for p in parts if p]
        while words and re.match(r"[A-Za-z_][A-Za-z0-9_]*=", words[0].text):
            words = words[1:]
        if words:
            finding, _ = _argv(words, ctx)
            if finding.verdict == "dangerous":
                return finding.reason
    return _text_danger(text)


def _unparseable(text: str, error: str) -> Assessment:
    reason = _rough_danger(text)
    return _dangerous(reason) if reason else _write(f"cannot parse the command: {error}")


# -- read-only -----------------------------------------------------------------------------------

_ALWAYS = _names(
    """
    ls cat head tail grep egrep fgrep zgrep zegrep zfgrep zcat bzcat xzcat zstdcat wc cut tr
    df du free uptime uname whoami id ps pgrep pidof lsof netstat dig nslookup host getent
    stat readlink realpath basename dirname locate which whereis type echo printf true false
    test [ printenv lsblk blkid findmnt lscpu lsmem lspci lsusb lsmod nproc vmstat iostat
    mpstat last w who users groups md5sum sha1sum sha224sum sha256sum sha384sum sha512sum
    b2sum cksum sum cmp diff comm column jq hexdump od strings nl tac rev fold fmt paste join
    seq sleep getfacl namei lsattr base64 expand unexpand dpkg-query tty arch logname expr
    : cd pwd pushd popd dirs unset set shopt read shift exit return break continue wait
    ulimit umask hash jobs let getopts
    """
)

_Rule = Callable[[list[Word]], str | None]


def _r_assign(args: list[Word]) -> str | None:
    return next((r for w in args if "=" in w.text for r in [_risky_assignment(w.text)] if r), None)


def _r_sed(args: list[Word]) -> str | None:
    o = _Opts(args, "efl", ("expression", "file", "line-length"))
    if o.has("-i", "-I", "--in-place"):
        return "sed -i edits files in place"
    if o.has("-f", "--file"):
        return "sed -f runs a script file"
    scripts = o.values("-e", "--expression") or o.operands[:1]
    for script in scripts:
        if not script.literal:
            return "the sed script is built at run time"
        reason = _sed_writes(script.text)
        if reason:
            return reason
    return None


def _sed_writes(script: str) -> str | None:
    """Why a sed script writes or runs something (w, W, e, s///w, s///e), or None."""
    i, n = 0, len(script)

    def skip_regex(i: int, delim: str) -> int:
        while i < n and script[i] != delim:
            i += 2 if script[i] == "\\" else 1
        return i + 1

    def skip_address(i: int) -> int:
        if i < n and script[i].isdigit():
            while i < n and (script[i].isdigit() or script[i] == "~"):
                i += 1
        elif i < n and script[i] == "$":
            i += 1
        elif i < n and script[i] == "/":
            i = skip_regex(i + 1, "/")
        elif i + 1 < n and script[i] == "\\":
            i = skip_regex(i + 2, script[i + 1])
        else:
            return i
        while i < n and script[i] in "IM":
            i += 1
        return i

    while i < n:
        while i < n and script[i] in " \t\n;":
            i += 1
        if i >= n:
            break
        i = skip_address(i)
        if i < n and script[i] == ",":
            i += 1
            if i < n and script[i] in "+~":
                i += 1
            i = skip_address(i)
        while i < n and script[i] in " \t!":
            i += 1
        if i >= n:
            return "cannot read the sed script"
        cmd = script[i]
        i += 1
        if cmd in "{}=dDgGhHnNpPxzF":
            continue
        if cmd in "qQlL":
            while i < n and (script[i].isdigit() or script[i] in " \t"):
                i += 1
            continue
        if cmd in "wW":
            return f"sed {cmd} writes to a file"
        if cmd == "e":
            return "sed e runs a command"
        if cmd in "#:btTvrRaic":
            # up to the end of the line; a/i/c text may go on after a trailing backslash
            while i < n and script[i] != "\n" and not (cmd in "btT" and script[i] == ";"):
                i += 2 if cmd in "aic" and script[i] == "\\" else 1
            continue
        if cmd in "sy":
            if i >= n:
                return "cannot read the sed script"
            delim = script[i]
            i = skip_regex(skip_regex(i + 1, delim), delim)
            while cmd == "s" and i < n and script[i] not in " \t\n;}":
                if script[i] == "w":
                    return "sed s///w writes to a file"
                if script[i] == "e":
                    return "sed s///e runs a command"
                i += 1
            continue
        return "cannot read the sed script"
    return None


_AWK_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')


def _r_awk(args: list[Word]) -> str | None:
    o = _Opts(
        args,
        "FvfiEelW",
        ("field-separator", "assign", "file", "include", "exec", "source", "load"),
    )
    if o.has("-i", "--include", "-l", "--load"):
        return "awk -i/-l loads code (-i inplace edits files)"
    if o.has("-f", "--file", "-E", "--exec"):
        return "awk -f runs a program file"
    if o.has("-o", "-p", "-d", "-D", "--pretty-print", "--profile", "--dump-variables"):
        return "this awk option writes a file"
    programs = o.values("-e", "--source") or o.operands[:1]
    for program in programs:
        if not program.literal:
            return "the awk program is built at run time"
        code = _AWK_STRING.sub('""', program.text)
        if re.search(r"\bsystem\s*\(", code):
            return "awk system() runs a command"
        if re.search(r"\|&?\s*getline\b|\|&", code):
            return "awk runs a command (| getline)"
        for m in re.finditer(r"\bprintf?\b([^;{}\n]*)", code):
            body = m.group(1)
            while re.search(r"\([^()]*\)", body):
                body = re.sub(r"\([^()]*\)", "", body)
            if ">" in body or "|" in body:
                return "awk print redirects its output (> or |)"
    return None


def _r_sort(args: list[Word]) -> str | None:
    o = _Opts(
        args,
        "kotST",
        ("key", "output", "field-separator", "buffer-size", "temporary-directory")
        + ("files0-from", "batch-size", "parallel", "compress-program", "random-source"),
    )
    if o.has("-o", "--output"):
        return "sort -o writes a file"
    if o.has("--compress-program"):
        return "sort --compress-program runs a program"
    return None


def _r_uniq(args: list[Word]) -> str | None:
    o = _Opts(args, "fsw", ("skip-fields", "skip-chars", "check-chars"))
    return "uniq with a second file writes to it" if len(o.operands) > 1 else None


def _r_tee(args: list[Word]) -> str | None:
    return "tee writes to files"


def _r_hostname(args: list[Word]) -> str | None:
    o = _Opts(args, "F", ("file",))
    if o.operands or o.has("-F", "--file", "-b", "--boot"):
        return "hostname with a name sets it"
    return None


def _r_date(args: list[Word]) -> str | None:
    o = _Opts(args, "dfr", ("date", "file", "reference"))
    if o.has("-s", "--set"):
        return "date -s sets the clock"
    if any(not w.text.startswith("+") for w in o.operands):
        return "date with a time sets the clock"
    return None


def _r_top(args: list[Word]) -> str | None:
    return None if _Opts(args, "dnopuUEe").has("-b") else "top without -b is interactive"


# Objects in the order ip matches abbreviations, each with its actions in ip's own order
# (`ip a s` is show, `ip link s` is set); "!" marks the actions that change something.
_IP_OBJECTS = (
    ("address", "add! change! chg! replace! delete! list show lst flush! save! showdump restore!"),
    ("route", "add! change! chg! replace! prepend! append! test! delete! list show lst get flush!"),
    ("link", "add! set! change! replace! delete! show lst list xstats afstats"),
    ("neighbour", "add! change! chg! replace! delete! get show list lst flush!"),
    ("neighbor", "add! change! chg! replace! delete! get show list lst flush!"),
    ("rule", "add! delete! list show lst flush! save! restore!"),
    ("maddress", "add! delete! list show lst"),
    ("netns", "list list-id add! attach! set! delete! identify pids! exec! monitor!"),
)


def _r_ip(args: list[Word]) -> str | None:
    texts = _texts(args)
    i = 0
    while i < len(texts) and texts[i].startswith("-"):
        option = texts[i].lstrip("-")
        if option in ("b", "batch", "force"):
            return "ip -batch runs commands from a file"
        i += 2 if option in ("n", "netns", "f", "family", "rc", "rcvbuf", "l", "loops") else 1
    if i >= len(texts):
        return None
    obj, rest = texts[i], texts[i + 1 :]
    actions = next((a.split() for full, a in _IP_OBJECTS if full.startswith(obj)), None)
    if actions is None:
        return f"not on the read-only list: ip {obj}"
    operands = [t for t in rest if not t.startswith("-")]
    if not operands:
        return None  # `ip addr`, `ip -s link`: show
    action = operands[0]
    full = next((a for a in actions if a.rstrip("!").startswith(action)), None)
    if full is None:
        return f"not on the read-only list: ip {obj} {action}"
    return f"ip {obj} {action} changes the network" if full.endswith("!") else None


def _r_ifconfig(args: list[Word]) -> str | None:
    operands = [w for w in args if not w.text.startswith("-")]
    return "ifconfig with settings changes an interface" if len(operands) > 1 else None


def _r_ping(args: list[Word]) -> str | None:
    if _Opts(args, "cFiIlmMpQsStTwW").has("-c"):
        return None
    return "ping without -c runs forever"


_CURL_ARG = "AbcCdDeEFHKmoPQrtTuUwxXyYz"
_CURL_LONG = _split(
    "output upload-file data data-ascii data-binary data-raw data-urlencode form form-string "
    "request config cookie-jar dump-header trace trace-ascii stderr libcurl json user header "
    "user-agent referer cookie max-time connect-timeout proxy write-out range retry cacert "
    "cert key resolve connect-to url quote output-dir etag-save hsts alt-svc"
)


def _r_curl(args: list[Word]) -> str | None:
    o = _Opts(args, _CURL_ARG, _CURL_LONG)
    if any(v.text not in ("-", "/dev/null") for v in o.values("-o", "--output")):
        return "curl -o writes a file"
    if o.has("-O", "--remote-name", "--remote-name-all", "-J", "--output-dir"):
        return "curl -O writes a file"
    if o.has("-T", "--upload-file"):
        return "curl -T uploads a file"
    if o.has("-d", "-F", "--json") or any(g.startswith(("data", "form")) for g in o.longs()):
        return "curl sends data (-d/-F)"
    for method in o.values("-X", "--request"):
        if method.text.upper() not in ("GET", "HEAD"):
            return f"curl -X {method.text} changes a remote resource"
    if o.has("-K", "--config", "-Q", "--quote"):
        return "curl -K/-Q runs extra instructions"
    for option in ("-c", "--cookie-jar", "-D", "--dump-header", "--trace", "--trace-ascii"):
        if any(v.text not in ("-", "/dev/null") for v in o.values(option)):
            return f"curl {option} writes a file"
    if o.has("--stderr", "--libcurl", "--etag-save", "--hsts", "--alt-svc"):
        return "this curl option writes a file"
    return None


def _r_wget(args: list[Word]) -> str | None:
    o = _Opts(
        args,
        "oaeiBtOTwQPlARDIXU",
        _split(
            "output-document output-file append-output execute input-file tries timeout wait "
            "directory-prefix level post-data post-file method body-data body-file header"
        ),
    )
    if o.has("-o", "--output-file", "-a", "--append-output"):
        return "wget -o writes a log file"
    if o.has("-e", "--execute"):
        return "wget -e runs wgetrc commands"
    if o.has("-r", "--recursive", "-m", "--mirror", "-p", "--page-requisites"):
        return "wget -r saves files"
    if o.has("--post-data", "--post-file", "--body-data", "--body-file"):
        return "wget sends data"
    if any(m.text.upper() not in ("GET", "HEAD") for m in o.values("--method")):
        return "wget --method changes a remote resource"
    if o.has("--spider"):
        return None
    outputs = o.values("-O", "--output-document")
    if outputs and all(v.text in ("-", "/dev/null") for v in outputs):
        return None
    return "wget saves a file (read-only needs -O - or --spider)"


_SYSTEMCTL_READ = _names(
    "status show cat list-units list-unit-files list-timers list-sockets list-dependencies "
    "list-jobs list-machines list-paths list-automounts is-active is-enabled is-failed "
    "is-system-running get-default show-environment help"
)


def _r_systemctl(args: list[Word]) -> str | None:
    o = _Opts(args, *_SYSTEMCTL_OPTS)
    if not o.operands or o.operands[0].text in _SYSTEMCTL_READ:
        return None
    return f"systemctl {o.operands[0].text} changes the system"


def _r_journalctl(args: list[Word]) -> str | None:
    writes = _split(
        "--vacuum-size --vacuum-time --vacuum-files --rotate --flush --sync --relinquish-var "
        "--smart-relinquish-var --setup-keys --update-catalog"
    )
    o = _Opts(args, "uptSUDMcFog")
    hit = next((w for w in writes if o.has(w)), None)
    return f"journalctl {hit} changes the journal" if hit else None


_GIT_READ = _names(
    "status log diff show rev-parse ls-files ls-tree blame annotate describe shortlog grep "
    "show-ref cat-file rev-list for-each-ref name-rev count-objects whatchanged merge-base var "
    "check-ignore check-attr help version cherry show-branch verify-commit verify-tag "
    "diff-tree diff-files diff-index ls-remote"
)
_GIT_SAFE_CONFIG = ("color.", "log.", "column.", "core.quotepath", "core.abbrev", "safe.directory")


def _r_git(args: list[Word]) -> str | None:
    texts = _texts(args)
    i = 0
    while i < len(texts) and texts[i].startswith("-"):
        option = texts[i]
        if option in ("--version", "-v", "--help", "-h"):
            return None
        if option.startswith("--exec-path="):
            return "git --exec-path runs other programs"
        if option in ("-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env"):
            value = texts[i + 1] if i + 1 < len(texts) else ""
            if option == "-c" and not value.lower().startswith(_GIT_SAFE_CONFIG):
                return f"git -c {value} can make git run programs"
            i += 2
            continue
        i += 1
    if i >= len(texts):
        return None
    sub, rest = texts[i], args[i + 1 :]
    rest_texts = _texts(rest)
    if sub in _GIT_READ:
        if any(t.startswith("--output") for t in rest_texts):
            return f"git {sub} --output writes a file"
        if sub == "grep" and any(t.startswith(("-O", "--open-files")) for t in rest_texts):
            return "git grep -O opens files in a program"
        return None
    check = _GIT_SUB.get(sub)
    if check is None:
        return f"not on the read-only list: git {sub}"
    return check(rest)


def _git_branch(rest: list[Word]) -> str | None:
    allowed = _split(
        "all remotes verbose list show-current no-color color column no-column contains "
        "no-contains merged no-merged points-at sort format abbrev no-abbrev ignore-case"
    )
    o = _Opts(rest, "", ("contains", "no-contains", "merged", "no-merged", "points-at", "sort"))
    bad = next((f"-{c}" for c, _ in o.short if c not in "arvl"), None) or next(
        (f"--{g}" for g in o.longs() if g not in allowed), None
    )
    if bad:
        return f"git branch {bad} changes branches"
    if o.operands and not o.has("-l", "--list"):
        return "git branch NAME creates a branch"
    return None


def _git_tag(rest: list[Word]) -> str | None:
    allowed = _split("list contains no-contains points-at merged no-merged sort format column")
    o = _Opts(rest, "", ("contains", "no-contains", "points-at", "merged", "no-merged", "sort"))
    if any(c not in "lnv0123456789" for c, _ in o.short) or any(
        g not in allowed for g in o.longs()
    ):
        return "git tag changes tags"
    if o.operands and not o.has("-l", "--list", "-v"):
        return "git tag NAME creates a tag"
    return None


def _git_config(rest: list[Word]) -> str | None:
    o = _Opts(rest, "f", ("file", "blob", "type", "default", "comment"))
    writes = ("unset", "unset-all", "add", "replace-all", "rename-section", "remove-section")
    if o.has("-e", "--edit") or any(g in writes for g in o.longs()):
        return "git config changes settings"
    operands = _texts(o.operands)
    if operands[:1] in (["get"], ["list"]):
        return None
    if operands[:1] and operands[0] in ("set", "unset", "rename-section", "remove-section", "edit"):
        return "git config changes settings"
    reads = ("-l", "--list", "--get", "--get-all", "--get-regexp", "--get-urlmatch")
    if o.has(*reads) or len(operands) <= 1:
        return None
    return "git config NAME VALUE changes a setting"


def _git_first(sub: str, *allowed: str, empty: bool = False) -> _Rule:
    """`git SUB ACTION`: read-only for the listed actions (and no action when `empty`)."""

    def check(rest: list[Word]) -> str | None:
        operands = [w.text for w in rest if not w.text.startswith("-")]
        if (not operands and empty) or (operands and operands[0] in allowed):
            return None
        return f"not on the read-only list: git {sub} {' '.join(operands[:1])}".rstrip()

    return check


def _git_reflog(rest: list[Word]) -> str | None:
    if rest and rest[0].text in ("expire", "delete"):
        return f"git reflog {rest[0].text} changes the reflog"
    return None


_GIT_SUB: dict[str, _Rule] = {
    "branch": _git_branch,
    "tag": _git_tag,
    "config": _git_config,
    "remote": _git_first("remote", "show", "get-url", empty=True),
    "stash": _git_first("stash", "list", "show"),
    "reflog": _git_reflog,
    "worktree": _git_first("worktree", "list"),
    "submodule": _git_first("submodule", "status", "summary"),
    "notes": _git_first("notes", "list", "show"),
}


_DOCKER_READ = _names("ps images logs inspect version info top port history diff")
_DOCKER_GROUPS = {
    "container": _names("ls list ps inspect logs top port diff stats"),
    "image": _names("ls list inspect history"),
    "network": _names("ls list inspect"),
    "volume": _names("ls list inspect"),
    "system": _names("df info"),
    "context": _names("ls list show inspect"),
    "compose": _names("ps logs config ls images top version port"),
}


def _r_docker(args: list[Word]) -> str | None:
    o = _Opts(
        args, "Hcl", ("host", "context", "config", "log-level", "connection", "url"), stop=True
    )
    if not o.operands:
        return None  # --version, -v, help
    sub, rest = o.operands[0].text, o.operands[1:]
    if sub == "compose":
        return _r_compose(rest)
    if sub in _DOCKER_GROUPS:
        inner = _Opts(rest, "f", ("filter", "format"))
        action = inner.operands[0].text if inner.operands else "ls"
        if action not in _DOCKER_GROUPS[sub]:
            return f"not on the read-only list: docker {sub} {action}"
        sub, rest = action, inner.operands[1:]
    if sub == "stats":
        return None if any(w.text == "--no-stream" for w in args) else "docker stats runs forever"
    if sub in _DOCKER_READ or sub in ("ls", "list"):
        return None
    return f"not on the read-only list: docker {sub}"


def _r_compose(args: list[Word]) -> str | None:
    o = _Opts(
        args,
        "fp",
        ("file", "project-name", "project-directory", "profile", "env-file", "ansi"),
        stop=True,
    )
    if not o.operands or o.operands[0].text in _DOCKER_GROUPS["compose"]:
        return None
    return f"not on the read-only list: docker compose {o.operands[0].text}"


_KUBECTL_READ = _names("get describe logs top version explain api-resources api-versions events")
_KUBECTL_ARG = ("namespace", "context", "kubeconfig", "server", "cluster", "user", "token", "as")


def _r_kubectl(args: list[Word]) -> str | None:
    o = _Opts(args, "nsv", _KUBECTL_ARG, stop=True)
    if not o.operands:
        return None
    sub, rest = o.operands[0].text, _texts(o.operands[1:])
    if sub in _KUBECTL_READ:
        return None
    if sub == "cluster-info":
        if any(t.startswith("--output-directory") for t in rest):
            return "kubectl cluster-info dump --output-directory writes files"
        return None
    operands = [t for t in rest if not t.startswith("-")]
    if (
        sub == "config"
        and operands[:1]
        and operands[0]
        in (
            "view",
            "get-contexts",
            "current-context",
            "get-clusters",
            "get-users",
        )
    ):
        return None
    if sub == "auth" and operands[:1] in (["can-i"], ["whoami"]):
        return None
    return f"not on the read-only list: kubectl {sub}"


def _first_operand(tool: str, short_arg: str, long_arg: Sequence[str], allowed: str) -> _Rule:
    """A tool whose first operand is a subcommand from `allowed` (or none at all)."""
    reads = frozenset(allowed.split())

    def check(args: list[Word]) -> str | None:
        o = _Opts(args, short_arg, long_arg)
        if not o.operands or o.operands[0].text in reads:
            return None
        return f"not on the read-only list: {tool} {o.operands[0].text}"

    return check


def _r_dpkg(args: list[Word]) -> str | None:
    shorts = set("lLsSpcIWfCV")
    longs = _split(
        "list listfiles status search print-avail get-selections print-architecture "
        "print-foreign-architectures compare-versions contents info show field version help "
        "audit verify admindir root showformat no-pager"
    )
    o = _Opts(args, "", ())
    bad = next((f"-{c}" for c, _ in o.short if c not in shorts), None) or next(
        (f"--{g}" for g in o.longs() if g not in longs), None
    )
    if bad:
        return f"dpkg {bad} changes packages"
    return None if (o.short or o.long) else "dpkg without a query option"


def _r_rpm(args: list[Word]) -> str | None:
    texts = _texts(args)
    writes = _split(
        "--setperms --setugids --restore --erase --install --upgrade --freshen --import "
        "--rebuilddb --initdb --addsign --resign --delsign --pipe --eval -e -i -U -F"
    )
    if not texts or not (
        texts[0].startswith(("-q", "--query")) or texts[0] in ("-V", "--verify", "--version")
    ):
        return "rpm without -q changes packages"
    hit = next((t for t in texts if t in writes), None)
    return f"rpm {hit} changes packages" if hit else None


def _r_yum(args: list[Word]) -> str | None:
    o = _Opts(
        args,
        "cdeRx",
        ("config", "installroot", "enablerepo", "disablerepo", "releasever", "setopt", "repo"),
    )
    ops = _texts(o.operands)
    reads = _split(
        "list info search repolist repoinfo check-update provides whatprovides deplist repoquery"
    )
    if not ops or ops[0] in reads:
        return None
    if ops[0] == "history" and (len(ops) == 1 or ops[1] in ("list", "info", "summary")):
        return None
    if ops[0] == "updateinfo" and ops[1:2] in ([], ["list"], ["info"], ["summary"]):
        return None
    return f"not on the read-only list: yum/dnf {ops[0]}"


def _r_pip(args: list[Word]) -> str | None:
    o = _Opts(args, "", ("python", "log", "cache-dir", "proxy", "retries", "timeout"), stop=True)
    if o.has("--log"):
        return "pip --log writes a file"
    ops = _texts(o.operands)
    if not ops or ops[0] in ("list", "show", "freeze", "check", "help", "inspect", "debug"):
        return None
    if ops[0] == "config" and ops[1:2] in (["list"], ["get"], ["debug"]):
        return None
    return f"not on the read-only list: pip {ops[0]}"


def _r_iptables(args: list[Word]) -> str | None:
    texts = _texts(args)
    listing = False
    i = 0
    while i < len(texts):
        text = texts[i]
        if text in ("--list", "--list-rules"):
            listing = True
        elif text in ("--numeric", "--verbose", "--exact", "--line-numbers", "--wait"):
            pass
        elif text in ("-t", "--table"):
            i += 1
        elif re.fullmatch(r"-[LSnvxwt]+", text):
            listing = listing or "L" in text or "S" in text
            if text.endswith("t"):
                i += 1
        elif text.startswith(("--table=", "--wait=")) or not text.startswith("-"):
            pass  # a chain name after -L, or a -w timeout
        else:
            return "iptables changes firewall rules"
        i += 1
    return None if listing else "iptables changes firewall rules"


def _r_nft(args: list[Word]) -> str | None:
    o = _Opts(args, "fI", ("file", "includepath"))
    if o.has("-f", "--file", "-i", "--interactive"):
        return "nft -f runs a rules file"
    ops = _texts(o.operands)
    return None if ops[:1] == ["list"] else "nft changes firewall rules"


def _r_ufw(args: list[Word]) -> str | None:
    ops = [w.text for w in args if not w.text.startswith("-")]
    if ops[:1] in (["status"], ["version"]) or ops[:2] == ["app", "list"]:
        return None
    return "ufw changes firewall rules"


_OPENSSL_READ = _names(
    "x509 s_client version verify crl asn1parse ciphers dgst list errstr pkcs7 rand req"
)


def _r_openssl(args: list[Word]) -> str | None:
    texts = _texts(args)
    if not texts or texts[0] not in _OPENSSL_READ:
        return f"not on the read-only list: openssl {' '.join(texts[:1])}".rstrip()
    writes = ("-out", "-keyout", "-writerand", "-CAcreateserial", "-sess_out", "-keylogfile")
    hit = next((t for t in texts if t in writes), None)
    if hit:
        return f"openssl {hit} writes a file"
    if texts[0] == "req" and any(t in ("-new", "-newkey", "-x509") for t in texts):
        return "openssl req -new writes a key"
    return None


def _r_service(args: list[Word]) -> str | None:
    texts = _texts(args)
    if texts == ["--status-all"] or (len(texts) == 2 and texts[1] == "status"):
        return None
    return f"service {' '.join(texts[1:2]) or 'without status'} changes a service"


def _r_mount(args: list[Word]) -> str | None:
    return None if all(w.text == "-l" for w in args) else "mount with arguments mounts something"


def _r_sysctl(args: list[Word]) -> str | None:
    o = _Opts(args, "r", ("pattern",))
    if o.has("-w", "--write", "-p", "--load", "--system", "-f"):
        return "sysctl -w/-p sets kernel values"
    if any("=" in w.text for w in o.operands):
        return "sysctl name=value sets a kernel value"
    return None


def _r_dmesg(args: list[Word]) -> str | None:
    o = _Opts(args, "fFlns", ("facility", "file", "level", "buffer-size", "console-level"))
    if o.has(
        "-c", "-C", "-D", "-E", "-n", "--clear", "--read-clear", "--console-off", "--console-on"
    ) or o.has("--console-level"):
        return "this dmesg option changes the kernel log"
    return None


def _r_crontab(args: list[Word]) -> str | None:
    o = _Opts(args, "u", ("user",))
    if o.has("-l", "--list") and not o.has("-e", "-r", "-i") and not o.operands:
        return None
    return "crontab changes the crontab"


def _flag_writes(short_arg: str, long_arg: Sequence[str], reason: str, *flags: str) -> _Rule:
    """A read-only tool with a few options that write: `sar -o`, `tree -o`, `ss -K`..."""

    def check(args: list[Word]) -> str | None:
        return reason if _Opts(args, short_arg, long_arg).has(*flags) else None

    return check


def _r_xxd(args: list[Word]) -> str | None:
    o = _Opts(args, "cglnosC", ("cols", "groupsize", "len", "name", "seek"))
    return "xxd writes to its second file" if len(o.operands) > 1 else None


def _r_operands(limit: int, allowed: str, tool: str) -> _Rule:
    """A tool that reads with no subcommand or one of `allowed`, and at most `limit` operands."""
    reads = frozenset(allowed.split())

    def check(args: list[Word]) -> str | None:
        ops = [w.text for w in args if not w.text.startswith("-")]
        if not ops or (ops[0] in reads and len(ops) <= limit):
            return None
        return f"not on the read-only list: {tool} {ops[0]}"

    return check


def _r_loginctl(args: list[Word]) -> str | None:
    ops = [w.text for w in args if not w.text.startswith("-")]
    if not ops or ops[0].startswith(("list-", "show-")):
        return None
    if ops[0] in ("session-status", "user-status", "seat-status"):
        return None
    return f"not on the read-only list: loginctl {ops[0]}"


def _r_file(args: list[Word]) -> str | None:
    return "file -C writes a magic file" if _Opts(args, "emfFP").has("-C", "--compile") else None


_RULES: dict[str, _Rule] = {
    **dict.fromkeys(("export", "declare", "typeset", "local", "readonly"), _r_assign),
    "sed": _r_sed,
    **dict.fromkeys(("awk", "gawk", "mawk", "nawk"), _r_awk),
    "sort": _r_sort,
    "uniq": _r_uniq,
    "tee": _r_tee,
    "hostname": _r_hostname,
    "date": _r_date,
    "top": _r_top,
    "ip": _r_ip,
    "ifconfig": _r_ifconfig,
    "ping": _r_ping,
    "curl": _r_curl,
    "wget": _r_wget,
    "systemctl": _r_systemctl,
    "journalctl": _r_journalctl,
    "git": _r_git,
    "docker": _r_docker,
    "podman": _r_docker,
    "docker-compose": _r_compose,
    "kubectl": _r_kubectl,
    "apt": _first_operand(
        "apt", "oct", (), "list show search policy depends rdepends showsrc madison"
    ),
    "apt-cache": _first_operand(
        "apt-cache",
        "oc",
        (),
        "policy show search depends rdepends showpkg showsrc stats madison pkgnames unmet dump",
    ),
    "dpkg": _r_dpkg,
    "rpm": _r_rpm,
    "yum": _r_yum,
    "dnf": _r_yum,
    "pip": _r_pip,
    "iptables": _r_iptables,
    "ip6tables": _r_iptables,
    "nft": _r_nft,
    "ufw": _r_ufw,
    "openssl": _r_openssl,
    "service": _r_service,
    "mount": _r_mount,
    "sysctl": _r_sysctl,
    "dmesg": _r_dmesg,
    "crontab": _r_crontab,
    "xxd": _r_xxd,
    "file": _r_file,
    "rg": _flag_writes("egtTmABCfjMr", ("pre",), "rg --pre runs a program", "--pre"),
    "sar": _flag_writes("efiIPnos", (), "sar -o writes a file", "-o"),
    "tree": _flag_writes("LIPoHT", (), "tree -o writes a file", "-o"),
    "ss": _flag_writes("fAFN", (), "ss -K kills sockets", "-K", "--kill"),
    "lastlog": _flag_writes(
        "btu", (), "lastlog -C/-S changes the log", "-C", "-S", "--clear", "--set"
    ),
    "hostnamectl": _r_operands(1, "status", "hostnamectl"),
    "timedatectl": _r_operands(
        1, "status show show-timesync timesync-status list-timezones", "timedatectl"
    ),
    "localectl": _r_operands(1, "status list-locales list-keymaps", "localectl"),
    "resolvectl": _r_operands(
        9, "status query statistics show-cache show-server-state", "resolvectl"
    ),
    "loginctl": _r_loginctl,
}

# Tools that only read when asked for their version: name -> the flags that do that.
_VERSION_ONLY = {
    "python": ("--version", "-V", "-VV"),
    "node": ("--version", "-v"),
    "nodejs": ("--version", "-v"),
    "java": ("-version", "--version"),
    "javac": ("-version", "--version"),
    "go": ("version",),
    "perl": ("-v", "-V", "--version"),
    "ruby": ("--version",),
    "php": ("-v", "--version"),
    "lua": ("-v",),
    "rustc": ("--version", "-V"),
    "cargo": ("--version", "-V"),
    "gcc": ("--version",),
    "g++": ("--version",),
    "cc": ("--version",),
    "clang": ("--version",),
    "make": ("--version",),
    "nginx": ("-v", "-V"),
    "apache2": ("-v", "-V"),
    "httpd": ("-v", "-V"),
    "psql": ("--version", "-V"),
    "mysql": ("--version", "-V"),
    "mysqld": ("--version", "-V"),
    "postgres": ("--version", "-V"),
    "redis-server": ("--version", "-v"),
    "redis-cli": ("--version", "-v"),
    "terraform": ("version", "-version", "--version"),
    "ansible": ("--version",),
    "helm": ("version",),
}


def _injectable(args: Sequence[Word]) -> Word | None:
    """An argument that may turn into an option at run time (`$OPT`, `*` matching `-i`)."""
    for word in args:
        if word.text == "--" and word.literal:
            return None
        if not word.literal and word.text[:1] in "$`" and not _HOME_VAR.match(word.text):
            return word
        if word.glob and word.text[:1] in "*?[":
            return word
    return None


def _read_only_rule(name: str, args: list[Word]) -> Assessment:
    if name in _ALWAYS:
        return _ro(name)  # none of these has an option that writes
    injectable = _injectable(args)
    if injectable is not None:
        return _write(f"{name}: {injectable.raw} could expand to an option")
    rule = _RULES.get(name)
    if rule is None:
        base = re.sub(r"[0-9.]+$", "", name)  # python3.11 -> python, pip3 -> pip, ping6 -> ping
        rule = _RULES.get(base) if base in ("pip", "ping") else None
        flags = _VERSION_ONLY.get(base) or _VERSION_ONLY.get(name)
        if rule is None and flags:
            if len(args) == 1 and args[0].text in flags:
                return _ro(name)
            return _write(f"not on the read-only list: {name} (only {flags[0]} is)")
    if rule is None:
        return _write(f"not on the read-only list: {name}")
    reason = rule(args)
    return _write(reason) if reason else _ro(name)
