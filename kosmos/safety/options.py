"""Reading a command's options the way getopt_long does."""

from __future__ import annotations

from collections.abc import Sequence

from kosmos.safety.shell import Word

__all__ = ["Opts", "name_set", "split_words", "texts_of"]


def split_words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


def name_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


class Opts:
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


def texts_of(words: Sequence[Word]) -> list[str]:
    return [w.text for w in words]
