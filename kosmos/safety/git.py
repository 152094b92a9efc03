"""git: which subcommands and options only read.

git's own options (before the subcommand) must be spelled in full; a subcommand's options
may be abbreviated (`--open-files` is `--open-files-in-pager`), so they are read with
`Opts` and matched by prefix, as git's parse-options matches them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kosmos.safety.catalogue import (
    GIT_GLOBAL_FLAGS,
    GIT_GLOBAL_VALUE,
    GIT_READ,
    GIT_SAFE_CONFIG,
    GIT_WRITING_OPTIONS,
)
from kosmos.safety.option_tables import EXACT_FLAGS, OPTION_VALUES
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
    if sub in GIT_READ:
        o = _opts(sub, rest)
        pager = ("-O",) if sub == "grep" else ()  # grep -O[PAGER]: --open-files-in-pager
        hit = next((w for w in (*GIT_WRITING_OPTIONS, *pager) if o.has(w)), None)
        if hit:
            return f"git {sub} {hit} writes a file or runs a program"
        return None
    check = _GIT_SUB.get(sub)
    if check is None:
        return f"not on the read-only list: git {sub}"
    return check(rest)


def _opts(sub: str, rest: Sequence[Word]) -> Opts:
    short_arg, long_arg = OPTION_VALUES.get(f"git {sub}", ("", ()))
    return Opts(rest, short_arg, long_arg, flags=EXACT_FLAGS.get(f"git {sub}", ()))


def _only(o: Opts, shorts: str, longs: Sequence[str]) -> str | None:
    """The first option outside the allowed ones (a long one matched by prefix), or None."""
    bad = next((f"-{c}" for c, _ in o.short if c not in shorts), None)
    if bad:
        return bad
    return next((f"--{g}" for g in o.longs() if not any(n.startswith(g) for n in longs)), None)


def _git_branch(rest: list[Word]) -> str | None:
    allowed = split_words(
        "all remotes verbose list show-current no-color color column no-column contains "
        "no-contains merged no-merged points-at sort format abbrev no-abbrev ignore-case"
    )
    o = _opts("branch", rest)
    bad = _only(o, "arvl", allowed)
    if bad:
        return f"git branch {bad} changes branches"
    if o.operands and not o.has("-l", "--list"):
        return "git branch NAME creates a branch"
    return None


def _git_tag(rest: list[Word]) -> str | None:
    allowed = split_words("list contains no-contains points-at merged no-merged sort format column")
    o = _opts("tag", rest)
    # -v verifies a signature: it runs gpg.
    if _only(o, "ln0123456789", allowed):
        return "git tag changes tags or runs gpg"
    if o.operands and not o.has("-l", "--list"):
        return "git tag NAME creates a tag"
    return None


def _git_config(rest: list[Word]) -> str | None:
    # git config stops reading options at its first operand: in `git config user.name
    # --get` the `--get` is the value written.
    short_arg, long_arg = OPTION_VALUES.get("git config", ("", ()))
    o = Opts(rest, short_arg, long_arg, stop=True)
    writes = ("--unset", "--unset-all", "--add", "--replace-all", "--rename-section")
    if o.has("-e", "--edit", "--remove-section", *writes):
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


def _git_action(sub: str, actions: str, *, empty: bool = False, flags: Sequence[str] = ()) -> Rule:
    """`git SUB [FLAGS] ACTION ...`: read-only for the listed actions (and none at all
    when `empty`). Any other option before the action picks another action (`git stash -m
    x` is `git stash push`), so only `flags` may stand there."""
    allowed = actions.split()
    value_options = OPTION_VALUES.get(f"git {sub}", ("", ()))[1]

    def check(rest: list[Word]) -> str | None:
        i = 0
        while i < len(rest) and rest[i].text.startswith("-") and rest[i].text != "-":
            name = rest[i].text.partition("=")[0]
            if not any(f.startswith(name) and len(name) > 1 for f in flags):
                return f"git {sub} {rest[i].text} is not a read"
            takes = name.startswith("--") and any(v.startswith(name[2:]) for v in value_options)
            i += 2 if takes and "=" not in rest[i].text else 1
        if i >= len(rest):
            return None if empty else f"git {sub} alone is not a read"
        if rest[i].text not in allowed:
            return f"not on the read-only list: git {sub} {rest[i].text}"
        # `stash list` and `stash show` take log and diff options
        o = Opts(rest[i + 1 :])
        hit = next((w for w in GIT_WRITING_OPTIONS if o.has(w)), None)
        return f"git {sub} {rest[i].text} {hit} writes a file or runs a program" if hit else None

    return check


def _git_remote(rest: list[Word]) -> str | None:
    reason = _git_action("remote", "show get-url", empty=True, flags=("-v", "--verbose"))(rest)
    if reason:
        return reason
    actions = [w.text for w in rest if not w.text.startswith("-")]
    if actions[:1] == ["show"] and not any(w.text == "-n" for w in rest):
        return "git remote show asks the remote over the network (read-only: -n)"
    return None


def _git_reflog(rest: list[Word]) -> str | None:
    if rest and rest[0].text in ("expire", "delete"):
        return f"git reflog {rest[0].text} changes the reflog"
    return None


_GIT_SUB: dict[str, Rule] = {
    "branch": _git_branch,
    "tag": _git_tag,
    "config": _git_config,
    "remote": _git_remote,
    "stash": _git_action("stash", "list show"),
    "reflog": _git_reflog,
    "worktree": _git_action("worktree", "list"),
    "submodule": _git_action("submodule", "status summary", empty=True, flags=("-q", "--quiet")),
    "notes": _git_action("notes", "list show", empty=True, flags=("--ref",)),
}


RULES: dict[str, Rule] = {"git": _r_git}
