"""A small POSIX-sh parser: enough structure to tell what a command line would run.

Nothing is executed or expanded. `parse` reads words (quotes, escapes, parameter, command,
arithmetic and process substitutions, also inside double quotes and here-documents),
operators, redirections, here-documents, subshells, groups, function definitions and the
compound commands (if, while, until, for, case, `[[ ]]`) into a tree of `Script`s.
Text it cannot follow (an unterminated quote, a here-document without its end line,
a stray `fi`) raises `ShellSyntaxError`; callers treat such text as unsafe.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = [
    "Command",
    "Compound",
    "Function",
    "Pipeline",
    "Redirect",
    "Script",
    "ShellSyntaxError",
    "Simple",
    "Word",
    "parse",
]

# Deeper nesting (of substitutions, subshells, groups, if/while/for...) than this is not a
# command a person proposes; refusing it keeps the recursive parser, and the walks over its
# tree, far from Python's recursion limit.
MAX_DEPTH = 40

_META = frozenset(" \t\n;&|()<>")
# Longest first, so `<<-` wins over `<<` and `&&` over `&`.
_OPERATORS = (
    "&>>",
    "<<<",
    "<<-",
    ";;&",
    "&&",
    "||",
    "|&",
    ";;",
    ";&",
    "<<",
    ">>",
    "<>",
    "<&",
    ">&",
    ">|",
    "&>",
    "|",
    "&",
    ";",
    "(",
    ")",
    "<",
    ">",
)
REDIRECT_OPS = frozenset({"<", ">", ">>", ">|", "<>", "<<", "<<-", "<<<", "<&", ">&", "&>", "&>>"})
_RESERVED_UNEXPECTED = frozenset({"then", "elif", "else", "fi", "do", "done", "esac", "}", "]]"})

_IO_NUMBER = re.compile(r"\d+(?=[<>])")
_PARAM = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-]")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class ShellSyntaxError(ValueError):
    """The text is not a command line this parser can follow."""


@dataclass
class Word:
    """One shell word. `text` is its value after quote removal, with expansions as written."""

    text: str = ""
    raw: str = ""
    literal: bool = True  # no parameter, command or arithmetic expansion
    quoted: bool = False
    glob: bool = False  # an unquoted * ? or [
    tilde: bool = False  # starts with an unquoted ~
    brace: bool = False  # an unquoted {...} that may expand to several words
    subs: list[Script] = field(default_factory=list)  # $(...), `...`, <(...), >(...)


@dataclass
class Redirect:
    op: str
    target: Word
    fd: int | None = None
    heredoc: str | None = None  # the body of << and <<-
    subs: list[Script] = field(default_factory=list)  # substitutions in an unquoted body


@dataclass
class Simple:
    assigns: list[Word]
    words: list[Word]
    redirects: list[Redirect]


@dataclass
class Compound:
    """subshell, group, if, while, until, for, case or test (`[[ ]]`)."""

    kind: str
    bodies: list[Script]
    words: list[Word]
    redirects: list[Redirect]


@dataclass
class Function:
    name: str
    body: Command


Command = Simple | Compound | Function


@dataclass
class Pipeline:
    commands: list[Command]
    background: bool = False
    negated: bool = False


@dataclass
class Script:
    pipelines: list[Pipeline]


@dataclass
class _Token:
    kind: str  # "word", "op", "newline", "eof"
    value: str = ""
    word: Word | None = None
    fd: int | None = None

    def describe(self) -> str:
        if self.kind == "word" and self.word is not None:
            return f"'{self.word.raw}'"
        return {"newline": "end of line", "eof": "end of text"}.get(self.kind, f"'{self.value}'")


def parse(text: str) -> Script:
    """Parse a whole command line; raise ShellSyntaxError where it cannot be followed."""
    return _Parser(text).parse_all()


class _Parser:
    def __init__(self, src: str, depth: int = 0) -> None:
        if depth > MAX_DEPTH:
            raise ShellSyntaxError("substitutions nested too deeply")
        self.src = src
        self.pos = 0
        self.depth = depth
        self.nesting = 0  # compound commands and expansions open right now
        self._peeked: _Token | None = None
        self._heredocs: list[tuple[Redirect, str, bool, bool]] = []

    # -- tokens ------------------------------------------------------------------------------

    def peek(self) -> _Token:
        if self._peeked is None:
            self._peeked = self._lex()
        return self._peeked

    def take(self) -> _Token:
        tok = self.peek()
        self._peeked = None
        return tok

    def _lex(self) -> _Token:
        src, n = self.src, len(self.src)
        while True:
            while self.pos < n and src[self.pos] in " \t":
                self.pos += 1
            if src.startswith("\\\n", self.pos):
                self.pos += 2
                continue
            if self.pos < n and src[self.pos] == "#":
                end = src.find("\n", self.pos)
                self.pos = n if end == -1 else end
                continue
            break
        if self.pos >= n:
            if self._heredocs:
                raise ShellSyntaxError(f"here-document without its body (<<{self._heredocs[0][1]})")
            return _Token("eof")
        c = src[self.pos]
        if c == "\n":
            self.pos += 1
            self._read_heredocs()
            return _Token("newline")
        fd = None
        m = _IO_NUMBER.match(src, self.pos)
        if m:
            fd = int(m.group())
            self.pos = m.end()
        elif src.startswith(("<(", ">("), self.pos):
            start = self.pos
            self.pos += 2
            sub = self._substitution()
            word = Word(src[start : self.pos], src[start : self.pos], literal=False, subs=[sub])
            return _Token("word", word=word)
        for op in _OPERATORS:
            if src.startswith(op, self.pos):
                self.pos += len(op)
                return _Token("op", op, fd=fd)
        return _Token("word", word=self._read_word())

    def _read_heredocs(self) -> None:
        src = self.src
        for redirect, delim, strip_tabs, quoted in self._heredocs:
            lines: list[str] = []
            while True:
                if self.pos >= len(src):
                    raise ShellSyntaxError(f"here-document not ended by '{delim}'")
                end = src.find("\n", self.pos)
                line = src[self.pos :] if end == -1 else src[self.pos : end]
                self.pos = len(src) if end == -1 else end + 1
                if strip_tabs:
                    line = line.lstrip("\t")
                if line == delim:
                    break
                lines.append(line)
            redirect.heredoc = "\n".join(lines)
            if not quoted:
                # An unquoted delimiter leaves $(...) and backticks in the body live.
                body = _Parser(redirect.heredoc, self.depth + 1)
                word = Word()
                body._read_double(word, [], end=None)
                redirect.subs = word.subs
        self._heredocs.clear()

    # -- words -------------------------------------------------------------------------------

    def _read_word(self) -> Word:
        src, n = self.src, len(self.src)
        start = self.pos
        word = Word()
        buf: list[str] = []
        while self.pos < n:
            c = src[self.pos]
            if c in _META:
                break
            if c == "\\":
                if self.pos + 1 >= n:
                    buf.append("\\")
                    self.pos += 1
                elif src[self.pos + 1] == "\n":
                    self.pos += 2
                else:
                    buf.append(src[self.pos + 1])
                    word.quoted = True
                    self.pos += 2
            elif c == "'":
                end = src.find("'", self.pos + 1)
                if end == -1:
                    raise ShellSyntaxError("unterminated single quote")
                buf.append(src[self.pos + 1 : end])
                word.quoted = True
                self.pos = end + 1
            elif c == '"':
                self.pos += 1
                self._read_double(word, buf, end='"')
                word.quoted = True
            elif c == "$":
                self._read_dollar(word, buf, in_double=False)
            elif c == "`":
                self._read_backtick(word, buf, in_double=False)
            else:
                if c in "*?[":
                    word.glob = True
                elif c == "~" and self.pos == start:
                    word.tilde = True
                elif c == "{":
                    word.brace = True  # settled below, once the whole word is read
                buf.append(c)
                self.pos += 1
        word.text = "".join(buf)
        word.raw = src[start : self.pos]
        if word.brace:
            tail = word.text[word.text.find("{") :]
            word.brace = "}" in tail and ("," in tail or ".." in tail)
        return word

    def _read_double(self, word: Word, buf: list[str], end: str | None) -> None:
        """Read up to the closing quote `end` (None: to the end of the text, for heredocs)."""
        src, n = self.src, len(self.src)
        escapable = '$`"\\\n' if end else "$`\\\n"
        while True:
            if self.pos >= n:
                if end is None:
                    return
                raise ShellSyntaxError("unterminated double quote")
            c = src[self.pos]
            if c == end:
                self.pos += 1
                return
            if c == "\\" and self.pos + 1 < n and src[self.pos + 1] in escapable:
                if src[self.pos + 1] != "\n":
                    buf.append(src[self.pos + 1])
                self.pos += 2
            elif c == "$":
                self._read_dollar(word, buf, in_double=True)
            elif c == "`":
                self._read_backtick(word, buf, in_double=True)
            else:
                buf.append(c)
                self.pos += 1

    def _enter(self) -> None:
        self.nesting += 1
        if self.depth + self.nesting > MAX_DEPTH:
            raise ShellSyntaxError("commands or expansions nested too deeply")

    def _read_dollar(self, word: Word, buf: list[str], in_double: bool) -> None:
        self._enter()
        try:
            self._read_dollar_inner(word, buf, in_double)
        finally:
            self.nesting -= 1

    def _read_dollar_inner(self, word: Word, buf: list[str], in_double: bool) -> None:
        src, start = self.src, self.pos
        nxt = src[start + 1 : start + 2]
        if src.startswith("$((", start):
            self.pos += 3
            self._read_arithmetic(word)
        elif nxt == "(":
            self.pos += 2
            word.subs.append(self._substitution())
        elif nxt == "{":
            self.pos += 2
            self._read_braced(word)
        elif nxt == "'" and not in_double:
            # $'...' (bash): kept as written and marked non-literal, since \x escapes can
            # spell any name.
            self.pos += 2
            while True:
                if self.pos >= len(src):
                    raise ShellSyntaxError("unterminated $'...' quote")
                if src[self.pos] == "\\":
                    self.pos += 2
                    continue
                self.pos += 1
                if src[self.pos - 1] == "'":
                    break
            word.quoted = True
        elif nxt == '"' and not in_double:
            self.pos += 2
            self._read_double(word, buf, end='"')
            word.quoted = True
            return
        else:
            m = _PARAM.match(src, start + 1)
            if not m:
                buf.append("$")
                self.pos += 1
                return
            self.pos = m.end()
        word.literal = False
        buf.append(src[start : self.pos])

    def _read_arithmetic(self, word: Word) -> None:
        src, depth = self.src, 0
        while self.pos < len(src):
            c = src[self.pos]
            if c == "(":
                depth += 1
            elif c == ")":
                if depth == 0:
                    if src.startswith("))", self.pos):
                        self.pos += 2
                        return
                    raise ShellSyntaxError("cannot read $(( ... ))")
                depth -= 1
            elif c == "$":
                self._read_dollar(word, [], in_double=True)
                continue
            elif c == "`":
                self._read_backtick(word, [], in_double=True)
                continue
            self.pos += 1
        raise ShellSyntaxError("unterminated $((")

    def _read_braced(self, word: Word) -> None:
        src, depth = self.src, 1
        while self.pos < len(src):
            c = src[self.pos]
            if c == "\\":
                self.pos += 2
                continue
            if c == "'":
                end = src.find("'", self.pos + 1)
                if end == -1:
                    raise ShellSyntaxError("unterminated single quote")
                self.pos = end + 1
                continue
            if c == '"':
                self.pos += 1
                self._read_double(word, [], end='"')
                continue
            if c == "$":
                self._read_dollar(word, [], in_double=True)
                continue
            if c == "`":
                self._read_backtick(word, [], in_double=True)
                continue
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    self.pos += 1
                    return
            self.pos += 1
        raise ShellSyntaxError("unterminated ${")

    def _read_backtick(self, word: Word, buf: list[str], in_double: bool) -> None:
        src, start = self.src, self.pos
        special = '`$\\"' if in_double else "`$\\"
        inner: list[str] = []
        self.pos += 1
        while True:
            if self.pos >= len(src):
                raise ShellSyntaxError("unterminated backtick")
            c = src[self.pos]
            if c == "`":
                self.pos += 1
                break
            if c == "\\" and self.pos + 1 < len(src) and src[self.pos + 1] in special:
                inner.append(src[self.pos + 1])
                self.pos += 2
                continue
            inner.append(c)
            self.pos += 1
        word.subs.append(_Parser("".join(inner), self.depth + self.nesting + 1).parse_all())
        word.literal = False
        buf.append(src[start : self.pos])

    def _substitution(self) -> Script:
        """The commands of $( ... ), <( ... ) or >( ... ); self.pos is just past the `(`."""
        child = _Parser(self.src, self.depth + self.nesting + 1)
        child.pos = self.pos
        script = child._parse_list(frozenset({")"}))
        tok = child.take()
        if tok.kind != "op" or tok.value != ")":
            raise ShellSyntaxError("unterminated $( or <(")
        if child._heredocs:
            raise ShellSyntaxError("here-document inside a substitution without its body")
        self.pos = child.pos
        return script

    # -- grammar -----------------------------------------------------------------------------

    def parse_all(self) -> Script:
        script = self._parse_list(frozenset())
        tok = self.peek()
        if tok.kind != "eof":
            raise ShellSyntaxError(f"unexpected {tok.describe()}")
        return script

    @staticmethod
    def _is_word(tok: _Token, *values: str) -> bool:
        w = tok.word
        return (
            tok.kind == "word" and w is not None and not w.quoted and w.literal and w.raw in values
        )

    def _is_terminator(self, tok: _Token, terms: frozenset[str]) -> bool:
        if tok.kind == "op":
            return tok.value in terms
        return self._is_word(tok, *terms)

    def _skip_newlines(self) -> None:
        while self.peek().kind == "newline":
            self.take()

    def _expect_word(self, value: str) -> None:
        tok = self.take()
        if not self._is_word(tok, value):
            raise ShellSyntaxError(f"expected '{value}', found {tok.describe()}")

    def _expect_op(self, value: str) -> None:
        tok = self.take()
        if tok.kind != "op" or tok.value != value:
            raise ShellSyntaxError(f"expected '{value}', found {tok.describe()}")

    def _parse_list(self, terms: frozenset[str]) -> Script:
        pipelines: list[Pipeline] = []
        need_more = False
        while True:
            tok = self.peek()
            if tok.kind == "newline":
                self.take()
                continue
            if tok.kind == "eof" or self._is_terminator(tok, terms):
                if need_more:
                    raise ShellSyntaxError(f"a command is missing before {tok.describe()}")
                return Script(pipelines)
            pipeline = self._parse_pipeline()
            pipelines.append(pipeline)
            need_more = False
            tok = self.peek()
            if tok.kind == "op" and tok.value in (";", "&"):
                self.take()
                pipeline.background = tok.value == "&"
            elif tok.kind == "op" and tok.value in ("&&", "||"):
                self.take()
                need_more = True
            elif tok.kind == "newline":
                self.take()
            elif tok.kind != "eof" and not self._is_terminator(tok, terms):
                raise ShellSyntaxError(f"unexpected {tok.describe()}")

    def _parse_pipeline(self) -> Pipeline:
        negated = False
        while self._is_word(self.peek(), "!"):
            self.take()
            negated = True
        commands = [self._parse_command()]
        while self.peek().kind == "op" and self.peek().value in ("|", "|&"):
            self.take()
            self._skip_newlines()
            commands.append(self._parse_command())
        return Pipeline(commands, negated=negated)

    def _parse_command(self) -> Command:
        self._enter()
        try:
            return self._parse_command_inner()
        finally:
            self.nesting -= 1

    def _parse_command_inner(self) -> Command:
        tok = self.peek()
        if tok.kind == "op" and tok.value == "(":
            self.take()
            body = self._parse_list(frozenset({")"}))
            self._expect_op(")")
            return Compound("subshell", [body], [], self._redirects())
        if tok.kind == "word":
            if self._is_word(tok, "{"):
                self.take()
                body = self._parse_list(frozenset({"}"}))
                self._expect_word("}")
                return Compound("group", [body], [], self._redirects())
            if self._is_word(tok, "if"):
                return self._parse_if()
            if self._is_word(tok, "while", "until"):
                self.take()
                cond = self._parse_list(frozenset({"do"}))
                self._expect_word("do")
                body = self._parse_list(frozenset({"done"}))
                self._expect_word("done")
                kind = tok.word.raw if tok.word else "while"
                return Compound(kind, [cond, body], [], self._redirects())
            if self._is_word(tok, "for"):
                return self._parse_for()
            if self._is_word(tok, "case"):
                return self._parse_case()
            if self._is_word(tok, "[["):
                return self._parse_test()
            if self._is_word(tok, "function"):
                self.take()
                name = self.take()
                if name.kind != "word" or name.word is None:
                    raise ShellSyntaxError("function without a name")
                if self.peek().kind == "op" and self.peek().value == "(":
                    self.take()
                    self._expect_op(")")
                self._skip_newlines()
                return Function(name.word.text, self._parse_command())
            if self._is_word(tok, *_RESERVED_UNEXPECTED):
                raise ShellSyntaxError(f"unexpected {tok.describe()}")
        elif tok.kind != "op" or tok.value not in REDIRECT_OPS:
            raise ShellSyntaxError(f"unexpected {tok.describe()}")
        return self._parse_simple()

    def _parse_simple(self) -> Command:
        assigns: list[Word] = []
        words: list[Word] = []
        redirects: list[Redirect] = []
        while True:
            tok = self.peek()
            if tok.kind == "word" and tok.word is not None:
                self.take()
                if not words and _ASSIGNMENT.match(tok.word.raw):
                    assigns.append(tok.word)
                    continue
                words.append(tok.word)
                # name() body: a function definition
                is_function = len(words) == 1 and not (assigns or redirects)
                if is_function and (self.peek().kind, self.peek().value) == ("op", "("):
                    self.take()
                    self._expect_op(")")
                    self._skip_newlines()
                    return Function(words[0].text, self._parse_command())
            elif tok.kind == "op" and tok.value in REDIRECT_OPS:
                redirects.append(self._parse_redirect())
            else:
                break
        if not (assigns or words or redirects):
            raise ShellSyntaxError(f"expected a command, found {self.peek().describe()}")
        return Simple(assigns, words, redirects)

    def _parse_redirect(self) -> Redirect:
        op = self.take()
        target = self.take()
        if target.kind != "word" or target.word is None:
            raise ShellSyntaxError(f"redirection '{op.value}' without a target")
        redirect = Redirect(op.value, target.word, op.fd)
        if op.value in ("<<", "<<-"):
            delim = target.word
            self._heredocs.append((redirect, delim.text, op.value == "<<-", delim.quoted))
        return redirect

    def _redirects(self) -> list[Redirect]:
        redirects = []
        while self.peek().kind == "op" and self.peek().value in REDIRECT_OPS:
            redirects.append(self._parse_redirect())
        return redirects

    def _parse_if(self) -> Compound:
        self.take()
        bodies = [self._parse_list(frozenset({"then"}))]
        self._expect_word("then")
        bodies.append(self._parse_list(frozenset({"elif", "else", "fi"})))
        while True:
            tok = self.take()
            if self._is_word(tok, "elif"):
                bodies.append(self._parse_list(frozenset({"then"})))
                self._expect_word("then")
                bodies.append(self._parse_list(frozenset({"elif", "else", "fi"})))
            elif self._is_word(tok, "else"):
                bodies.append(self._parse_list(frozenset({"fi"})))
                self._expect_word("fi")
                break
            elif self._is_word(tok, "fi"):
                break
            else:
                raise ShellSyntaxError(f"expected 'fi', found {tok.describe()}")
        return Compound("if", bodies, [], self._redirects())

    def _parse_for(self) -> Compound:
        self.take()
        name = self.take()
        if name.kind != "word" or name.word is None or not _NAME.match(name.word.raw):
            raise ShellSyntaxError("for without a variable name")
        words: list[Word] = []
        self._skip_newlines()
        if self._is_word(self.peek(), "in"):
            self.take()
            while self.peek().kind == "word" and self.peek().word is not None:
                words.append(self.take().word)  # type: ignore[arg-type]
            tok = self.take()
            if tok.kind not in ("newline",) and not (tok.kind == "op" and tok.value == ";"):
                raise ShellSyntaxError(f"expected ';' after the for list, found {tok.describe()}")
        elif self.peek().kind == "op" and self.peek().value == ";":
            self.take()
        self._skip_newlines()
        self._expect_word("do")
        body = self._parse_list(frozenset({"done"}))
        self._expect_word("done")
        return Compound("for", [body], words, self._redirects())

    def _parse_case(self) -> Compound:
        self.take()
        subject = self.take()
        if subject.kind != "word" or subject.word is None:
            raise ShellSyntaxError("case without a word")
        words = [subject.word]
        bodies: list[Script] = []
        self._skip_newlines()
        self._expect_word("in")
        ends = frozenset({";;", ";&", ";;&", "esac"})
        while True:
            self._skip_newlines()
            if self._is_word(self.peek(), "esac"):
                self.take()
                break
            if self.peek().kind == "op" and self.peek().value == "(":
                self.take()
            while True:
                tok = self.take()
                if tok.kind != "word" or tok.word is None:
                    raise ShellSyntaxError(f"expected a case pattern, found {tok.describe()}")
                words.append(tok.word)
                sep = self.take()
                if sep.kind == "op" and sep.value == ")":
                    break
                if not (sep.kind == "op" and sep.value == "|"):
                    raise ShellSyntaxError(f"expected ')' after a pattern, found {sep.describe()}")
            bodies.append(self._parse_list(ends))
            tok = self.peek()
            if tok.kind == "op" and tok.value in (";;", ";&", ";;&"):
                self.take()
            elif not self._is_word(tok, "esac"):
                raise ShellSyntaxError(f"expected ';;' or 'esac', found {tok.describe()}")
        return Compound("case", bodies, words, self._redirects())

    def _parse_test(self) -> Compound:
        self.take()
        words: list[Word] = []
        while True:
            tok = self.take()
            if tok.kind == "eof":
                raise ShellSyntaxError("'[[' without ']]'")
            if self._is_word(tok, "]]"):
                break
            if tok.kind == "word" and tok.word is not None:
                words.append(tok.word)
        return Compound("test", [], words, self._redirects())
