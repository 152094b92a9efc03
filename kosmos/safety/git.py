"""git: which subcommands and options only read."""

from __future__ import annotations

from collections.abc import Callable

from kosmos.safety.catalogue import (
    GIT_GLOBAL_FLAGS,
    GIT_GLOBAL_VALUE,
    GIT_READ,
    GIT_SAFE_CONFIG,
    GIT_WRITING_OPTIONS,
)
from kosmos.safety.options import Opts, split_words, texts_of
from kosmos.safety.shell import Word

__all__ = ["RULES"]

Rule = Callable[[list[Word]], str | None]


def _r_git(args: list[Word]) -> str | None:
    texts = texts_of(args)
    if texts[:1] and texts[0] in ("--version", "-v", "--help", "-h") and len(texts) == 1:
        return None
    i = 0
    while i < len(texts) and texts[i].startswith("-"):
        option, _, attached = texts[i].partition("=")
        if option == "-c":
            value = texts[i + 1] if i + 1 < len(texts) else ""
            if not value.lower().startswith(GIT_SAFE_CONFIG):
                return f"git -c {value} can make git run programs"
            i += 2
        elif option in GIT_GLOBAL_VALUE:
            i += 1 if attached or option != texts[i] else 2
        elif option in GIT_GLOBAL_FLAGS and not attached:
            i += 1
        else:
            return f"git {texts[i]} can make git run programs or write files"
    if i >= len(texts):
        return None
    sub, rest = texts[i], args[i + 1 :]
    rest_texts = texts_of(rest)
    if sub in GIT_READ:
        for text in rest_texts:
            if text.startswith((*GIT_WRITING_OPTIONS, "-O")):
                return f"git {sub} {text} writes a file or runs a program"
        return None
    check = _GIT_SUB.get(sub)
    if check is None:
        return f"not on the read-only list: git {sub}"
    return check(rest)


def _git_branch(rest: list[Word]) -> str | None:
    allowed = split_words(
        "all remotes verbose list show-current no-color color column no-column contains "
        "no-contains merged no-merged points-at sort format abbrev no-abbrev ignore-case"
    )
    o = Opts(rest, "", ("contains", "no-contains", "merged", "no-merged", "points-at", "sort"))
    bad = next((f"-{c}" for c, _ in o.short if c not in "arvl"), None) or next(
        (f"--{g}" for g in o.longs() if g not in allowed), None
    )
    if bad:
        return f"git branch {bad} changes branches"
    if o.operands and not o.has("-l", "--list"):
        return "git branch NAME creates a branch"
    return None


def _git_tag(rest: list[Word]) -> str | None:
    allowed = split_words("list contains no-contains points-at merged no-merged sort format column")
    o = Opts(rest, "", ("contains", "no-contains", "points-at", "merged", "no-merged", "sort"))
    if any(c not in "lnv0123456789" for c, _ in o.short) or any(
        g not in allowed for g in o.longs()
    ):
        return "git tag changes tags"
    if o.operands and not o.has("-l", "--list", "-v"):
        return "git tag NAME creates a tag"
    return None


def _git_config(rest: list[Word]) -> str | None:
    o = Opts(rest, "f", ("file", "blob", "type", "default", "comment"))
    writes = ("unset", "unset-all", "add", "replace-all", "rename-section", "remove-section")
    if o.has("-e", "--edit") or any(g in writes for g in o.longs()):
        return "git config changes settings"
    operands = texts_of(o.operands)
    if operands[:1] in (["get"], ["list"]):
        return None
    if operands[:1] and operands[0] in ("set", "unset", "rename-section", "remove-section", "edit"):
        return "git config changes settings"
    reads = ("-l", "--list", "--get", "--get-all", "--get-regexp", "--get-urlmatch")
    if o.has(*reads) or len(operands) <= 1:
        return None
    return "git config NAME VALUE changes a setting"


def _git_first(sub: str, *allowed: str, empty: bool = False) -> Rule:
    """`git SUB ACTION`: read-only for the listed actions (and no action when `empty`)."""

    def check(rest: list[Word]) -> str | None:
        operands = [w.text for w in rest if not w.text.startswith("-")]
        if (not operands and empty) or (operands and operands[0] in allowed):
            return None
        return f"not on the read-only list: git {sub} {' '.join(operands[:1])}".rstrip()

    return check


def _git_reflog(rest: list[Word]) -> str | None:
    if rest and rest[0].text in ("expire", "delete"):
        return f"git reflog {rest[0].text} changes the reflog"
    return None


_GIT_SUB: dict[str, Rule] = {
    "branch": _git_branch,
    "tag": _git_tag,
    "config": _git_config,
    "remote": _git_first("remote", "show", "get-url", empty=True),
    "stash": _git_first("stash", "list", "show"),
    "reflog": _git_reflog,
    "worktree": _git_first("worktree", "list"),
    "submodule": _git_first("submodule", "status", "summary"),
    "notes": _git_first("notes", "list", "show"),
}


RULES: dict[str, Rule] = {"git": _r_git}
