"""Which paths a word names, and which of them are a system's vital parts."""

from __future__ import annotations

import posixpath
import re
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING

from kosmos.safety.catalogue import BIN_DIRS, BLOCK_PREFIXES, CRITICAL_DIRS, CRITICAL_FILES, HOME
from kosmos.safety.shell import Word

if TYPE_CHECKING:
    from kosmos.safety.verdict import Context

HOME_VAR = re.compile(r"\$(?:HOME|\{HOME\})(?![A-Za-z0-9_])")


def normpath(path: str) -> str:
    return posixpath.normpath(re.sub(r"/+", "/", path))


def expand_braces(text: str, limit: int = 64) -> list[str]:
    """`/{etc,usr}` as `/etc`, `/usr` (and `{1..3}`), in bash's order, up to `limit` words."""
    words = [text]
    while True:
        out: list[str] = []
        changed = False
        for word in words:
            m = re.search(r"\{([^{}]*)\}", word)
            inner = m.group(1) if m else ""
            if m and "," in inner:
                alternatives = inner.split(",")
            elif m and re.fullmatch(r"-?\d+\.\.-?\d+", inner):
                a, b = (int(x) for x in inner.split(".."))
                step = 1 if b >= a else -1
                alternatives = [str(i) for i in range(a, b + step, step)][: limit + 1]
            else:
                out.append(word)
                continue
            changed = True
            out.extend(word[: m.start()] + alt + word[m.end() :] for alt in alternatives)
            if len(out) > limit:
                return out[:limit]
        if not changed:
            return out
        words = out


def word_paths(word: Word, ctx: Context) -> list[str]:
    """Absolute, normalised paths a word names, or [] where that is not known."""
    out = []
    for text in expand_braces(word.text) if word.brace else [word.text]:
        home = False
        if not word.literal:
            m = HOME_VAR.match(text)
            if not m or any(c in text[m.end() :] for c in "$`"):
                continue
            text, home = "~" + text[m.end() :], True
        elif word.tilde and (text == "~" or text.startswith("~/")):
            home = True
        if home:
            text = HOME + text[1:]
        elif not text.startswith("/"):
            if ctx.cwd is None:
                continue
            text = f"{ctx.cwd}/{text}"
        out.append(normpath(text))
    return out


def matches(path: str, names: frozenset[str]) -> bool:
    if any(c in path for c in "*?["):
        return any(fnmatchcase(name, path) for name in names)
    return path in names


def is_critical_dir(word: Word, ctx: Context) -> bool:
    for path in word_paths(word, ctx):
        # X/* and X/.* empty X as surely as removing X itself.
        while path.endswith(("/*", "/.*")):
            path = path.rsplit("/", 1)[0] or "/"
        if matches(path, CRITICAL_DIRS):
            return True
    return False


def is_critical_file(word: Word, ctx: Context) -> bool:
    return any(matches(p, CRITICAL_FILES) for p in word_paths(word, ctx))


def is_block_device(word: Word) -> bool:
    if not word.literal:
        return False
    path = normpath(word.text)
    return any(path.startswith(p) and len(path) > len(p) for p in BLOCK_PREFIXES)


def command_name(text: str) -> str:
    """`/usr/bin/ls` is `ls`; `./ls` or `/tmp/ls` stay as they are: they are not the real ls."""
    head, _, base = text.rpartition("/")
    return base if head in BIN_DIRS else text
