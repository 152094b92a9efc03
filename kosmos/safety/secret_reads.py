"""Whether a command reads secret material: private keys, password hashes, tokens and the
files that hold them (`secret_files`).

A program that prints, encodes or searches what a file holds (`cat`, `base64`, `xxd`,
`grep`...) reads it; one that reports names and metadata (`ls`, `stat`, `wc`, checksums:
`secret_files.NAME_READERS`) does not. A word names secret material when its path matches
a secret path or file name (`~/.ssh/id_rsa`, `.env`, `/etc/shadow`), when its glob would
match one (`~/.ssh/*`, `*.key`; a bare `*` only in a directory that holds them), and, for
a recursive reader (`grep -r`, `rg`, `find ... -exec cat`), when the directory holds one
(`/etc`, `~`, `/`). A relative path is matched by its name and, from two components on,
by its tail (`.kube/config`); `.` itself is not taken for the home directory.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from fnmatch import fnmatchcase
from functools import cache

from kosmos.safety.secret_files import (
    ALWAYS_RECURSIVE,
    NAME_EXAMPLES,
    NAME_READERS,
    NOT_SECRET_NAMES,
    RECURSIVE_FLAGS,
    SECRET_EXAMPLES,
    SECRET_NAMES,
    SECRET_PATHS,
    SECRET_TAILS,
)
from kosmos.safety.shell import Word

__all__ = ["names_secrets", "secret_read", "secret_word"]

_HOME = re.compile(r"^(?:/home/[^/]+|/root|~[^/]*|\$HOME|\$\{HOME\})(?=/|$)")
_GLOB = re.compile(r"[*?[]")
_FIND_NAMES = ("-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename")
_GREPS = frozenset({"grep", "egrep", "fgrep", "zgrep", "rg"})
# grep options that print file names, counts or nothing: no line of what a file holds.
_NAMES_ONLY = frozenset("lLcq")
_NAMES_ONLY_LONG = ("--files-with-matches", "--files-without-match", "--count", "--quiet")


def _names_only(args: Sequence[Word]) -> bool:
    for word in args:
        text = word.text
        if text.startswith("--") and any(o.startswith(text) for o in _NAMES_ONLY_LONG):
            return True
        if text[:1] == "-" and text[1:2] != "-" and _NAMES_ONLY & set(text[1:]):
            return True
    return False


def _parts(path: str) -> list[str]:
    """A path in the catalogue's form, `~` for any home, split into components."""
    path = _HOME.sub("~", re.sub(r"/+", "/", path))
    if path not in ("/", "") and not _GLOB.search(path):
        path = posixpath.normpath(path)
    head = ["/"] if path.startswith("/") else []
    return head + [p for p in path.split("/") if p not in ("", ".")]


def _match(name: str, pattern: str) -> bool:
    # A shell glob does not match a leading dot unless it spells one.
    if name.startswith(".") and not pattern.startswith(".") and pattern != name:
        return False
    return fnmatchcase(name, pattern)


def _matches(parts: Sequence[str], pattern: Sequence[str]) -> bool:
    return len(parts) == len(pattern) and all(map(_match, parts, pattern))


def _by_name(name: str) -> bool:
    if any(fnmatchcase(name, p) for p in NOT_SECRET_NAMES):
        return False
    return any(fnmatchcase(name, p) for p in SECRET_NAMES)


def _is_secret(parts: list[str]) -> bool:
    """Whether a path without globs is secret material."""
    if len(parts) >= 2 and "/".join(parts[-2:]) in SECRET_TAILS:
        return True
    if not parts or not _by_name(parts[-1]) and not _on_secret_path(parts):
        return False
    return not any(fnmatchcase(parts[-1], p) for p in NOT_SECRET_NAMES)


@cache
def _split(paths: tuple[str, ...]) -> tuple[list[str], ...]:
    return tuple(_parts(p) for p in paths)


def _on_secret_path(parts: list[str]) -> bool:
    absolute = parts[:1] in (["/"], ["~"])
    for target in _split(SECRET_PATHS):
        if absolute and _matches(parts, target):
            return True
        tail = target[-len(parts) :]
        if not absolute and len(parts) >= 2 and _literal(tail) and _matches(parts, tail):
            return True
    return False


def _literal(pattern: Sequence[str]) -> bool:
    """Whether a pattern has a component without wildcards (`*/*` matches any two names)."""
    return any(not _GLOB.search(p) for p in pattern)


def _glob_reaches(parts: list[str]) -> bool:
    """Whether a glob would match a secret file (one of the examples)."""
    absolute = parts[:1] in (["/"], ["~"])
    for example in _split(SECRET_EXAMPLES):
        if absolute and _matches(example, parts):
            return True
        tail = example[-len(parts) :]
        if not absolute and len(parts) >= 2 and _literal(parts) and _matches(tail, parts):
            return True
    name = parts[-1] if parts else ""
    # a bare `*` in any directory is a listing, not an aim at keys
    return bool(name.strip("*?")) and any(_match(n, name) for n in NAME_EXAMPLES)


def _holds(parts: list[str]) -> bool:
    """Whether a directory (maybe a glob) is or holds a place where secrets live."""
    if parts in (["/"], ["/", "home"], ["/", "root"], ["~"]):
        return True
    absolute = parts[:1] in (["/"], ["~"])
    for example in _split(SECRET_EXAMPLES):
        if absolute:
            if len(example) > len(parts) and _matches(example[: len(parts)], parts):
                return True
            continue
        for start in range(1, len(example) - len(parts)):
            if _matches(example[start : start + len(parts)], parts):
                return True
    return False


def secret_word(word: Word, cwd: str | None = None) -> bool:
    """Whether a word (a path, maybe a glob, maybe relative to `cwd`) names secret material.

    A word the shell expands (`/proc/$p/environ`, `$dir/.env`) is judged by its shape, each
    expansion standing for any name, as a glob would be: it names secret material when some
    value would (a bare `$f` names nothing in particular).
    """
    text = word.text
    if "://" in text:
        return False
    glob = word.glob or word.brace
    if not word.literal and not text.startswith(("$HOME/", "${HOME}/")):
        shape = _EXPANSION.sub("*", text)
        if shape == text:
            return False
        text, glob = shape, True
    if cwd and not text.startswith(("/", "~", "$")):
        text = f"{cwd}/{text}"
    parts = _parts(text)
    if glob:
        return _glob_reaches(parts) or _tail_reached(parts)
    return _is_secret(parts)


# A parameter, command or arithmetic expansion in a word's text, as written.
_EXPANSION = re.compile(
    r"\$\{[^}]*\}|\$\(\([^)]*\)\)|\$\([^)]*\)|`[^`]*`|\$[A-Za-z_]\w*|\$[0-9$#?!@*-]"
)


def _tail_reached(parts: list[str]) -> bool:
    """Whether a glob's last two components would match a secret tail (`$X/kosmos/*.yaml`)."""
    return len(parts) >= 2 and any(_matches(tail.split("/"), parts[-2:]) for tail in SECRET_TAILS)


def _holds_word(word: Word, cwd: str | None) -> bool:
    text = word.text
    if not word.literal and not text.startswith(("$HOME", "${HOME}")):
        return False
    if cwd and not text.startswith(("/", "~", "$")):
        text = f"{cwd}/{text}"
    parts = _parts(text)
    return bool(parts) and _holds(parts)


def secret_read(name: str, args: Sequence[Word], cwd: str | None = None) -> str | None:
    """Why `name args` reads secret material, or None."""
    if name == "find":
        return _find(args, cwd)
    if name in NAME_READERS or (name in _GREPS and _names_only(args)):
        return None
    for word in args:
        if secret_word(word, cwd):
            return f"reads secret material ({word.raw})"
        if name == "git" and ":" in word.text:  # `git show HEAD:.env`
            path = Word(word.text.split(":", 1)[1], word.raw, literal=word.literal)
            if path.text and secret_word(path):
                return f"reads secret material ({word.raw})"
    flags = RECURSIVE_FLAGS.get(name, ())
    recursive = name in ALWAYS_RECURSIVE or any(
        w.text in flags or (w.text[:1] == "-" and w.text[1:2] != "-" and "r" in w.text[1:])
        for w in args
        if flags
    )
    if recursive:
        operands = [w for w in args if not w.text.startswith("-")]
        if name != "diff" and not any(
            w.text.startswith(("-e", "-f", "--regexp", "--file")) for w in args
        ):
            operands = operands[1:]  # the pattern
        for word in operands:
            if _holds_word(word, cwd):
                return f"reads a directory that holds secret material ({word.raw})"
    return None


def _find(args: Sequence[Word], cwd: str | None) -> str | None:
    """`find DIR ... -exec cat {} +`: a content reader run on what lies under DIR."""
    texts = [w.text for w in args]
    readers = []
    for k, text in enumerate(texts):
        if text in ("-exec", "-execdir", "-ok", "-okdir") and k + 1 < len(texts):
            end = next((e for e in range(k + 1, len(texts)) if texts[e] in (";", "+")), len(texts))
            program = texts[k + 1].rsplit("/", 1)[-1]
            names_only = program in _GREPS and _names_only(args[k + 2 : end])
            if program not in NAME_READERS and not names_only:
                readers.append(program)
    if not readers:
        return None
    i = 0
    starts = []
    while i < len(args) and not args[i].text.startswith(("-", "(", "!", ",")):
        starts.append(args[i])
        i += 1
    names = [texts[k + 1] for k, t in enumerate(texts[:-1]) if t in _FIND_NAMES]
    for start in starts:
        if not _holds_word(start, cwd) and not secret_word(start, cwd):
            continue
        if not names or any(
            _match(n.rsplit("/", 1)[-1], p.rsplit("/", 1)[-1])
            for p in names
            for n in (*NAME_EXAMPLES, *(e.rsplit("/", 1)[-1] for e in SECRET_EXAMPLES))
        ):
            return f"reads secret material (find {start.raw} -exec {readers[0]})"
    return None


def names_secrets(args: Sequence[Word], cwd: str | None = None) -> bool:
    """Whether any word names secret material or a directory that holds it (what `find`
    or `ls` list there may be fed to a reader: `find ~/.ssh | xargs cat`)."""
    return any(secret_word(w, cwd) or _holds_word(w, cwd) for w in args)
