"""Tokens and words of a shell command line: quotes, escapes, expansions, here-documents.

`Lexer` is the part of the parser that reads characters; `shell._Parser` adds the grammar.
A `$( ... )` inside a word is parsed by a child of the same parser class.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kosmos.safety.syntax import Dialect, Redirect, Script, ShellSyntaxError, Word

if TYPE_CHECKING:
    from typing import Self

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
# Operators a POSIX shell does not have: there `&>` is `&` then `>`, `<<<` is `<<` then `<`.
_BASH_OPERATORS = frozenset({"&>>", "<<<", ";;&", "|&", ";&", "&>"})
_SH_OPERATORS = tuple(op for op in _OPERATORS if op not in _BASH_OPERATORS)
REDIRECT_OPS = frozenset({"<", ">", ">>", ">|", "<>", "<<", "<<-", "<<<", "<&", ">&", "&>", "&>>"})
_RESERVED_UNEXPECTED = frozenset({"then", "elif", "else", "fi", "do", "done", "esac", "}", "]]"})

_IO_NUMBER = re.compile(r"\d+(?=[<>])")
_PARAM = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-]")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=")
_NAMED_FD = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


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


class Lexer:
    """Reads tokens and words; the grammar in `shell._Parser` builds on it."""

    def __init__(
        self,
        src: str,
        depth: int = 0,
        *,
        dialect: Dialect = "bash",
        bashisms: list[str] | None = None,
    ) -> None:
        if depth > MAX_DEPTH:
            raise ShellSyntaxError("substitutions nested too deeply")
        self.src = src
        self.pos = 0
        self.depth = depth
        self.nesting = 0  # compound commands and expansions open right now
        self.bash = dialect == "bash"
        self.bashisms = [] if bashisms is None else bashisms  # shared with nested parsers
        self._peeked: _Token | None = None
        self._heredocs: list[tuple[Redirect, str, bool, bool]] = []

    def _child(self, src: str, depth: int) -> Self:
        """A parser of the same class for text nested in this one (`$(...)`, backticks)."""
        dialect: Dialect = "bash" if self.bash else "sh"
        return type(self)(src, depth, dialect=dialect, bashisms=self.bashisms)

    # The grammar, for the commands inside substitutions (`shell._Parser`).
    def parse_all(self) -> Script:
        raise NotImplementedError

    def _parse_list(self, terms: frozenset[str]) -> Script:
        raise NotImplementedError

    def _bashism(self, what: str) -> None:
        if not self.bash:
            self.bashisms.append(what)

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
        elif src.startswith(("<(", ">("), self.pos) and self.bash:
            start = self.pos
            self.pos += 2
            sub = self._substitution()
            word = Word(src[start : self.pos], src[start : self.pos], literal=False, subs=[sub])
            return _Token("word", word=word)
        if not self.bash:
            if src.startswith(("<(", ">("), self.pos):
                self._bashism(f"{src[self.pos : self.pos + 2]}...)")
            bash_op = next((op for op in _OPERATORS if src.startswith(op, self.pos)), "")
            if bash_op in _BASH_OPERATORS:
                self._bashism(bash_op)
        for op in _OPERATORS if self.bash else _SH_OPERATORS:
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
                body = self._child(redirect.heredoc, self.depth + 1)
                word = Word()
                body._read_double(word, [], end=None)
                redirect.subs = word.subs
                redirect.body = word
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
        if self.bash and src[self.pos : self.pos + 1] in ("<", ">"):
            named = _NAMED_FD.fullmatch(word.raw)
            if named:
                word.fd_var = named.group(1)
        if word.brace:
            tail = word.text[word.text.find("{") :]
            word.brace = "}" in tail and ("," in tail or ".." in tail)
            if word.brace and not self.bash:
                self._bashism(f"brace expansion {word.raw}")
                word.brace = False
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
            before = len(word.subs)
            self._read_arithmetic(word)
            word.arith.append((src[start + 3 : self.pos - 2], word.subs[before:]))
        elif nxt == "(":
            self.pos += 2
            word.subs.append(self._substitution())
        elif nxt == "{":
            self.pos += 2
            self._read_braced(word)
            word.params.append(src[start + 2 : self.pos - 1])
        elif nxt == "[" and self.bash:
            # $[...]: bash's old arithmetic expansion
            self.pos += 2
            before = len(word.subs)
            self._read_arithmetic(word, close="]")
            word.arith.append((src[start + 2 : self.pos - 1], word.subs[before:]))
        elif nxt in "'\"" and nxt and not in_double and not self.bash:
            # sh: `$` is a plain character before a quote; bash reads $'...' and $"..."
            self._bashism(f"${nxt}...{nxt}")
            buf.append("$")
            self.pos += 1
            return
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

    def _read_arithmetic(self, word: Word, close: str = "))") -> None:
        """Up to the `close` that ends an arithmetic expression begun just before self.pos."""
        src, depth = self.src, 0
        while self.pos < len(src):
            c = src[self.pos]
            if c == "(":
                depth += 1
            elif c == "]" and close == "]" and depth == 0:
                self.pos += 1
                return
            elif c == ")":
                if depth == 0:
                    if src.startswith("))", self.pos) and close == "))":
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
        word.subs.append(self._child("".join(inner), self.depth + self.nesting + 1).parse_all())
        word.literal = False
        buf.append(src[start : self.pos])

    def _substitution(self) -> Script:
        """The commands of $( ... ), <( ... ) or >( ... ); self.pos is just past the `(`."""
        child = self._child(self.src, self.depth + self.nesting + 1)
        child.pos = self.pos
        script = child._parse_list(frozenset({")"}))
        tok = child.take()
        if tok.kind != "op" or tok.value != ")":
            raise ShellSyntaxError("unterminated $( or <(")
        if child._heredocs:
            raise ShellSyntaxError("here-document inside a substitution without its body")
        self.pos = child.pos
        return script


# -- the value of bash's $'...' quoting --------------------------------------------------------

_ANSI_C = re.compile(r"\$'((?:[^'\\]|\\.)*)'", re.DOTALL)
_ANSI_ESCAPE = re.compile(
    r"\\(?:([abeEfnrtv\\'\"?])|([0-7]{1,3})|x([0-9A-Fa-f]{1,2})|u([0-9A-Fa-f]{1,4})"
    r"|U([0-9A-Fa-f]{1,8})|c(.)|(.))",
    re.DOTALL,
)
_SIMPLE_ESCAPES = {
    "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r",
    "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?",
}  # fmt: skip


def _ansi_c(body: str) -> str:
    """The text bash makes of the inside of $'...' (its escapes, as `man bash` lists them)."""

    def one(m: re.Match[str]) -> str:
        simple, octal, hex2, u4, u8, ctrl, other = m.groups()
        if simple is not None:
            return _SIMPLE_ESCAPES[simple]
        for digits, base in ((octal, 8), (hex2, 16), (u4, 16), (u8, 16)):
            if digits is not None:
                code = int(digits, base) & (0xFF if base == 8 else 0x10FFFF)
                return chr(code) if code < 0xD800 or code > 0xDFFF else "\ufffd"
        if ctrl is not None:
            return chr(ord(ctrl) & 0x1F)
        return "\\" + other

    return _ANSI_ESCAPE.sub(one, body).split("\0")[0]  # bash ends the word at a NUL


def known_text(word: Word) -> str | None:
    """A word's value where the shell's only expansion in it is bash's $'...' quoting (which
    the lexer keeps as written and marks non-literal: `\\x` escapes can spell any name), or
    its text when literal; None when some part is known only at run time. Where the text
    cannot be split into plain parts and $'...' parts with certainty, also None."""
    if word.literal:
        return word.text
    if word.subs or word.params or word.arith or word.glob or word.brace or word.tilde:
        return None
    parts: list[str] = []
    pos = 0
    for m in _ANSI_C.finditer(word.text):
        plain = word.text[pos : m.start()]
        if any(c in plain for c in "$`'\\"):
            return None
        parts += [plain, _ansi_c(m.group(1))]
        pos = m.end()
    tail = word.text[pos:]
    if any(c in tail for c in "$`'\\"):
        return None
    return "".join([*parts, tail])
