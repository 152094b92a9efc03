"""Reading a command's options the way getopt_long does."""

from __future__ import annotations

import re
from collections.abc import Sequence

from kosmos.safety.option_tables import EXACT_FLAGS, OPTION_VALUES
from kosmos.safety.shell import Word

__all__ = ["Opts", "name_set", "opts", "split_words", "texts_of"]


def split_words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


def name_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


_EXPANSION = frozenset("$`*?[")  # where a word's text starts something the shell expands
_HOME = re.compile(r"\$(?:HOME|\{HOME\})(?![A-Za-z0-9_])")  # never starts with `-`


class Opts:
    """A command's options and operands, read the way getopt_long reads them.

    `short_arg` lists the short options that take a value, `long_arg` the long ones; a long
    option may be abbreviated, as GNU tools allow (`--in-pl` is `--in-place`), but a name
    given whole is that option, as getopt_long and curl read it: `--cookie` is not an
    abbreviation of `--cookie-jar`, nor the flag `--head` one of `--header` (`flags` lists
    such flags, `option_tables.EXACT_FLAGS`). With `stop=True`, the first operand ends the
    options (wrappers: what follows is a command).

    `computed` is the first word whose options the shell only knows at run time: `-$x`,
    `--$x=F`, `-n$x` (unless n takes a value), and, where options may still follow, a word
    that starts with an expansion (`$OPTS`, `"$x"`, `*`), which may expand to `-i`.
    """

    def __init__(
        self,
        args: Sequence[Word],
        short_arg: str = "",
        long_arg: Sequence[str] = (),
        *,
        stop: bool = False,
        flags: Sequence[str] = (),
    ) -> None:
        # Long names that are options in their own right, never abbreviations of another.
        self.exact = frozenset((*long_arg, *flags))
        self.short: list[tuple[str, Word | None]] = []
        self.long: list[tuple[str, Word | None]] = []
        self.operands: list[Word] = []
        self.rest = len(args)  # index of the first operand when stop=True
        self.computed: Word | None = None
        i = 0
        while i < len(args):
            word = args[i]
            text = word.text
            if text == "--" and word.literal:
                self.operands.extend(args[i + 1 :])
                self.rest = i + 1
                break
            if text.startswith("--"):
                name, eq, value = text[2:].partition("=")
                if _computed(word, name):
                    self._computed(word)
                elif eq:
                    self.long.append((name, Word(value, value, literal=word.literal)))
                elif self._takes_value(name, long_arg) and i + 1 < len(args):
                    self.long.append((name, args[i + 1]))
                    i += 1
                else:
                    self.long.append((name, None))
            elif text.startswith("-") and len(text) > 1:
                for j, ch in enumerate(text[1:], 1):
                    if _computed(word, text[: j + 1]):
                        self._computed(word)
                        break
                    if ch in short_arg:
                        rest = text[j + 1 :]
                        if rest:
                            self.short.append((ch, Word(rest, rest, literal=word.literal)))
                        elif i + 1 < len(args):
                            self.short.append((ch, args[i + 1]))
                            i += 1
                        else:
                            self.short.append((ch, None))
                        break
                    self.short.append((ch, None))
            else:
                if _computed(word, text[:1]) and not _HOME.match(text):
                    self._computed(word)  # may expand to an option, or to several words
                if stop:
                    self.operands.extend(args[i:])
                    self.rest = i
                    break
                self.operands.append(word)
            i += 1

    def _takes_value(self, name: str, long_arg: Sequence[str]) -> bool:
        if name in self.exact:
            return name in long_arg
        return any(n.startswith(name) for n in long_arg)

    def _computed(self, word: Word) -> None:
        if self.computed is None:
            self.computed = word

    def _hit(self, name: str) -> list[Word | None]:
        if name.startswith("--"):
            whole = name[2:]
            return [
                v
                for given, v in self.long
                if given == whole or (given and given not in self.exact and whole.startswith(given))
            ]
        return [v for given, v in self.short if given == name[1]]

    def has(self, *names: str) -> bool:
        return any(self._hit(n) for n in names)

    def values(self, *names: str) -> list[Word]:
        return [v for n in names for v in self._hit(n) if v is not None]

    def longs(self) -> list[str]:
        return [given for given, _ in self.long]


def _computed(word: Word, head: str) -> bool:
    """Whether `head`, the start of `word` that names an option, holds an expansion: a
    parameter or command substitution, or a glob character the shell matches against file
    names (`-[i]` may match a file named `-i`)."""
    if word.literal and not word.glob:
        return False
    return any(c in _EXPANSION for c in head)


def opts(name: str, args: Sequence[Word], *, stop: bool = False) -> Opts:
    """`args` read with the option table of the program (or subcommand) `name`."""
    short_arg, long_arg = OPTION_VALUES[name]
    return Opts(args, short_arg, long_arg, stop=stop, flags=EXACT_FLAGS.get(name, ()))


def texts_of(words: Sequence[Word]) -> list[str]:
    return [w.text for w in words]
