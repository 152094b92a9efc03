"""What can wreck a host in one step: wipes, reformats, reboots, firewall lock-outs, dropped
databases. Each check says why, or None."""

from __future__ import annotations

import re
from collections.abc import Callable

from kosmos.safety.catalogue import DOWN_TARGETS, SQL_DROP, SYSTEMCTL_DOWN
from kosmos.safety.options import Opts, opts, texts_of
from kosmos.safety.paths import is_block_device, is_critical_dir, is_critical_file
from kosmos.safety.queries import is_interpreter, mentions_download
from kosmos.safety.shell import Word
from kosmos.safety.verdict import Context

__all__ = ["DANGER", "danger", "text_danger"]


def danger(name: str, args: list[Word], ctx: Context) -> str | None:
    """Why `name args` can wreck the host in one go, or None."""
    check = DANGER.get(name)
    if check is not None:
        reason = check(name, args, ctx)
        if reason:
            return reason
    if name.startswith("mkfs") or name in ("mke2fs", "mkswap", "wipefs", "blkdiscard", "mkdosfs"):
        return f"{name} destroys the data on a device"
    if (is_interpreter(name) or name in ("source", ".")) and any(
        mentions_download(w) for w in args
    ):
        return f"runs a downloaded script ({name} <(curl ...))"
    return None


def _d_rm(name: str, args: list[Word], ctx: Context) -> str | None:
    o = Opts(args)
    label = " ".join(["rm", *(w.text for w in args if w.text.startswith("-") and w.text != "--")])
    if o.has("--no-preserve-root"):
        return "rm --no-preserve-root can wipe /"
    recursive = o.has("-r", "-R", "--recursive")
    for word in o.operands:
        if (recursive and is_critical_dir(word, ctx)) or is_critical_file(word, ctx):
            relative = word.literal and not word.tilde and not word.text.startswith("/")
            return f"{label} on {word.raw}" + (f" (in {ctx.cwd})" if relative else "")
    return None


def _d_chmod(name: str, args: list[Word], ctx: Context) -> str | None:
    o = Opts(args, "", ("reference", "from"))
    if not o.has("-R", "--recursive"):
        return None
    # A mode such as -x reads as an option here; every operand is checked, modes and owners
    # never look like system directories.
    for word in o.operands:
        if is_critical_dir(word, ctx):
            return f"recursive {name} on {word.raw}"
    return None


def _d_mv(name: str, args: list[Word], ctx: Context) -> str | None:
    o = Opts(args, "tS", ("target-directory", "suffix"))
    sources = o.operands if o.has("-t", "--target-directory") else o.operands[:-1]
    for word in sources:
        if is_critical_dir(word, ctx) or is_critical_file(word, ctx):
            return f"mv moves {word.raw} away"
    return _d_overwrite(name, args, ctx)


def _d_overwrite(name: str, args: list[Word], ctx: Context) -> str | None:
    """cp, mv, install, tee, truncate, shred and dd onto a block device or a system file."""
    if name == "dd":
        targets = [Word(w.text[3:], w.raw, literal=w.literal) for w in args if w.text[:3] == "of="]
    else:
        o = Opts(args, "tSmogs" if name != "tee" else "", ("target-directory", "suffix", "size"))
        targets = o.operands if name in ("tee", "truncate", "shred") else o.operands[-1:]
        if name == "tee" and o.has("-a", "--append"):
            return next(
                (f"tee writes to a block device ({w.raw})" for w in targets if is_block_device(w)),
                None,
            )
    for word in targets:
        if is_block_device(word):
            return f"{name} writes to a block device ({word.raw})"
        if is_critical_file(word, ctx):
            return f"{name} overwrites {word.raw}"
    return None


def _d_power(name: str, args: list[Word], ctx: Context) -> str | None:
    texts = texts_of(args)
    if any(t in ("--help", "--version") for t in texts):
        return None
    if name == "shutdown" and "-c" in texts:
        return None
    return f"{name} takes the host down"


def _d_init(name: str, args: list[Word], ctx: Context) -> str | None:
    if args and args[0].text in ("0", "6", "1", "s", "S", "single"):
        return f"{name} {args[0].text} halts, reboots or isolates the host"
    return None


def _d_systemctl(name: str, args: list[Word], ctx: Context) -> str | None:
    o = opts("systemctl", args)
    ops = texts_of(o.operands)
    if ops and ops[0] in SYSTEMCTL_DOWN:
        return f"systemctl {ops[0]} takes the host down or isolates it"
    if ops and ops[0] in ("start", "restart", "isolate") and DOWN_TARGETS & set(ops[1:]):
        return f"systemctl {' '.join(ops)} takes the host down"
    return None


def _d_kill(name: str, args: list[Word], ctx: Context) -> str | None:
    texts = texts_of(args)
    if not texts or texts[0] in ("-l", "-L", "--list", "--table"):
        return None
    start = 0
    if texts[0] in ("-s", "-n", "--signal"):
        start = 2
    elif texts[0].startswith("-") and texts[0] != "--" and len(texts) > 1:
        start = 1  # the signal: -9, -KILL, -SIGTERM
    pids = [t for t in texts[start:] if t != "--"]
    if "1" in pids or "-1" in pids:
        return f"kill {' '.join(texts)} signals init or every process"
    return None


def _d_iptables(name: str, args: list[Word], ctx: Context) -> str | None:
    texts = texts_of(args)
    for i, text in enumerate(texts):
        if text in ("--flush", "--delete-chain") or re.fullmatch(r"-[nvxwZ]*[FX][nvxwFXZ]*", text):
            return f"{name} {text} removes firewall rules"
        if text in ("-P", "--policy") and i + 2 < len(texts):
            chain, target = texts[i + 1], texts[i + 2].upper()
            if chain.upper() in ("INPUT", "OUTPUT") and target in ("DROP", "REJECT"):
                return f"{name} -P {chain} {target} can lock everyone out"
    return None


def _d_firewall(name: str, args: list[Word], ctx: Context) -> str | None:
    texts = [t.lower() for t in texts_of(args)]
    if name == "nft" and "flush" in texts and "ruleset" in texts:
        return "nft flush ruleset removes every firewall rule"
    operands = [t for t in texts if not t.startswith("-")]
    if name == "ufw" and operands[:1] in (["disable"], ["reset"]):
        return f"ufw {operands[0]} turns the firewall off or wipes it"
    if name == "firewall-cmd" and "--panic-on" in texts:
        return "firewall-cmd --panic-on drops all traffic"
    return None


def _d_database(name: str, args: list[Word], ctx: Context) -> str | None:
    texts = [t.lower() for t in texts_of(args)]
    if name == "dropdb":
        return "dropdb drops a database"
    if name == "mysqladmin" and "drop" in texts:
        return "mysqladmin drop drops a database"
    if name == "redis-cli":
        hit = next((t for t in texts if t in ("flushall", "flushdb")), None)
        if hit:
            return f"redis-cli {hit} deletes every key"
    return None


def _d_crontab(name: str, args: list[Word], ctx: Context) -> str | None:
    return "crontab -r deletes the whole crontab" if Opts(args, "u").has("-r") else None


def _d_user(name: str, args: list[Word], ctx: Context) -> str | None:
    return f"{name} deletes a user account"


def _d_containers(name: str, args: list[Word], ctx: Context) -> str | None:
    texts = texts_of(args)
    if name in ("docker", "podman"):
        if "system" in texts and "prune" in texts[texts.index("system") :]:
            rest = texts[texts.index("system") :]
            if "--all" in rest or any(re.fullmatch(r"-[a-z]*a[a-z]*", t) for t in rest):
                return f"{name} system prune -a deletes every unused image, container and volume"
        return None
    if "delete" in texts:
        rest = texts[texts.index("delete") + 1 :]
        for text in rest:
            if text in ("ns", "namespace", "namespaces", "--all", "-A", "--all-namespaces") or (
                text.startswith(("ns/", "namespace/", "namespaces/"))
            ):
                return f"kubectl delete {' '.join(rest)} deletes whole namespaces or all objects"
    return None


DangerCheck = Callable[[str, list[Word], Context], str | None]


DANGER: dict[str, DangerCheck] = {
    "rm": _d_rm,
    "chmod": _d_chmod,
    "chown": _d_chmod,
    "chgrp": _d_chmod,
    "mv": _d_mv,
    **dict.fromkeys(("cp", "install", "tee", "truncate", "shred", "dd"), _d_overwrite),
    **dict.fromkeys(("reboot", "poweroff", "halt", "shutdown"), _d_power),
    "init": _d_init,
    "telinit": _d_init,
    "systemctl": _d_systemctl,
    "kill": _d_kill,
    "killall5": lambda name, args, ctx: "killall5 signals every process",
    **dict.fromkeys(
        ("iptables", "ip6tables", "iptables-legacy", "ip6tables-legacy", "iptables-nft"),
        _d_iptables,
    ),
    **dict.fromkeys(("nft", "ufw", "firewall-cmd"), _d_firewall),
    **dict.fromkeys(("dropdb", "mysqladmin", "redis-cli"), _d_database),
    "crontab": _d_crontab,
    "userdel": _d_user,
    "deluser": _d_user,
    **dict.fromkeys(("docker", "podman", "kubectl"), _d_containers),
}


def text_danger(text: str) -> str | None:
    m = SQL_DROP.search(text)
    if not m:
        return None
    found = " ".join(m.group().split())
    if found.endswith("("):
        return "dropDatabase() destroys a database"
    return f"{found.upper()} destroys data"
