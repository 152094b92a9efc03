"""The languages inside sed and awk commands, read whole: a script kosmos cannot read to its
end is not read-only.

`sed_writes` follows GNU sed's grammar (addresses, `{}` blocks, labels that end at `;` as
GNU sed 4.3 and later end them, `a`/`i`/`c` text, `s` with its flags, `y`); `w`, `W`, `e`
and the `w`/`e` flags of `s` write or run something. `awk_writes` splits an awk program
into tokens (strings, regular expression literals, comments) and finds what runs a command
(`system()`, `|`, `|&`), sends output to a file (`>`, `>>` in a `print` or `printf`
statement) or loads code (`@load`, `@include`). A regular expression literal is read both
as gawk reads one (a `/` in a bracket expression does not end it) and as mawk does; the
program must be safe either way.
"""

from __future__ import annotations

import re

__all__ = ["awk_writes", "sed_writes"]

_SED_PLAIN = frozenset("=dDgGhHnNpPxzF")


class _SedError(Exception):
    pass


class _Sed:
    def __init__(self, script: str) -> None:
        self.s = script
        self.i = 0

    def peek(self) -> str:
        return self.s[self.i] if self.i < len(self.s) else ""

    def blanks(self) -> None:
        while self.peek() in (" ", "\t"):
            self.i += 1

    def regex(self, delim: str) -> None:
        """Past a regex or replacement ended by `delim`; a backslash escapes any character."""
        if delim in ("", "\n", "\\"):
            raise _SedError
        while True:
            c = self.peek()
            if not c:
                raise _SedError
            self.i += 2 if c == "\\" else 1
            if c == delim:
                return

    def address(self, second: bool = False) -> bool:
        c = self.peek()
        if c.isdigit() or (second and c in "+~"):
            self.i += 1
            while self.peek().isdigit() or self.peek() == "~":
                self.i += 1
        elif c == "$":
            self.i += 1
        elif c == "/":
            self.i += 1
            self.regex("/")
        elif c == "\\":
            self.i += 2
            self.regex(self.s[self.i - 1] if self.i <= len(self.s) else "")
        else:
            return False
        while self.peek() in ("I", "M"):
            self.i += 1
        return True

    def to_line_end(self) -> str:
        end = self.s.find("\n", self.i)
        end = len(self.s) if end < 0 else end
        text, self.i = self.s[self.i : end], end
        return text

    def label(self) -> None:
        self.blanks()
        while self.peek() not in ("", "\n", ";", " ", "\t"):
            self.i += 1

    def text(self) -> None:
        """a, i, c: text to the end of a line not ended by a backslash."""
        self.blanks()
        while True:
            c = self.peek()
            if c in ("", "\n"):
                return
            self.i += 2 if c == "\\" else 1

    def end_of_command(self) -> None:
        self.blanks()
        if self.peek() not in ("", "\n", ";", "}", "#"):
            raise _SedError

    def command(self) -> str | None:
        if self.address():
            self.blanks()
            if self.peek() == ",":
                self.i += 1
                self.blanks()
                if not self.address(second=True):
                    raise _SedError
        self.blanks()
        while self.peek() == "!":
            self.i += 1
            self.blanks()
        cmd = self.peek()
        self.i += 1
        if cmd in ("w", "W"):
            return f"sed {cmd} writes to a file"
        if cmd == "e":
            return "sed e runs a command"
        if cmd in _SED_PLAIN or cmd in ("{", "}"):
            if cmd != "{":
                self.end_of_command()
        elif cmd == "#":
            self.to_line_end()
        elif cmd in (":", "b", "t", "T", "v"):
            self.label()
            self.end_of_command()
        elif cmd in ("a", "i", "c"):
            self.text()
        elif cmd in ("r", "R"):
            self.to_line_end()
        elif cmd in ("q", "Q", "l", "L"):
            self.blanks()
            while self.peek().isdigit():
                self.i += 1
            self.end_of_command()
        elif cmd in ("s", "y"):
            delim = self.peek()
            self.i += 1
            self.regex(delim)
            self.regex(delim)
            if cmd == "s":
                return self.s_flags()
            self.end_of_command()
        else:
            raise _SedError
        return None

    def s_flags(self) -> str | None:
        while True:
            c = self.peek()
            if c == "w":
                return "sed s///w writes to a file"
            if c == "e":
                return "sed s///e runs a command"
            if c and (c in "gpiImM" or c.isdigit()):
                self.i += 1
                continue
            self.end_of_command()
            return None

    def run(self) -> str | None:
        while True:
            while self.peek() in (" ", "\t", "\n", ";"):
                self.i += 1
            if not self.peek():
                return None
            reason = self.command()
            if reason:
                return reason


def sed_writes(script: str) -> str | None:
    """Why a sed script writes or runs something; a script not read to its end counts."""
    try:
        return _Sed(script).run()
    except (_SedError, IndexError):
        return "cannot read the sed script"


# -- awk --------------------------------------------------------------------------------------

_AWK_TOKEN = re.compile(
    r"""(?P<space>[ \t\r]+|\\\n)|(?P<newline>\n)|(?P<comment>\#[^\n]*)
    |(?P<string>"(?:[^"\\\n]|\\.)*")|(?P<number>\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+)
    |(?P<name>@?[A-Za-z_][A-Za-z0-9_]*)|(?P<op>\|&|\|\||&&|>>|>=|<=|==|!=|\+\+|--|[-+*/%^!<>=~?:,;(){}\[\]$|&])""",
    re.X,
)
# After these a `/` divides; elsewhere it starts a regular expression literal.
_OPERAND_END = frozenset({")", "]", "$", "++", "--"})
_STANDARD_FILES = frozenset({'"/dev/stdout"', '"/dev/stderr"', '"-"'})


def _awk_tokens(program: str, brackets: bool) -> list[str]:
    tokens: list[str] = []
    i, n = 0, len(program)
    while i < n:
        prev = tokens[-1] if tokens else ""
        operand = prev in _OPERAND_END or prev[:1].isalnum() or prev[:1] in ('"', "_", "/")
        keyword = prev in ("print", "printf", "return", "in", "getline")
        if program[i] == "/" and (not operand or keyword):
            j, in_bracket = i + 1, False
            while j < n and (program[j] != "/" or in_bracket):
                if program[j] == "\n":
                    raise ValueError("newline in a regular expression")
                if program[j] == "\\":
                    j += 1
                elif brackets and program[j] == "[":
                    in_bracket = True
                elif program[j] == "]":
                    in_bracket = False
                j += 1
            if j >= n:
                raise ValueError("unterminated regular expression")
            tokens.append("/" + "re")
            i = j + 1
            continue
        m = _AWK_TOKEN.match(program, i)
        if not m:
            raise ValueError(f"cannot read {program[i]!r}")
        kind = m.lastgroup
        if kind == "newline":
            tokens.append(";")
        elif kind not in ("space", "comment"):
            tokens.append(m.group())
        i = m.end()
    return tokens


def _awk_hazard(tokens: list[str]) -> str | None:
    depth, printing = 0, False
    for k, tok in enumerate(tokens):
        nxt = tokens[k + 1] if k + 1 < len(tokens) else ""
        if tok in ("@load", "@include", "@namespace"):
            return "awk @load/@include loads code"
        if tok == "system" and nxt == "(":
            return "awk system() runs a command"
        if tok in ("|", "|&"):
            return "awk runs a command (| getline, print |)"
        if tok in ("print", "printf"):
            printing, depth = True, 0
        elif tok in ("(", "["):
            depth += 1
        elif tok in (")", "]"):
            depth -= 1
        elif tok in (";", "{", "}"):
            printing = False
        elif printing and depth == 0 and tok in (">", ">>") and nxt not in _STANDARD_FILES:
            return "awk print redirects its output to a file"
    return None


def awk_writes(program: str) -> str | None:
    """Why an awk program runs a command, writes a file or loads code, read as gawk and as
    mawk read it; a program not read to its end counts."""
    for brackets in (True, False):
        try:
            tokens = _awk_tokens(program, brackets)
        except ValueError:
            return "cannot read the awk program"
        reason = _awk_hazard(tokens)
        if reason:
            return reason
    return None
