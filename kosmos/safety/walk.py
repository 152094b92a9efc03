"""The walk over a parsed command line: every simple command it would run, and what each does.

A `Walk` visits pipelines and lists, subshells, groups, functions, `$(...)`, backticks,
here-documents and redirections; each argv goes to the handler for its program: a wrapper
that runs another command (`wrappers`), a check for danger (`danger`), or the read-only
rules (`rules`); the argv that finally runs is then checked for reads of secret material
(`secret_reads`). It keeps what the line has established so far (the working directory after
a literal `cd`, the functions defined) and the worst finding.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from kosmos.safety.arith import arith_hazard, test_hazard, word_hazard
from kosmos.safety.builtins import BUILTINS
from kosmos.safety.catalogue import (
    DOWNLOADERS,
    FORK_BOMB,
    HOME,
    NET_DEVICES,
    NO_SOCKETS,
    SERVICE_READS,
    SHELLS,
    SINKS,
)
from kosmos.safety.danger import danger, text_danger
from kosmos.safety.paths import (
    command_name,
    expand_braces,
    is_block_device,
    is_critical_file,
    normpath,
    word_paths,
)
from kosmos.safety.queries import (
    calls,
    mentions_download,
    risky_assignment,
    risky_name,
    runs_its_input,
)
from kosmos.safety.rules import hidden_option, read_only_rule
from kosmos.safety.secret_files import LINE_KEEPERS, NAME_READERS
from kosmos.safety.secret_reads import names_secrets, secret_read, secret_word
from kosmos.safety.secret_vars import dump_reads_secrets, env_dump, expands_secret, printed_secret
from kosmos.safety.shell import (
    Command,
    Compound,
    Dialect,
    Pipeline,
    Redirect,
    Script,
    ShellSyntaxError,
    Simple,
    Word,
    parse,
)
from kosmos.safety.verdict import RANK, Assessment, dangerous, ro, secret, worse_of, write
from kosmos.safety.wrappers import WRAPPERS, shell

__all__ = ["Walk", "rough_danger", "unparseable"]


# Compound commands whose bodies may or may not run.
_CONDITIONAL = frozenset({"if", "while", "until", "for", "case"})
# What a run-time argument list may grow to from one brace word before it is not followed.
BRACE_LIMIT = 64
# Wrappers and builtins whose handlers read every word themselves: the rest take options
# getopt's way, and an option word the shell builds at run time makes them a write.
_OWN_WORDS = frozenset({"eval", "find", "set", "trap", "let", "test", "[", "getopts"})


@dataclass
class Walk:
    """What the walk over one script knows: the working directory if a literal `cd` set it,
    the functions defined so far, and the worst finding."""

    dialect: Dialect = "bash"
    cwd: str | None = None
    # name -> True when the function is surely defined here, False when only maybe (defined
    # under a condition, in a function body, or `unset` since): a call to a maybe-function
    # is judged as the program of that name too.
    functions: dict[str, bool] = field(default_factory=dict)
    depth: int = 0
    worst: Assessment | None = None
    names: list[str] = field(default_factory=list)
    service: bool = False  # some read goes through a local service's socket (see `result`)
    secret: bool = False  # some part reads secret material
    conditional: bool = False  # walking a part of the line that may not run
    fed_nothing: bool = False  # the command walked is fed by a bare `echo |` or `true |`

    def add(self, finding: Assessment) -> None:
        self.secret = self.secret or finding.secret
        if finding.verdict == "read_only":
            self.names.append(finding.reason)
            self.service = self.service or finding.service
        elif self.worst is None or RANK[finding.verdict] > RANK[self.worst.verdict]:
            self.worst = finding

    def result(self) -> Assessment:
        if self.worst is not None:
            if self.secret and not self.worst.secret:
                return replace(self.worst, secret=True)
            return self.worst
        names = list(dict.fromkeys(n for joined in self.names for n in joined.split(", ") if n))
        if not names:
            return ro("nothing runs")
        shown = ", ".join(names[:6]) + (", ..." if len(names) > 6 else "")
        # The lock's socket exception covers every program of the line: only when each is a
        # service read or opens no socket of its own (`catalogue.NO_SOCKETS`).
        service = self.service and all(n in SERVICE_READS or n in NO_SOCKETS for n in names)
        return ro(f"read-only: {shown}", service=service)

    def child(self, dialect: Dialect) -> Walk:
        return Walk(
            dialect=dialect,
            cwd=self.cwd,
            functions=dict(self.functions) if dialect == self.dialect else {},
            depth=self.depth + 1,
        )

    # -- the tree ----------------------------------------------------------------------------

    def script(self, script: Script) -> None:
        for pipeline in script.pipelines:
            self.pipeline(pipeline)

    def pipeline(self, pipeline: Pipeline) -> None:
        alone = len(pipeline.commands) == 1 and not pipeline.background
        # A pipeline's commands, a background job and what follows && or || may not run in
        # this shell, or at all: functions they define are only maybe defined afterwards.
        saved = self.conditional
        self.conditional = saved or not alone or pipeline.after in ("&&", "||")
        downloader = ""
        earlier: list[Word] = []  # the words of the commands before, for `... | xargs cat`
        dump = False  # what comes down the pipe is every variable with its value (`env |`)
        for i, command in enumerate(pipeline.commands):
            # what an `echo |` feeds the next command: one empty line, or s_client's `Q`
            self.fed_nothing = i > 0 and _says_nothing(pipeline.commands[i - 1])
            core = self.command(command, alone)
            self.fed_nothing = False
            if dump:
                name = command_name(core[0].text) if core and core[0].literal else "?"
                reason = dump_reads_secrets(name, core[1:])
                if reason:
                    self.add(secret(reason))
            if isinstance(command, Simple) and core and core[0].literal:
                name = command_name(core[0].text)
                dump = env_dump(name, core[1:]) or (dump and name in LINE_KEEPERS)
            else:
                dump = False
            if isinstance(command, Simple) and command.words:
                fed = command.words[0].text == "xargs" and core and core[0].literal
                reader = fed and command_name(core[0].text) not in NAME_READERS
                if reader and names_secrets(earlier, self.cwd):
                    self.add(secret(f"reads secret material (... | xargs {core[0].text})"))
                earlier.extend(command.words[1:])
            if not core or not core[0].literal:
                continue
            name = command_name(core[0].text)
            if downloader and runs_its_input(name, core[1:]):
                self.add(dangerous(f"pipes a download into {name} ({downloader} ... | {name})"))
            if name in DOWNLOADERS or any(mentions_download(w) for w in core):
                downloader = name  # `curl ...`, and also `cat <(curl ...)`
        self.conditional = saved

    def command(self, command: Command, alone: bool) -> list[Word]:
        """Assess one command; return the argv it finally runs (for pipeline checks)."""
        if isinstance(command, Simple):
            return self.simple(command, alone)
        if isinstance(command, Compound):
            self.compound(command)
            return []
        if calls(command.body, command.name):
            self.add(dangerous(f"fork bomb: {command.name}() calls itself"))
        self.functions[command.name] = not self.conditional
        saved = self.conditional
        self.conditional = True  # what the body defines exists only once it is called
        self.command(command.body, alone=False)
        self.conditional = saved
        return []

    def compound(self, command: Compound) -> None:
        for word in command.words:
            self.word(word)
        for redirect in command.redirects:
            self.redirect(redirect)
        if self.dialect == "bash" and command.kind == "test":
            reason = test_hazard(command.words)
            if reason:
                self.add(write(reason))
        if command.var:
            risky = risky_name(command.var)
            if risky:
                self.add(write(f"for {command.var}: {risky}"))
        if command.kind == "arith":
            reason = arith_hazard(*command.words[0].arith[0], "((...))")
            self.add(write(reason) if reason else ro("(( ))"))
        cwd, functions, conditional = self.cwd, dict(self.functions), self.conditional
        self.conditional = conditional or command.kind in _CONDITIONAL
        for body in command.bodies:
            self.script(body)
        self.conditional = conditional
        if command.kind == "subshell":
            self.cwd, self.functions = cwd, functions

    def simple(self, command: Simple, alone: bool) -> list[Word]:
        for word in (*command.assigns, *command.words):
            self.word(word)
        for redirect in command.redirects:
            self.redirect(redirect)
        words = self._expand(command.words)
        if words is None:
            self.add(write(f"a brace expansion grows past {BRACE_LIMIT} words"))
            return []
        for word in (*command.words, *(r.target for r in command.redirects)):
            if word.fd_var and risky_name(word.fd_var):
                self.add(write(f"{{{word.fd_var}}} before a redirection {risky_name(word.fd_var)}"))
        head = command_name(words[0].text) if words and words[0].literal else ""
        for word in command.assigns:
            # `IFS= read -r line`: an assignment before read or mapfile is theirs alone.
            if head in ("read", "mapfile", "readarray") and word.text.startswith("IFS="):
                continue
            risky = risky_assignment(word.text, self.dialect)
            if risky:
                self.add(write(risky))
        if not words:
            return []
        finding, core = self.argv(words, functions=True)
        self.add(finding)
        quiet = _null_stdin(command) or (self.fed_nothing and not _stdin_redirected(command))
        if finding.verdict == "read_only" and _sends_stdin(core) and not quiet:
            # `printf 'POST /x ...' | openssl s_client -connect 127.0.0.1:443`
            self.add(write("openssl s_client sends what it reads: a read needs </dev/null"))
        if core and core[0].literal and runs_its_input(command_name(core[0].text), core[1:]):
            # `sh < <(curl ...)`, `bash <<EOF` with a $(curl ...) in the body
            fed = [r for r in command.redirects if r.op in ("<", "<<", "<<-", "<<<")]
            if any(mentions_download(Word(subs=[*r.target.subs, *r.subs])) for r in fed):
                self.add(dangerous(f"feeds a download to {command_name(core[0].text)}"))
        if alone and words[0].text in ("cd", "pushd"):
            self.cwd = self._cd_target(words[1:])
        return core

    def _expand(self, words: list[Word]) -> list[Word] | None:
        """The argv after bash's brace expansion (`{rm,-rf,x}` is `rm -rf x`); None when a
        brace word grows too large to follow."""
        if not any(w.brace and w.literal for w in words):
            return words
        out: list[Word] = []
        for word in words:
            if not (word.brace and word.literal):
                out.append(word)
                continue
            texts = expand_braces(word.text, BRACE_LIMIT)
            if len(texts) >= BRACE_LIMIT:
                return None
            out.extend(
                Word(t, word.raw, quoted=word.quoted, glob=word.glob, subs=word.subs) for t in texts
            )
        return out

    def word(self, word: Word) -> None:
        reason = word_hazard(word, self.dialect)
        if reason:
            self.add(write(reason))
        read = expands_secret(word)
        if read:
            self.add(secret(read))
        for sub in word.subs:
            saved = self.cwd
            self.script(sub)
            self.cwd = saved

    def redirect(self, redirect: Redirect) -> None:
        self.word(redirect.target)
        if redirect.body is not None:
            self.word(redirect.body)
        op, target = redirect.op, redirect.target
        if op not in ("<<", "<<-", "<<<") and normpath(target.text).startswith(NET_DEVICES):
            # bash opens a TCP or UDP connection for these names, reading or writing
            self.add(write(f"opens a network connection ({op} {target.raw})"))
            return
        if op == "<" and secret_word(target, self.cwd):
            self.add(secret(f"reads secret material (< {target.raw})"))
            return
        if op in ("<", "<<", "<<-", "<<<"):
            return
        if op == "<&" or (op == ">&" and (target.text.isdigit() or target.text == "-")):
            return  # duplicating or closing a descriptor writes nothing
        shown = f"{'' if redirect.fd is None else redirect.fd}{op} {target.raw}"
        path = normpath(target.text) if target.literal and target.text else ""
        if path in SINKS:
            return
        if is_block_device(target):
            self.add(dangerous(f"writes to a block device ({shown})"))
        elif op in (">", ">|", "&>", ">&") and is_critical_file(target, self):
            self.add(dangerous(f"truncates a system file ({shown})"))
        elif path == "/proc/sysrq-trigger":
            self.add(
                dangerous(
                    f"writes to /proc/sysrq-trigger, which can reboot or halt the host ({shown})"
                )
            )
        else:
            self.add(write(f"writes to a file ({shown})"))

    def _cd_target(self, args: Sequence[Word]) -> str | None:
        operands = [w for w in args if not w.text.startswith("-") or w.text == "-"]
        if not operands:
            return HOME
        word = operands[0]
        if word.text == "-" or word.glob:
            return None
        paths = word_paths(word, self)
        return paths[0] if len(paths) == 1 else None

    # -- one argv, and scripts in strings ---------------------------------------------------------

    def argv(self, words: list[Word], *, functions: bool = False) -> tuple[Assessment, list[Word]]:
        """Assess one argv; the finding and the argv that finally runs (past wrappers)."""
        head = words[0]
        if not head.literal:
            if mentions_download(head):
                return dangerous(f"runs a command fetched from the network ({head.raw})"), words
            return write(f"the command name is computed at run time: {head.raw}"), words
        name = command_name(head.text)
        if functions and self.functions.get(name):
            return ro(name), words  # its body was judged where it was defined
        handler = WRAPPERS.get(name) or BUILTINS.get(name) or (shell if name in SHELLS else None)
        if handler is not None:
            finding, core = handler(words, self)
            if finding.verdict == "read_only" and name not in _OWN_WORDS:
                table = "sh" if name in SHELLS else name
                hidden = hidden_option(table, words[1:], stop=True)
                if hidden is not None:
                    return write(f"{name}: {hidden.raw} could expand to an option"), core
        else:
            args = words[1:]
            reason = danger(name, args, self)
            if reason:
                return dangerous(reason), words
            finding, core = read_only_rule(name, args), words
        if finding.verdict == "read_only" and core and core[0].literal:
            name = command_name(core[0].text)
            read = secret_read(name, core[1:], self.cwd) or printed_secret(name, core[1:])
            if read:
                return secret(read), core
        return finding, core

    def nested(self, text: str, label: str, dialect: Dialect | None) -> Assessment:
        """Assess a script that a command runs from a string (`sh -c`, `eval`, `ssh host ...`)."""
        if dialect is None:
            return worse_of(self.nested(text, label, "bash"), self.nested(text, label, "sh"))
        if self.depth >= 8:
            return write(f"{label}: scripts nested too deeply to follow")
        try:
            script = parse(text, dialect)
        except ShellSyntaxError as e:
            rough = rough_danger(text)
            return dangerous(rough) if rough else write(f"cannot parse the script of {label}: {e}")
        child = self.child(dialect)
        child.script(script)
        result = child.result()
        if result.verdict == "read_only" and script.bashisms:
            return write(f"{label}: bash and sh read {script.bashisms[0]!r} differently")
        if result.verdict == "read_only":
            return ro(", ".join(child.names) or label.split()[0], service=child.service)
        return result

    def script_word(self, word: Word, label: str, dialect: Dialect | None) -> Assessment:
        if word.literal:
            return self.nested(word.text, label, dialect)
        if mentions_download(word):
            return dangerous(f'runs a downloaded script ({label} "$(curl ...)")')
        return write(f"{label} runs a script built at run time")


def _sends_stdin(core: list[Word]) -> bool:
    """Whether the argv sends what it reads on standard input to the host it reaches."""
    if len(core) < 2 or not core[0].literal:
        return False
    return command_name(core[0].text) == "openssl" and core[1].text == "s_client"


def _stdin_redirects(command: Simple) -> list[Redirect]:
    return [
        r
        for r in command.redirects
        if (r.fd if r.fd is not None else (0 if r.op[0] == "<" else 1)) == 0
    ]


def _stdin_redirected(command: Simple) -> bool:
    return bool(_stdin_redirects(command))


def _null_stdin(command: Simple) -> bool:
    """Whether the command's own last redirection of descriptor 0 is `< /dev/null`: then no
    pipe, here-string or outer redirection reaches its standard input."""
    found = _stdin_redirects(command)
    last = found[-1] if found else None
    return (
        last is not None
        and last.op == "<"
        and last.target.literal
        and normpath(last.target.text) == "/dev/null"
    )


def _says_nothing(command: Command) -> bool:
    """`echo`, `echo Q` (s_client's quit), `echo -n`, `true`, `:`, with no redirection."""
    if not isinstance(command, Simple) or command.assigns or command.redirects:
        return False
    texts = [w.text if w.literal else "$" for w in command.words]
    return texts in (["echo"], ["echo", "Q"], ["echo", "-n"], ["true"], [":"])


def rough_danger(text: str) -> str | None:
    """Dangers visible in text the parser could not follow: split it crudely and look."""
    if FORK_BOMB.search(text):
        return "fork bomb: a function that calls itself in a pipe"
    walk = Walk()
    for segment in re.split(r"[;&|\n()`]|\$\(", text):
        parts = [p.strip("'\"") for p in segment.split()]
        words = [Word(p, p, literal="$" not in p, glob="*" in p) for p in parts if p]
        while words and re.match(r"[A-Za-z_][A-Za-z0-9_]*=", words[0].text):
            words = words[1:]
        if words:
            finding, _ = walk.argv(words)
            if finding.verdict == "dangerous":
                return finding.reason
    return text_danger(text)


def unparseable(text: str, error: str) -> Assessment:
    reason = rough_danger(text)
    return dangerous(reason) if reason else write(f"cannot parse the command: {error}")
