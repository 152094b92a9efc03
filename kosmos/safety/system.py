"""System tools: services and logs, containers and clusters, packages, kernel settings."""

from __future__ import annotations

from collections.abc import Callable

from kosmos.safety.catalogue import (
    BUSCTL_READ,
    CRICTL_READ,
    DOCKER_GROUPS,
    DOCKER_READ,
    KUBECTL_CONFIG_READ,
    KUBECTL_READ,
    KUBECTL_SECRETS,
    NETWORKCTL_READ,
    NMCLI_OBJECTS,
    SYSTEMCTL_READ,
)
from kosmos.safety.options import Opts, opts, split_words, texts_of
from kosmos.safety.shell import Word
from kosmos.safety.verdict import SecretReason

__all__ = ["RULES"]

Rule = Callable[[list[Word]], str | None]


def _remote(tool: str, o: Opts) -> str | None:
    """systemd's tools reach other machines over ssh (-H) or into containers (-M)."""
    if o.has("-H", "--host", "-M", "--machine"):
        return f"{tool} -H/-M runs on another machine (over ssh)"
    return None


def _r_systemctl(args: list[Word]) -> str | None:
    o = opts("systemctl", args)
    if _remote("systemctl", o):
        return _remote("systemctl", o)
    if not o.operands or o.operands[0].text in SYSTEMCTL_READ:
        return None
    return f"systemctl {o.operands[0].text} changes the system"


def _r_journalctl(args: list[Word]) -> str | None:
    writes = split_words(
        "--vacuum-size --vacuum-time --vacuum-files --rotate --flush --sync --relinquish-var "
        "--smart-relinquish-var --setup-keys --update-catalog --cursor-file"
    )
    o = opts("journalctl", args)
    if _remote("journalctl", o):
        return _remote("journalctl", o)
    hit = next((w for w in writes if o.has(w)), None)
    return f"journalctl {hit} changes the journal" if hit else None


def _r_docker(args: list[Word]) -> str | None:
    o = opts("docker", args, stop=True)
    if o.has("-c", "--context", "--config") or any(
        not h.literal or "://" in h.text and not h.text.startswith(("unix://", "tcp://"))
        for h in o.values("-H", "--host")
    ):
        return "docker -H ssh://, --context and --config can run other programs"
    if not o.operands:
        return None  # --version, -v, help
    sub, rest = o.operands[0].text, o.operands[1:]
    if sub == "compose":
        return _r_compose(rest)
    if sub in DOCKER_GROUPS:
        # a group (`docker container`) has no options of its own: its action comes next
        action = rest[0].text if rest else "ls"
        if action not in DOCKER_GROUPS[sub]:
            return f"not on the read-only list: docker {sub} {action}"
        sub, rest = action, rest[1:]
    if sub == "stats":
        return None if any(w.text == "--no-stream" for w in args) else "docker stats runs forever"
    if sub in DOCKER_READ or sub in ("ls", "list"):
        return None
    return f"not on the read-only list: docker {sub}"


def _r_compose(args: list[Word]) -> str | None:
    o = opts("docker compose", args, stop=True)
    if not o.operands or o.operands[0].text in DOCKER_GROUPS["compose"]:
        return None
    return f"not on the read-only list: docker compose {o.operands[0].text}"


def _r_kubectl(args: list[Word]) -> str | None:
    # kubectl reads its global options anywhere on the line, between the subcommand's words
    o = opts("kubectl", args)
    if o.has("--kubeconfig"):
        return "kubectl --kubeconfig: a config can run credential programs"
    if o.has("--profile", "--profile-output", "--cache-dir"):
        return "kubectl --profile-output and --cache-dir write files"
    if not o.operands:
        return None
    sub, operands = o.operands[0].text, texts_of(o.operands[1:])
    shown = any(t.startswith(("-o", "--output", "--template")) for t in texts_of(args))
    if sub == "get" and operands[:1] and operands[0].split("/")[0] in KUBECTL_SECRETS and shown:
        return SecretReason("kubectl get secret -o prints the secrets themselves")
    if sub in KUBECTL_READ:
        return None
    if sub == "cluster-info":
        if any(t.startswith("--output-directory") for t in texts_of(args)):
            return "kubectl cluster-info dump --output-directory writes files"
        return None
    if sub == "config" and operands[:1] and operands[0] in KUBECTL_CONFIG_READ:
        if any(t == "--raw" or t.startswith("--raw=") for t in texts_of(args)):
            return SecretReason(
                "kubectl config view --raw prints the credentials in the kubeconfig"
            )
        return None
    if sub == "auth" and operands[:1] in (["can-i"], ["whoami"]):
        return None
    return f"not on the read-only list: kubectl {sub}"


def _r_dpkg(args: list[Word]) -> str | None:
    shorts = set("lLsSpcIWfCV")
    longs = split_words(
        "list listfiles status search print-avail get-selections print-architecture "
        "print-foreign-architectures compare-versions contents info show field version help "
        "audit verify admindir root showformat no-pager"
    )
    o = Opts(args, "", ())
    bad = next((f"-{c}" for c, _ in o.short if c not in shorts), None) or next(
        (f"--{g}" for g in o.longs() if g not in longs), None
    )
    if bad:
        return f"dpkg {bad} changes packages"
    return None if (o.short or o.long) else "dpkg without a query option"


def _r_rpm(args: list[Word]) -> str | None:
    texts = texts_of(args)
    writes = split_words(
        "--setperms --setugids --restore --erase --install --upgrade --freshen --import "
        "--rebuilddb --initdb --addsign --resign --delsign --pipe --eval -e -i -U -F -E -D "
        "--define --macros --rcfile --load"
    )
    if not texts or not (
        texts[0].startswith(("-q", "--query")) or texts[0] in ("-V", "--verify", "--version")
    ):
        return "rpm without -q changes packages"
    # --define and --macros can name a macro that runs a command (`%(cmd)`, `%{lua:...}`)
    hit = next((t for t in texts if t.split("=")[0] in writes), None)
    return f"rpm {hit} changes packages or runs macros" if hit else None


def _r_yum(args: list[Word]) -> str | None:
    o = Opts(
        args,
        "cdeRx",
        ("config", "installroot", "enablerepo", "disablerepo", "releasever", "setopt", "repo"),
    )
    ops = texts_of(o.operands)
    reads = split_words(
        "list info search repolist repoinfo check-update provides whatprovides deplist repoquery"
    )
    if not ops or ops[0] in reads:
        return None
    if ops[0] == "history" and (len(ops) == 1 or ops[1] in ("list", "info", "summary")):
        return None
    if ops[0] == "updateinfo" and ops[1:2] in ([], ["list"], ["info"], ["summary"]):
        return None
    return f"not on the read-only list: yum/dnf {ops[0]}"


def _r_pip(args: list[Word]) -> str | None:
    o = opts("pip", args, stop=True)
    if o.has("--log"):
        return "pip --log writes a file"
    ops = texts_of(o.operands)
    if not ops or ops[0] in ("list", "show", "freeze", "check", "help", "inspect", "debug"):
        return None
    if ops[0] == "config" and ops[1:2] in (["list"], ["get"], ["debug"]):
        return None
    return f"not on the read-only list: pip {ops[0]}"


def _r_service(args: list[Word]) -> str | None:
    texts = texts_of(args)
    if texts == ["--status-all"] or (len(texts) == 2 and texts[1] == "status"):
        return None
    return f"service {' '.join(texts[1:2]) or 'without status'} changes a service"


def _r_mount(args: list[Word]) -> str | None:
    return None if all(w.text == "-l" for w in args) else "mount with arguments mounts something"


def _r_sysctl(args: list[Word]) -> str | None:
    o = opts("sysctl", args)
    if o.has("-w", "--write", "-p", "--load", "--system", "-f"):
        return "sysctl -w/-p sets kernel values"
    if any("=" in w.text for w in o.operands):
        return "sysctl name=value sets a kernel value"
    return None


def _r_dmesg(args: list[Word]) -> str | None:
    o = opts("dmesg", args)
    if o.has(
        "-c", "-C", "-D", "-E", "-n", "--clear", "--read-clear", "--console-off", "--console-on"
    ) or o.has("--console-level"):
        return "this dmesg option changes the kernel log"
    return None


def _r_crontab(args: list[Word]) -> str | None:
    o = opts("crontab", args)
    if o.has("-l", "--list") and not o.has("-e", "-r", "-i") and not o.operands:
        return None
    return "crontab changes the crontab"


def _r_loginctl(args: list[Word]) -> str | None:
    o = opts("loginctl", args)
    if _remote("loginctl", o):
        return "loginctl -H/-M runs on another machine (over ssh)"
    ops = texts_of(o.operands)
    if not ops or ops[0].startswith(("list-", "show-")):
        return None
    if ops[0] in ("session-status", "user-status", "seat-status"):
        return None
    return f"not on the read-only list: loginctl {ops[0]}"


def _r_busctl(args: list[Word]) -> str | None:
    o = opts("busctl", args)
    if _remote("busctl", o) or o.has("--address"):
        return "busctl -H/-M/--address talks to another machine or bus"
    ops = texts_of(o.operands)
    if not ops or ops[0] in BUSCTL_READ:
        return None
    return f"not on the read-only list: busctl {ops[0]}"


def _r_networkctl(args: list[Word]) -> str | None:
    ops = texts_of(opts("networkctl", args).operands)
    if not ops or ops[0] in NETWORKCTL_READ:
        return None
    return f"not on the read-only list: networkctl {ops[0]}"


def _prefixed(word: str, names: tuple[str, ...]) -> str | None:
    """nmcli's way with abbreviations: the first name, in its order, that `word` begins."""
    return next((n for n in names if word and n.startswith(word)), None)


def _r_nmcli(args: list[Word]) -> str | None:
    o = opts("nmcli", args, stop=True)
    if o.has("-s", "--show-secrets", "-a", "--ask"):
        return SecretReason("nmcli -s shows the network secrets, -a asks for them")
    ops = texts_of(o.operands)
    if not ops:
        return None  # the overview: nmcli general status and device status
    objects = tuple(name for name, _ in NMCLI_OBJECTS)
    obj = _prefixed(ops[0], objects)
    commands = dict(NMCLI_OBJECTS).get(obj or "")
    if commands is None:
        return f"not on the read-only list: nmcli {ops[0]}"
    names = tuple(c.rstrip("!?") for c in commands.split())
    command = _prefixed(ops[1], names) if len(ops) > 1 else names[0]
    spelled = next((c for c in commands.split() if c.rstrip("!?") == command), None)
    if spelled is None or spelled.endswith("!"):
        return f"nmcli {' '.join(ops[:2])} changes the network"
    if spelled.endswith("?") and len(ops) > 2:  # `radio wifi off`, `general hostname NAME`
        return f"nmcli {' '.join(ops[:3])} changes the network"
    if obj == "device" and command == "wifi" and ops[2:3] and ops[2] != "list":
        return f"nmcli device wifi {ops[2]} is not a read"
    return None


def _r_crictl(args: list[Word]) -> str | None:
    o = opts("crictl", args, stop=True)
    ops = texts_of(o.operands)
    if not ops or ops[0] in CRICTL_READ:
        return None
    return f"not on the read-only list: crictl {ops[0]}"


RULES: dict[str, Rule] = {
    "systemctl": _r_systemctl,
    "journalctl": _r_journalctl,
    "docker": _r_docker,
    "podman": _r_docker,
    "docker-compose": _r_compose,
    "kubectl": _r_kubectl,
    "dpkg": _r_dpkg,
    "rpm": _r_rpm,
    "yum": _r_yum,
    "dnf": _r_yum,
    "pip": _r_pip,
    "service": _r_service,
    "mount": _r_mount,
    "sysctl": _r_sysctl,
    "dmesg": _r_dmesg,
    "crontab": _r_crontab,
    "loginctl": _r_loginctl,
    "busctl": _r_busctl,
    "networkctl": _r_networkctl,
    "nmcli": _r_nmcli,
    "crictl": _r_crictl,
}
