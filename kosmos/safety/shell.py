"""A small POSIX-sh parser: enough structure to tell what a command line would run.

Nothing is executed or expanded. `parse` reads words (quotes, escapes, parameter, command,
arithmetic and process substitutions, also inside double quotes and here-documents),
operators, redirections, here-documents, subshells, groups, function definitions and the
compound commands (if, while, until, for, case, `[[ ]]`) into a tree of `Script`s.
Text it cannot follow (an unterminated quote, a here-document without its end line,
a stray `fi`) raises `ShellSyntaxError`; callers treat such text as unsafe.

Two dialects: `bash` reads what bash reads (`$'...'`, `<<<`, `&>`, `|&`, `<(...)`, `[[ ]]`,
`(( ))`, `function`, brace expansion); `sh` reads what a POSIX shell such as dash reads, where
those are plain characters or other operators, and records each such spot in
`Script.bashisms`: there the two shells disagree about what the text means.
"""

from __future__ import annotations

from kosmos.safety.lexer import (
    _ASSIGNMENT,
    _NAME,
    _RESERVED_UNEXPECTED,
    REDIRECT_OPS,
    Lexer,
    _Token,
)
from kosmos.safety.syntax import (
    Command,
    Compound,
    Dialect,
    Function,
    Pipeline,
    Redirect,
    Script,
    ShellSyntaxError,
    Simple,
    Word,
)

__all__ = [
    "Command",
    "Compound",
    "Dialect",
    "Function",
    "Pipeline",
    "Redirect",
    "Script",
    "ShellSyntaxError",
    "Simple",
    "Word",
    "parse",
]


def parse(text: str, dialect: Dialect = "bash") -> Script:
    """Parse a whole command line; raise ShellSyntaxError where it cannot be followed."""
    if "\0" in text:
        raise ShellSyntaxError("a NUL byte in the command")
    parser = _Parser(text, dialect=dialect)
    script = parser.parse_all()
    script.bashisms = parser.bashisms
    return script


class _Parser(Lexer):
    """The grammar: lists, pipelines, simple and compound commands, functions."""

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
        after = ""
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
            pipeline.after = after
            pipelines.append(pipeline)
            need_more = False
            after = ""
            tok = self.peek()
            if tok.kind == "op" and tok.value in (";", "&"):
                self.take()
                pipeline.background = tok.value == "&"
            elif tok.kind == "op" and tok.value in ("&&", "||"):
                self.take()
                need_more = True
                after = tok.value
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
            if self.src.startswith("(", self.pos):
                if self.bash:
                    arith = self._try_arith_command()
                    if arith is not None:
                        return arith
                else:
                    self._bashism("((...))")
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
            if self._is_word(tok, "[[", "function") and not self.bash:
                self._bashism(tok.word.raw if tok.word else "[[")
                return self._parse_simple()
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
            while (tok := self.peek()).kind == "word" and tok.word is not None:
                words.append(tok.word)
                self.take()
            tok = self.take()
            if tok.kind not in ("newline",) and not (tok.kind == "op" and tok.value == ";"):
                raise ShellSyntaxError(f"expected ';' after the for list, found {tok.describe()}")
        elif self.peek().kind == "op" and self.peek().value == ";":
            self.take()
        self._skip_newlines()
        self._expect_word("do")
        body = self._parse_list(frozenset({"done"}))
        self._expect_word("done")
        return Compound("for", [body], words, self._redirects(), var=name.word.raw)

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

    def _try_arith_command(self) -> Compound | None:
        """bash's `(( expr ))`, just past its first `(`; None where it does not close with `))`
        (bash then reads nested subshells)."""
        start = self.pos + 1
        self.pos = start
        word = Word(literal=False)
        try:
            self._read_arithmetic(word)
        except ShellSyntaxError:
            self.pos = start - 1
            return None
        self._peeked = None
        word.text = word.raw = self.src[start : self.pos - 2]
        word.arith.append((word.text, list(word.subs)))
        return Compound("arith", [], [word], self._redirects())

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
