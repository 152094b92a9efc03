"""The tree a shell command line parses into (`kosmos.safety.shell.parse`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

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
]

Dialect = Literal["bash", "sh"]


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
    # What bash may evaluate further: the insides of ${...}, and of $((...)) / $[...] with
    # the substitutions inside each.
    params: list[str] = field(default_factory=list)
    arith: list[tuple[str, list[Script]]] = field(default_factory=list)
    # bash: `{name}` written right before a redirection: bash stores the descriptor it
    # opens in the variable `name`.
    fd_var: str = ""


@dataclass
class Redirect:
    op: str
    target: Word
    fd: int | None = None
    heredoc: str | None = None  # the body of << and <<-
    subs: list[Script] = field(default_factory=list)  # substitutions in an unquoted body
    body: Word | None = None  # an unquoted body as the shell expands it


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
    # `for NAME in ...`: the variable each round sets.
    var: str = ""


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
    # The operator before it in its list: "&&" or "||" make it run only on a condition.
    after: str = ""


@dataclass
class Script:
    pipelines: list[Pipeline]
    # sh dialect: the spots bash would read differently (`$'`, `&>`, `[[`...).
    bashisms: list[str] = field(default_factory=list)
