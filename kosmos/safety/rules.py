"""The read-only rules: which programs only read, and with which options.

A program on the catalogue's ALWAYS list reads whatever its options; the others have a rule
here (text tools) or in `network`, `system` and `git` that names the option that writes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from kosmos.safety import git, network, system
from kosmos.safety.catalogue import ALWAYS, SERVICE_READS, VERSION_ONLY
from kosmos.safety.options import Opts, split_words
from kosmos.safety.paths import HOME_VAR
from kosmos.safety.queries import risky_assignment
from kosmos.safety.shell import Word
from kosmos.safety.verdict import Assessment, ro, write

__all__ = ["RULES", "injectable", "read_only_rule"]


Rule = Callable[[list[Word]], str | None]


def _r_assign(args: list[Word]) -> str | None:
    return next((r for w in args if "=" in w.text for r in [risky_assignment(w.text)] if r), None)


def _r_sed(args: list[Word]) -> str | None:
    o = Opts(args, "efl", ("expression", "file", "line-length"))
    if o.has("-i", "-I", "--in-place"):
        return "sed -i edits files in place"
    if o.has("-f", "--file"):
        return "sed -f runs a script file"
    scripts = o.values("-e", "--expression") or o.operands[:1]
    for script in scripts:
        if not script.literal:
            return "the sed script is built at run time"
        reason = _sed_writes(script.text)
        if reason:
            return reason
    return None


def _sed_writes(script: str) -> str | None:
    """Why a sed script writes or runs something (w, W, e, s///w, s///e), or None."""
    i, n = 0, len(script)

    def skip_regex(i: int, delim: str) -> int:
        while i < n and script[i] != delim:
            i += 2 if script[i] == "\\" else 1
        return i + 1

    def skip_address(i: int) -> int:
        if i < n and script[i].isdigit():
            while i < n and (script[i].isdigit() or script[i] == "~"):
                i += 1
        elif i < n and script[i] == "$":
            i += 1
        elif i < n and script[i] == "/":
            i = skip_regex(i + 1, "/")
        elif i + 1 < n and script[i] == "\\":
            i = skip_regex(i + 2, script[i + 1])
        else:
            return i
        while i < n and script[i] in "IM":
            i += 1
        return i

    while i < n:
        while i < n and script[i] in " \t\n;":
            i += 1
        if i >= n:
            break
        i = skip_address(i)
        if i < n and script[i] == ",":
            i += 1
            if i < n and script[i] in "+~":
                i += 1
            i = skip_address(i)
        while i < n and script[i] in " \t!":
            i += 1
        if i >= n:
            return "cannot read the sed script"
        cmd = script[i]
        i += 1
        if cmd in "{}=dDgGhHnNpPxzF":
            continue
        if cmd in "qQlL":
            while i < n and (script[i].isdigit() or script[i] in " \t"):
                i += 1
            continue
        if cmd in "wW":
            return f"sed {cmd} writes to a file"
        if cmd == "e":
            return "sed e runs a command"
        if cmd in "#:btTvrRaic":
            # up to the end of the line; a/i/c text may go on after a trailing backslash
            while i < n and script[i] != "\n" and not (cmd in "btT" and script[i] == ";"):
                i += 2 if cmd in "aic" and script[i] == "\\" else 1
            continue
        if cmd in "sy":
            if i >= n:
                return "cannot read the sed script"
            delim = script[i]
            i = skip_regex(skip_regex(i + 1, delim), delim)
            while cmd == "s" and i < n and script[i] not in " \t\n;}":
                if script[i] == "w":
                    return "sed s///w writes to a file"
                if script[i] == "e":
                    return "sed s///e runs a command"
                i += 1
            continue
        return "cannot read the sed script"
    return None


_AWK_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')


def _r_awk(args: list[Word]) -> str | None:
    o = Opts(
        args,
        "FvfiEelW",
        ("field-separator", "assign", "file", "include", "exec", "source", "load"),
    )
    if o.has("-i", "--include", "-l", "--load"):
        return "awk -i/-l loads code (-i inplace edits files)"
    if o.has("-f", "--file", "-E", "--exec"):
        return "awk -f runs a program file"
    if o.has("-o", "-p", "-d", "-D", "--pretty-print", "--profile", "--dump-variables"):
        return "this awk option writes a file"
    if any(re.search(r"@\s*(?:load|include)\b", w.text) for w in o.operands[:1]):
        return "awk @load/@include loads code"
    programs = o.values("-e", "--source") or o.operands[:1]
    for program in programs:
        if not program.literal:
            return "the awk program is built at run time"
        code = _AWK_STRING.sub('""', program.text)
        if re.search(r"\bsystem\s*\(", code):
            return "awk system() runs a command"
        if re.search(r"\|&?\s*getline\b|\|&", code):
            return "awk runs a command (| getline)"
        for m in re.finditer(r"\bprintf?\b([^;{}\n]*)", code):
            body = m.group(1)
            while re.search(r"\([^()]*\)", body):
                body = re.sub(r"\([^()]*\)", "", body)
            if ">" in body or "|" in body:
                return "awk print redirects its output (> or |)"
    return None


def _r_sort(args: list[Word]) -> str | None:
    o = Opts(
        args,
        "kotST",
        ("key", "output", "field-separator", "buffer-size", "temporary-directory")
        + ("files0-from", "batch-size", "parallel", "compress-program", "random-source"),
    )
    if o.has("-o", "--output"):
        return "sort -o writes a file"
    if o.has("--compress-program"):
        return "sort --compress-program runs a program"
    return None


def _r_uniq(args: list[Word]) -> str | None:
    o = Opts(args, "fsw", ("skip-fields", "skip-chars", "check-chars"))
    return "uniq with a second file writes to it" if len(o.operands) > 1 else None


def _r_tee(args: list[Word]) -> str | None:
    return "tee writes to files"


def _r_hostname(args: list[Word]) -> str | None:
    o = Opts(args, "F", ("file",))
    if o.operands or o.has("-F", "--file", "-b", "--boot"):
        return "hostname with a name sets it"
    return None


def _r_date(args: list[Word]) -> str | None:
    o = Opts(args, "dfr", ("date", "file", "reference"))
    if o.has("-s", "--set"):
        return "date -s sets the clock"
    if any(not w.text.startswith("+") for w in o.operands):
        return "date with a time sets the clock"
    return None


def _r_top(args: list[Word]) -> str | None:
    # procps' top creates ~/.config/procps on its first run, even in batch mode.
    return "top writes its configuration directory; ps reads the same without writing"


def _r_blkid(args: list[Word]) -> str | None:
    o = Opts(args, "cgosmnuUlLt", ("cache-file", "output", "match-types", "usages", "match-tag"))
    if o.has("-p", "--probe") or any(v.text == "/dev/null" for v in o.values("-c", "--cache-file")):
        return None
    return "blkid updates its cache as root (read-only: lsblk -f, or blkid -p)"


def _r_decompress(args: list[Word]) -> str | None:
    return None  # zcat, zgrep...: to standard output, like cat and grep


def _r_compressor(args: list[Word]) -> str | None:
    """gzip, xz, zstd...: only to standard output (-c), or listing and testing."""
    o = Opts(args, "SoTLbM", ("suffix", "output", "threads", "memlimit", "format"))
    if o.has("-o", "--output"):
        return "this compressor option writes a file"
    if o.has("-c", "--stdout", "--to-stdout", "-l", "--list", "-t", "--test"):
        return None
    return "compressing or uncompressing in place writes files (read-only needs -c)"


def first_operand(tool: str, short_arg: str, long_arg: Sequence[str], allowed: str) -> Rule:
    """A tool whose first operand is a subcommand from `allowed` (or none at all)."""
    reads = frozenset(allowed.split())

    def check(args: list[Word]) -> str | None:
        o = Opts(args, short_arg, long_arg)
        if not o.operands or o.operands[0].text in reads:
            return None
        return f"not on the read-only list: {tool} {o.operands[0].text}"

    return check


def flag_writes(short_arg: str, long_arg: Sequence[str], reason: str, *flags: str) -> Rule:
    """A read-only tool with a few options that write: `sar -o`, `tree -o`, `ss -K`..."""

    def check(args: list[Word]) -> str | None:
        return reason if Opts(args, short_arg, long_arg).has(*flags) else None

    return check


def _r_xxd(args: list[Word]) -> str | None:
    o = Opts(args, "cglnosC", ("cols", "groupsize", "len", "name", "seek"))
    return "xxd writes to its second file" if len(o.operands) > 1 else None


def operands_rule(limit: int, allowed: str, tool: str) -> Rule:
    """A tool that reads with no subcommand or one of `allowed`, and at most `limit` operands."""
    reads = frozenset(allowed.split())

    def check(args: list[Word]) -> str | None:
        if any(w.text in ("-H", "-M") or w.text.startswith(("--host", "--machine")) for w in args):
            return f"{tool} -H/-M runs on another machine (over ssh)"
        ops = [w.text for w in args if not w.text.startswith("-")]
        if not ops or (ops[0] in reads and len(ops) <= limit):
            return None
        return f"not on the read-only list: {tool} {ops[0]}"

    return check


def _r_file(args: list[Word]) -> str | None:
    return "file -C writes a magic file" if Opts(args, "emfFP").has("-C", "--compile") else None


RULES: dict[str, Rule] = {
    **dict.fromkeys(("export", "declare", "typeset", "local", "readonly"), _r_assign),
    "sed": _r_sed,
    **dict.fromkeys(("awk", "gawk", "mawk", "nawk"), _r_awk),
    "sort": _r_sort,
    "uniq": _r_uniq,
    "tee": _r_tee,
    "hostname": _r_hostname,
    "date": _r_date,
    "top": _r_top,
    "apt": first_operand(
        "apt", "oct", (), "list show search policy depends rdepends showsrc madison"
    ),
    "apt-cache": first_operand(
        "apt-cache",
        "oc",
        (),
        "policy show search depends rdepends showpkg showsrc stats madison pkgnames unmet dump",
    ),
    **dict.fromkeys(
        split_words("zcat bzcat xzcat lzcat zstdcat zgrep zegrep zfgrep bzgrep xzgrep zstdgrep"),
        _r_decompress,
    ),
    **dict.fromkeys(
        split_words("gzip gunzip bzip2 bunzip2 xz unxz lzma unlzma zstd unzstd pigz"),
        _r_compressor,
    ),
    "xxd": _r_xxd,
    "blkid": _r_blkid,
    "file": _r_file,
    "rg": flag_writes("egtTmABCfjMr", ("pre",), "rg --pre runs a program", "--pre"),
    "sar": flag_writes("efiIPnos", (), "sar -o writes a file", "-o"),
    "tree": flag_writes("LIPoHT", (), "tree -o writes a file", "-o"),
    "ss": flag_writes("fAFN", (), "ss -K kills sockets", "-K", "--kill"),
    "lastlog": flag_writes(
        "btu", (), "lastlog -C/-S changes the log", "-C", "-S", "--clear", "--set"
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


def injectable(args: Sequence[Word]) -> Word | None:
    """An argument that may turn into an option at run time (`$OPT`, `*` matching `-i`)."""
    for word in args:
        if word.text == "--" and word.literal:
            return None
        if not word.literal and word.text[:1] in "$`" and not HOME_VAR.match(word.text):
            return word
        if word.glob and word.text[:1] in "*?[":
            return word
    return None


def read_only_rule(name: str, args: list[Word]) -> Assessment:
    if name in ALWAYS:
        return ro(name)  # none of these has an option that writes
    hidden = injectable(args)
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
    return write(reason) if reason else ro(name, service=name in SERVICE_READS)
