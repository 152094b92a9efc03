"""Network tools: ip, ifconfig, ping, curl, wget, iptables, nft, ufw, openssl."""

from __future__ import annotations

import re
from collections.abc import Callable

from kosmos.safety.catalogue import CURL_ARG, CURL_LONG, IP_OBJECTS, OPENSSL_READ
from kosmos.safety.options import Opts, split_words, texts_of
from kosmos.safety.shell import Word

__all__ = ["RULES"]

Rule = Callable[[list[Word]], str | None]


def _r_ip(args: list[Word]) -> str | None:
    texts = texts_of(args)
    i = 0
    while i < len(texts) and texts[i].startswith("-"):
        option = texts[i].lstrip("-")
        if option in ("b", "batch", "force"):
            return "ip -batch runs commands from a file"
        i += 2 if option in ("n", "netns", "f", "family", "rc", "rcvbuf", "l", "loops") else 1
    if i >= len(texts):
        return None
    obj, rest = texts[i], texts[i + 1 :]
    actions = next((a.split() for full, a in IP_OBJECTS if full.startswith(obj)), None)
    if actions is None:
        return f"not on the read-only list: ip {obj}"
    operands = [t for t in rest if not t.startswith("-")]
    if not operands:
        return None  # `ip addr`, `ip -s link`: show
    action = operands[0]
    full = next((a for a in actions if a.rstrip("!").startswith(action)), None)
    if full is None:
        return f"not on the read-only list: ip {obj} {action}"
    return f"ip {obj} {action} changes the network" if full.endswith("!") else None


def _r_ifconfig(args: list[Word]) -> str | None:
    operands = [w for w in args if not w.text.startswith("-")]
    return "ifconfig with settings changes an interface" if len(operands) > 1 else None


def _r_ping(args: list[Word]) -> str | None:
    if Opts(args, "cFiIlmMpQsStTwW").has("-c"):
        return None
    return "ping without -c runs forever"


def _r_curl(args: list[Word]) -> str | None:
    o = Opts(args, CURL_ARG, CURL_LONG)
    if o.has("--engine"):
        return "curl --engine loads code"
    if any("%output{" in v.text for v in o.values("-w", "--write-out")):
        return "curl -w %output{...} writes a file"
    if any(v.text not in ("-", "/dev/null") for v in o.values("-o", "--output")):
        return "curl -o writes a file"
    if o.has("-O", "--remote-name", "--remote-name-all", "-J", "--output-dir"):
        return "curl -O writes a file"
    if o.has("-T", "--upload-file"):
        return "curl -T uploads a file"
    if o.has("-d", "-F", "--json") or any(g.startswith(("data", "form")) for g in o.longs()):
        return "curl sends data (-d/-F)"
    for method in o.values("-X", "--request"):
        if method.text.upper() not in ("GET", "HEAD"):
            return f"curl -X {method.text} changes a remote resource"
    if o.has("-K", "--config", "-Q", "--quote"):
        return "curl -K/-Q runs extra instructions"
    for option in ("-c", "--cookie-jar", "-D", "--dump-header", "--trace", "--trace-ascii"):
        if any(v.text not in ("-", "/dev/null") for v in o.values(option)):
            return f"curl {option} writes a file"
    if o.has("--stderr", "--libcurl", "--etag-save", "--hsts", "--alt-svc"):
        return "this curl option writes a file"
    return None


def _r_wget(args: list[Word]) -> str | None:
    o = Opts(
        args,
        "oaeiBtOTwQPlARDIXU",
        split_words(
            "output-document output-file append-output execute input-file tries timeout wait "
            "directory-prefix level post-data post-file method body-data body-file header "
            "use-askpass save-cookies config warc-file hsts-file rejected-log backups"
        ),
    )
    for option in ("--use-askpass", "--config"):
        if o.has(option):
            return f"wget {option} runs a program or wgetrc commands"
    for option in ("--save-cookies", "--warc-file", "--hsts-file", "--rejected-log", "--xattr"):
        if o.has(option):
            return f"wget {option} writes a file"
    if o.has("-o", "--output-file", "-a", "--append-output"):
        return "wget -o writes a log file"
    if o.has("-e", "--execute"):
        return "wget -e runs wgetrc commands"
    if o.has("-r", "--recursive", "-m", "--mirror", "-p", "--page-requisites"):
        return "wget -r saves files"
    if o.has("--post-data", "--post-file", "--body-data", "--body-file"):
        return "wget sends data"
    if any(m.text.upper() not in ("GET", "HEAD") for m in o.values("--method")):
        return "wget --method changes a remote resource"
    if o.has("--spider"):
        return None
    outputs = o.values("-O", "--output-document")
    if outputs and all(v.text in ("-", "/dev/null") for v in outputs):
        return None
    return "wget saves a file (read-only needs -O - or --spider)"


def _r_iptables(args: list[Word]) -> str | None:
    texts = texts_of(args)
    listing = False
    i = 0
    while i < len(texts):
        text = texts[i]
        if text in ("--list", "--list-rules"):
            listing = True
        elif text in ("--numeric", "--verbose", "--exact", "--line-numbers", "--wait"):
            pass
        elif text in ("-t", "--table"):
            i += 1
        elif re.fullmatch(r"-[LSnvxwt]+", text):
            listing = listing or "L" in text or "S" in text
            if text.endswith("t"):
                i += 1
        elif text.startswith(("--table=", "--wait=")) or not text.startswith("-"):
            pass  # a chain name after -L, or a -w timeout
        else:
            return "iptables changes firewall rules"
        i += 1
    return None if listing else "iptables changes firewall rules"


def _r_nft(args: list[Word]) -> str | None:
    o = Opts(args, "fI", ("file", "includepath"))
    if o.has("-f", "--file", "-i", "--interactive"):
        return "nft -f runs a rules file"
    ops = texts_of(o.operands)
    return None if ops[:1] == ["list"] else "nft changes firewall rules"


def _r_ufw(args: list[Word]) -> str | None:
    ops = [w.text for w in args if not w.text.startswith("-")]
    if ops[:1] in (["status"], ["version"]) or ops[:2] == ["app", "list"]:
        return None
    return "ufw changes firewall rules"


def _r_openssl(args: list[Word]) -> str | None:
    texts = texts_of(args)
    if not texts or texts[0] not in OPENSSL_READ:
        return f"not on the read-only list: openssl {' '.join(texts[:1])}".rstrip()
    if any(t in ("-engine", "-provider", "-provider-path", "-keygen_engine") for t in texts):
        return "openssl -engine/-provider loads code"
    writes = ("-out", "-keyout", "-writerand", "-CAcreateserial", "-sess_out", "-keylogfile")
    hit = next((t for t in texts if t in writes), None)
    if hit:
        return f"openssl {hit} writes a file"
    if texts[0] == "req" and any(t in ("-new", "-newkey", "-x509") for t in texts):
        return "openssl req -new writes a key"
    return None


RULES: dict[str, Rule] = {
    "ip": _r_ip,
    "ifconfig": _r_ifconfig,
    "ping": _r_ping,
    "curl": _r_curl,
    "wget": _r_wget,
    "iptables": _r_iptables,
    "ip6tables": _r_iptables,
    "nft": _r_nft,
    "ufw": _r_ufw,
    "openssl": _r_openssl,
}
