"""Network tools: ip, ifconfig, ping, curl, wget, iptables, nft, ufw, openssl."""

from __future__ import annotations

import re
from collections.abc import Callable

from kosmos.safety.catalogue import (
    BODY_HEADERS,
    CURL_HEADER_OPTIONS,
    CURL_PRINT_ONLY,
    CURL_SENDS,
    FETCH_METHODS,
    IP_OBJECTS,
    OPENSSL_READ,
    OPENSSL_WRITES,
    WGET_HEADER_OPTIONS,
    WGET_SENDS,
)
from kosmos.safety.lexer import known_text
from kosmos.safety.options import Opts, opts, texts_of
from kosmos.safety.shell import Word

__all__ = ["RULES"]

Rule = Callable[[list[Word]], str | None]


def _r_ip(args: list[Word]) -> str | None:
    # ip matches its options, objects and actions by prefix (`-bat` is -batch, `a s` is
    # `address show`), and reads options only before the object.
    texts = texts_of(args)
    i = 0
    while i < len(texts) and texts[i].startswith("-"):
        option = texts[i].lstrip("-")
        if option and (
            "batch".startswith(option) or (len(option) > 1 and "force".startswith(option))
        ):
            return "ip -batch runs commands from a file"
        takes = option and any(v.startswith(option) for v in ("netns", "family", "rcvbuf", "loops"))
        i += 2 if takes and option not in ("4", "6", "0") else 1
    if i >= len(texts):
        return None
    obj, rest = texts[i], texts[i + 1 :]
    actions = next((a.split() for full, a in IP_OBJECTS if full.startswith(obj)), None)
    if actions is None:
        return f"not on the read-only list: ip {obj}"
    if not rest:
        return None  # `ip addr`, `ip -s link`: show
    action = rest[0]
    full = next((a for a in actions if a.rstrip("!").startswith(action)), None)
    if full is None or action.startswith("-"):
        return f"not on the read-only list: ip {obj} {action}"
    return f"ip {obj} {action} changes the network" if full.endswith("!") else None


def _r_ifconfig(args: list[Word]) -> str | None:
    operands = [w for w in args if not w.text.startswith("-")]
    return "ifconfig with settings changes an interface" if len(operands) > 1 else None


def _r_ping(args: list[Word]) -> str | None:
    if opts("ping", args).has("-c"):
        return None
    return "ping without -c runs forever"


def _r_curl(args: list[Word]) -> str | None:
    o = opts("curl", args)
    if o.has("--engine"):
        return "curl --engine loads code"
    for form in o.values("-w", "--write-out"):
        text = known_text(form)
        if text is None:
            return f"curl -w {_shown(form)}: a format built at run time may hold %output{{...}}"
        if "%output{" in text:
            return "curl -w %output{...} writes a file"
    if any(v.text not in ("-", "/dev/null") for v in o.values("-o", "--output")):
        return "curl -o writes a file"
    if o.has("-O", "--remote-name", "--remote-name-all", "-J", "--output-dir"):
        return "curl -O writes a file"
    reason = _sends("curl", o, CURL_SENDS, ("-X", "--request"))
    if reason:
        return reason
    reason = _headers("curl", o, CURL_HEADER_OPTIONS, CURL_PRINT_ONLY)
    if reason:
        return reason
    if o.has("-K", "--config", "-Q", "--quote"):
        return "curl -K/-Q runs extra instructions"
    for option in ("-c", "--cookie-jar", "-D", "--dump-header", "--trace", "--trace-ascii"):
        if any(v.text not in ("-", "/dev/null") for v in o.values(option)):
            return f"curl {option} writes a file"
    if o.has("--stderr", "--libcurl", "--etag-save", "--hsts", "--alt-svc", "--ssl-sessions"):
        return "this curl option writes a file"
    return _curl_reach(o)


def _sends(
    tool: str, o: Opts, sends: tuple[tuple[tuple[str, ...], str], ...], method: tuple[str, ...]
) -> str | None:
    """Why `tool` sends a body or a method other than GET and HEAD, or None."""
    for names, reason in sends:
        if o.has(*names):
            return reason
    for word in o.values(*method):
        if word.text.upper() not in FETCH_METHODS or not word.literal:
            return f"{tool} {method[0]} {_shown(word)} changes a remote resource"
    return None


def _headers(
    tool: str, o: Opts, header: tuple[str, ...], print_only: tuple[str, ...]
) -> str | None:
    """Why what `tool` writes into the request's header lines may be more than one header:
    a line break in any word it sends (also one spelled in $'...'), a header value known only
    at run time or read from a file, or a header that gives a GET a body or another method."""
    for option in header:
        for value in o.values(option):
            why = _header_value(tool, option, value)
            if why:
                return f"{tool} {option} {_shown(value)}: {why}"
    shown = {id(v) for v in o.values(*print_only)}
    given = [v for _, v in (*o.short, *o.long) if v is not None] + o.operands
    for word in given:
        text = known_text(word) if id(word) not in shown else None
        if text is not None and ("\r" in text or "\n" in text):
            return f"{tool} {_shown(word)}: a line break in what it sends may start another request"
    return None


def _shown(word: Word) -> str:
    """A word as written, on one line and short enough for a verdict's reason."""
    text = word.raw.replace("\r", "\\r").replace("\n", "\\n")
    return text if len(text) <= 40 else text[:37] + "..."


def _header_value(tool: str, option: str, value: Word) -> str | None:
    text = known_text(value)
    if text is None:
        return "a header built at run time may hold a line break"
    if "\r" in text or "\n" in text:
        return "a line break in a header starts another one"
    if tool == "curl" and text.startswith("@"):
        return "reads header lines from a file"
    name = text.partition(":")[0].strip().lower()
    if option.lstrip("-") in ("H", "header", "proxy-header") and name in BODY_HEADERS:
        return "that header gives a GET a body or another method"
    return None


# curl takes a URL without a scheme whose host starts so for that protocol, else http.
_GUESSED = ("ftp.", "dict.", "ldap.", "imap.", "smtp.", "pop3.")


def _curl_reach(o: Opts) -> str | None:
    """Only http and https reads: any other protocol, proxy or socket sends what a local
    service may act on (`gopher://127.0.0.1:6379/_FLUSHALL`)."""
    if o.has("--unix-socket", "--abstract-unix-socket"):
        return "curl --unix-socket talks to a local service's socket"
    if o.has("--socks4", "--socks4a", "--socks5", "--socks5-hostname", "--preproxy"):
        return "curl through a SOCKS proxy sends more than an http request"
    if any(g.startswith(("expand", "variable")) for g in o.longs()):
        return "curl builds its URL at run time (--variable, --expand-url)"
    for proxy in o.values("-x", "--proxy"):
        if "://" in proxy.text and not _http(proxy.text) or not proxy.literal:
            return f"curl -x {proxy.raw}: only an http proxy is a read"
    default = [v.text.lower() for v in o.values("--proto-default")]
    for url in [*o.operands, *o.values("--url")]:
        if not _http(url.text):
            if "://" in url.text or not url.literal or url.text.lower().startswith(_GUESSED):
                return f"curl {url.raw}: only http and https URLs are reads"
            if default and default[-1] not in ("http", "https"):
                return f"curl --proto-default {default[-1]}: only http and https are reads"
    return None


def _ftp_short(url: str) -> bool:
    """Whether wget takes a URL without a scheme for ftp: `host:path` is ftp://host/path
    unless what follows the colon is a port (wget's rewrite_shorthand_url)."""
    m = re.search(r"[:/]", url)
    if m is None or m.start() == 0 or m.group() == "/":
        return False
    port = re.match(r"[0-9]+(?:/|\Z)", url[m.end() :])
    return port is None


def _http(url: str) -> bool:
    return url.lower().startswith(("http://", "https://"))


def _r_wget(args: list[Word]) -> str | None:
    o = opts("wget", args)
    for option in ("--use-askpass", "--config"):
        if o.has(option):
            return f"wget {option} runs a program or wgetrc commands"
    for option in ("--save-cookies", "--warc-file", "--hsts-file", "--rejected-log", "--xattr"):
        if o.has(option):
            return f"wget {option} writes a file"
    if o.has("-o", "--output-file", "-a", "--append-output", "-b", "--background"):
        return "wget -o and -b write a log file"
    if o.has("-e", "--execute"):
        return "wget -e runs wgetrc commands"
    if o.has("-r", "--recursive", "-m", "--mirror", "-p", "--page-requisites"):
        return "wget -r saves files"
    reason = _sends("wget", o, WGET_SENDS, ("--method",)) or _headers(
        "wget", o, WGET_HEADER_OPTIONS, ()
    )
    if reason:
        return reason
    if o.has("-i", "--input-file"):
        return "wget -i reads its URLs from a file: only http and https URLs are reads"
    for url in o.operands:
        if not _http(url.text) and ("://" in url.text or not url.literal or _ftp_short(url.text)):
            return f"wget {_shown(url)}: only http and https URLs are reads"
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
    # openssl's options are single words, matched whole.
    texts = texts_of(args)
    if not texts or texts[0] not in OPENSSL_READ:
        return f"not on the read-only list: openssl {' '.join(texts[:1])}".rstrip()
    if any(t in ("-engine", "-provider", "-provider-path", "-keygen_engine") for t in texts):
        return "openssl -engine/-provider loads code"
    hit = next((t for t in texts if t in OPENSSL_WRITES), None)
    if hit:
        return f"openssl {texts[0]} {hit} writes a file or sends more than a TLS handshake"
    if texts[0] == "req" and any(t in ("-new", "-newkey", "-x509") for t in texts):
        return "openssl req -new writes a key"
    return None


def _r_dns(args: list[Word]) -> str | None:
    """dig, host, nslookup: DNS questions, but only to port 53 and only over DNS itself."""
    for word in args:
        text = word.text
        port = text in ("-p", "-port") or text.startswith("-port=")
        if port or (text.startswith("-p") and text[2:].isdigit()):
            return "a DNS query to another port reaches whatever service listens there"
        if text.startswith(("+https", "+tls", "+http")):
            return "dig over https or tls sends more than a DNS question"
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
    **dict.fromkeys(("dig", "host", "nslookup"), _r_dns),
}
