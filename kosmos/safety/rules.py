"""The read-only rules: which programs only read, and with which options.

A program on the catalogue's ALWAYS list reads whatever its options; the others have a rule
here (text tools) or in `network`, `system` and `git` that names the option that writes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from kosmos.safety import git, network, system
from kosmos.safety.catalogue import ALWAYS, SERVICE_READS, VERSION_ONLY
from kosmos.safety.embedded import awk_writes, sed_writes
from kosmos.safety.option_tables import EXACT_FLAGS, OPTION_VALUES
from kosmos.safety.options import Opts, opts, split_words, texts_of
from kosmos.safety.queries import risky_assignment
from kosmos.safety.shell import Word
from kosmos.safety.verdict import Assessment, SecretReason, ro, secret, write

__all__ = ["RULES", "hidden_option", "read_only_rule"]


Rule = Callable[[list[Word]], str | None]


def _r_assign(args: list[Word]) -> str | None:
    return next((r for w in args if "=" in w.text for r in [risky_assignment(w.text)] if r), None)


def _r_sed(args: list[Word]) -> str | None:
    o = opts("sed", args)
    if o.has("-i", "-I", "--in-place"):
        return "sed -i edits files in place"
    if o.has("-f", "--file"):
        return "sed -f runs a script file"
    scripts = o.values("-e", "--expression") or o.operands[:1]
    if not all(script.literal for script in scripts):
        return "the sed script is built at run time"
    # GNU sed joins its -e scripts with newlines into one.
    return sed_writes("\n".join(script.text for script in scripts))


def _r_awk(args: list[Word]) -> str | None:
    o = opts("awk", args)
    if o.has("-i", "--include", "-l", "--load"):
        return "awk -i/-l loads code (-i inplace edits files)"
    if o.has("-f", "--file", "-E", "--exec"):
        return "awk -f runs a program file"
    if o.has("-o", "-p", "-d", "-D", "--pretty-print", "--profile", "--dump-variables", "--debug"):
        return "this awk option writes a file"
    if any(v.text not in ("version", "usage", "help") for v in o.values("-W")):
        return "awk -W turns on an option that may run a program file or write one"
    programs = o.values("-e", "--source") or o.operands[:1]
    if not all(program.literal for program in programs):
        return "the awk program is built at run time"
    return awk_writes("\n".join(program.text for program in programs))


def _r_sort(args: list[Word]) -> str | None:
    o = opts("sort", args)
    if o.has("-o", "--output"):
        return "sort -o writes a file"
    if o.has("--compress-program"):
        return "sort --compress-program runs a program"
    return None


def _r_uniq(args: list[Word]) -> str | None:
    return "uniq with a second file writes to it" if len(opts("uniq", args).operands) > 1 else None


def _r_tee(args: list[Word]) -> str | None:
    return "tee writes to files"


def _r_hostname(args: list[Word]) -> str | None:
    o = opts("hostname", args)
    if o.operands or o.has("-F", "--file", "-b", "--boot"):
        return "hostname with a name sets it"
    return None


def _r_date(args: list[Word]) -> str | None:
    o = opts("date", args)
    if o.has("-s", "--set"):
        return "date -s sets the clock"
    if any(not w.text.startswith("+") for w in o.operands):
        return "date with a time sets the clock"
    return None


def _r_top(args: list[Word]) -> str | None:
    # procps' top creates ~/.config/procps on its first run, even in batch mode.
    return "top writes its configuration directory; ps reads the same without writing"


def _r_blkid(args: list[Word]) -> str | None:
    o = opts("blkid", args)
    if o.has("-p", "--probe") or any(v.text == "/dev/null" for v in o.values("-c", "--cache-file")):
        return None
    return "blkid updates its cache as root (read-only: lsblk -f, or blkid -p)"


def _r_decompress(args: list[Word]) -> str | None:
    return None  # zcat, zgrep...: to standard output, like cat and grep


_COMPRESSOR_TABLE = {"gunzip": "gzip", "pigz": "gzip", "bunzip2": "bzip2", "unzstd": "zstd"}


def _compressor(name: str) -> Rule:
    """gzip, xz, zstd...: only to standard output (-c), or listing and testing."""
    table = _COMPRESSOR_TABLE.get(name) or ("xz" if "xz" in name or "lzma" in name else name)

    def check(args: list[Word]) -> str | None:
        o = opts(table, args)
        if o.has("-o", "--output-dir-flat", "--output-dir-mirror", "--trace"):
            return "this compressor option writes a file"
        if o.has("-c", "--stdout", "--to-stdout", "-l", "--list", "-t", "--test"):
            return None
        return "compressing or uncompressing in place writes files (read-only needs -c)"

    return check


def first_operand(tool: str, allowed: str) -> Rule:
    """A tool whose first operand is a subcommand from `allowed` (or none at all); `-o` and
    `-c` set configuration, which can name the programs it runs."""
    reads = frozenset(allowed.split())

    def check(args: list[Word]) -> str | None:
        o = opts(tool, args)
        if o.has("-o", "-c", "--option", "--config-file"):
            return f"{tool} -o/-c changes its configuration, which names programs it runs"
        if not o.operands or o.operands[0].text in reads:
            return None
        return f"not on the read-only list: {tool} {o.operands[0].text}"

    return check


def flag_writes(tool: str, reason: str, *flags: str) -> Rule:
    """A read-only tool with a few options that write: `sar -o`, `tree -o`, `ss -K`..."""

    def check(args: list[Word]) -> str | None:
        return reason if opts(tool, args).has(*flags) else None

    return check


_XXD_VALUES = {"c": "cols", "g": "groupsize", "l": "len", "n": "name", "o": "offset", "s": "seek"}


def _r_xxd(args: list[Word]) -> str | None:
    """xxd reads one option a word, by its first letter (`-ps` is -p), takes a value after
    the letter or its long name, and stops at its first file: a second file is written."""
    i = 0
    while i < len(args) and args[i].text.startswith("-") and args[i].text != "-":
        text = args[i].text
        i += 1
        if text == "--":
            break
        letter = text[1:2]
        if letter in _XXD_VALUES and text[2:] in ("", _XXD_VALUES[letter][1:]):
            i += 1
    return "xxd writes to its second file" if len(args) - i > 1 else None


def operands_rule(limit: int, allowed: str, tool: str) -> Rule:
    """A tool that reads with no subcommand or one of `allowed`, and at most `limit` operands."""
    reads = frozenset(allowed.split())

    def check(args: list[Word]) -> str | None:
        o = opts(tool, args)
        if o.has("-H", "-M", "--host", "--machine"):
            return f"{tool} -H/-M runs on another machine (over ssh)"
        ops = texts_of(o.operands)
        if not ops or (ops[0] in reads and len(ops) <= limit):
            return None
        return f"not on the read-only list: {tool} {ops[0]}"

    return check


def _r_file(args: list[Word]) -> str | None:
    return "file -C writes a magic file" if opts("file", args).has("-C", "--compile") else None


RULES: dict[str, Rule] = {
    **dict.fromkeys(("export", "declare", "typeset", "local", "readonly"), _r_assign),
    "sed": _r_sed,
    **dict.fromkeys(("awk", "gawk", "mawk", "nawk", "original-awk"), _r_awk),
    "sort": _r_sort,
    "uniq": _r_uniq,
    "tee": _r_tee,
    "hostname": _r_hostname,
    "date": _r_date,
    "top": _r_top,
    "apt": first_operand("apt", "list show search policy depends rdepends showsrc madison"),
    "apt-cache": first_operand(
        "apt-cache",
        "policy show search depends rdepends showpkg showsrc stats madison pkgnames unmet dump",
    ),
    **dict.fromkeys(
        split_words("zcat bzcat xzcat lzcat zstdcat zgrep zegrep zfgrep bzgrep xzgrep zstdgrep"),
        _r_decompress,
    ),
    **{
        name: _compressor(name)
        for name in split_words("gzip gunzip bzip2 bunzip2 xz unxz lzma unlzma zstd unzstd pigz")
    },
    "xxd": _r_xxd,
    "blkid": _r_blkid,
    "file": _r_file,
    "rg": flag_writes("rg", "rg --pre and --hostname-bin run a program", "--pre", "--hostname-bin"),
    "sar": flag_writes("sar", "sar -o writes a file", "-o"),
    "tree": flag_writes("tree", "tree -o writes a file", "-o"),
    "ss": flag_writes(
        "ss", "ss -K kills sockets, -D dumps to a file", "-K", "--kill", "-D", "--diag"
    ),
    "lastlog": flag_writes(
        "lastlog", "lastlog -C/-S changes the log", "-C", "-S", "--clear", "--set"
    ),
    "hostnamectl": operands_rule(1, "status", "hostnamectl"),
    "timedatectl": operands_rule(
        1, "status show show-timesync timesync-status list-timezones", "timedatectl"
    ),
    "localectl": operands_rule(1, "status list-locales list-keymaps", "localectl"),
    "resolvectl": operands_rule(
        9, "status query statistics show-cache show-server-state", "resolvectl"
    ),
    **network.RULES,
    **system.RULES,
    **git.RULES,
}


def hidden_option(name: str, args: Sequence[Word], *, stop: bool = False) -> Word | None:
    """A word where the shell may put an option only at run time: `-$x`, `--$x=F`, `$OPTS`,
    `*` matching a file named `-i` (see `Opts.computed`)."""
    short_arg, long_arg = OPTION_VALUES.get(name, ("", ()))
    flags = EXACT_FLAGS.get(name, ())
    return Opts(args, short_arg, long_arg, stop=stop, flags=flags).computed


def read_only_rule(name: str, args: list[Word]) -> Assessment:
    if name in ALWAYS:
        return ro(name)  # none of these has an option that writes
    hidden = hidden_option(name, args)
    if hidden is not None:
        return write(f"{name}: {hidden.raw} could expand to an option")
    rule = RULES.get(name)
    if rule is None:
        base = re.sub(r"[0-9.]+$", "", name)  # python3.11 -> python, pip3 -> pip, ping6 -> ping
        rule = RULES.get(base) if base in ("pip", "ping") else None
        flags = VERSION_ONLY.get(base) or VERSION_ONLY.get(name)
        if rule is None and flags:
            if len(args) == 1 and args[0].text in flags:
                return ro(name)
            return write(f"not on the read-only list: {name} (only {flags[0]} is)")
    if rule is None:
        return write(f"not on the read-only list: {name}")
    reason = rule(args)
    if isinstance(reason, SecretReason):
        return secret(reason)
    return write(reason) if reason else ro(name, service=name in SERVICE_READS)
