"""What a command did, read from `strace -f -yy` of it: programs started, addresses reached.

`read_trace` turns a trace into a `Trace`: every program that started (a successful execve),
and every way the command reached past its own processes:

* a TCP connection whose first bytes are not an HTTP GET or HEAD request or a TLS handshake
  (an http or https read), or that carried nothing at all;
* a UDP datagram to anything but a DNS server (port 53);
* a bind to a port or a unix path, a listen;
* a netlink message other than a query (`RTM_GET*`, socket diagnostics): it changes the
  kernel's network state;
* a unix socket reached by path or abstract name (`services`): a local service (systemd,
  docker, a database), except the name-service caches every program asks (nscd).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Name-service sockets that glibc asks on its own (getpwuid, getaddrinfo): not a service the
# command chose.
NSS_SOCKETS = ("/var/run/nscd/socket", "/run/nscd/socket", "/run/systemd/userdb/")
_TRACED = ("execve", "connect", "bind", "listen", "sendto", "sendmsg", "sendmmsg", "write")
TRACED = ",".join((*_TRACED, "writev"))

_LINE = re.compile(r"(?P<pid>\d+) +(?P<call>\w+)\((?P<rest>.*)$")
_RESUMED = re.compile(r"(?P<pid>\d+) +<\.\.\. (?P<call>\w+) resumed>(?P<rest>.*)$")
_RESULT = re.compile(r"\) += (?P<result>-?\d+|\?)(?: (?P<errno>E[A-Z]+))?[^)]*$")
_FD = re.compile(r"^\d+<(?P<desc>(?:[^<>\[]|\[[^\]]*\]|<[^<>]*>)*)>")
_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
_INET = re.compile(r'sin_port=htons\((?P<port>\d+)\), sin_addr=inet_addr\("(?P<addr>[^"]+)"\)')
_INET6 = re.compile(r'sin6_port=htons\((?P<port>\d+)\).*?inet_pton\(AF_INET6, "(?P<addr>[^"]+)"')
_UNIX = re.compile(r'sun_path=(?P<abstract>@?)"(?P<path>(?:[^"\\]|\\.)*)"')
_PEER = re.compile(r"^(?P<kind>TCP|TCPv6|UDP|UDPv6):\[(?P<local>.*)->(?P<peer>.*)\]$")
_NLMSG = re.compile(r"nlmsg_type=(?P<type>[A-Za-z0-9_]+)")
_QUERY_NL = re.compile(
    r"RTM_GET\w*|SOCK_DIAG_BY_FAMILY|TCPDIAG_GETSOCK|DCCPDIAG_GETSOCK|0|NLMSG_\w+"
)
HTTP_READ = re.compile(r"(?:GET|HEAD) \S+(?: HTTP/|$)")
TLS_HELLO = "\\26\\3"  # a TLS handshake record, as strace prints it


@dataclass
class Trace:
    execs: list[list[str]] = field(default_factory=list)  # path first, then argv
    reaches: list[str] = field(default_factory=list)  # network traffic a read may not make
    services: list[str] = field(default_factory=list)  # unix sockets reached


def _calls(text: str) -> list[tuple[str, str, str]]:
    """(pid, call, arguments and result), with calls strace split around a switch joined."""
    pending: dict[str, tuple[str, str]] = {}
    out = []
    for line in text.splitlines():
        m = _RESUMED.match(line)
        if m and m["pid"] in pending:
            call, head = pending.pop(m["pid"])
            out.append((m["pid"], call, head + m["rest"]))
            continue
        m = _LINE.match(line)
        if not m:
            continue
        if m["rest"].endswith("<unfinished ...>"):
            pending[m["pid"]] = (m["call"], m["rest"].removesuffix("<unfinished ...>"))
        else:
            out.append((m["pid"], m["call"], m["rest"]))
    return out


def _address(rest: str) -> tuple[str, int] | None:
    m = _INET.search(rest) or _INET6.search(rest)
    return (m["addr"], int(m["port"])) if m else None


def read_trace(text: str) -> Trace:
    trace = Trace()
    first_bytes: dict[str, str] = {}  # a TCP connection (local->peer) -> what it sent first
    connected: list[tuple[str, int]] = []  # TCP connections opened
    for _pid, call, rest in _calls(text):
        result = _RESULT.search(rest)
        ok = result is not None and result["result"] not in ("-1", "?")
        fd = _FD.match(rest)
        desc = fd["desc"] if fd else ""
        unix = _UNIX.search(rest)
        address = _address(rest)
        if call == "execve":
            if ok:
                trace.execs.append(_STRING.findall(rest.split("], ")[0]))
        elif call == "listen":
            trace.reaches.append(f"listens on {desc}")
        elif call == "bind":
            if unix or (address and address[1] != 0):
                trace.reaches.append(f"binds {unix['path'] if unix else address}")
        elif unix:
            where = unix["abstract"] + unix["path"]
            if not where.startswith(NSS_SOCKETS):
                trace.services.append(where)
        elif call == "connect":
            if address and desc.startswith("TCP"):
                connected.append(address)
        elif desc.startswith("NETLINK"):
            bad = [t for t in _NLMSG.findall(rest) if not _QUERY_NL.fullmatch(t)]
            if bad:
                trace.reaches.append(f"sends netlink {bad[0]}")
        elif (peer := _PEER.match(desc)) and peer["kind"].startswith("TCP"):
            data = _STRING.search(rest)
            key = peer["local"] + "->" + peer["peer"]
            first = first_bytes.setdefault(key, data.group(1) if data else "")
            if not (HTTP_READ.match(first) or first.startswith(TLS_HELLO)):
                trace.reaches.append(f"sends {first[:40]!r} over TCP to {peer['peer']}")
        elif desc.startswith("UDP"):
            port = peer["peer"].rsplit(":", 1)[-1] if peer else str(address[1] if address else "")
            if port != "53":
                trace.reaches.append(f"sends UDP to {peer['peer'] if peer else address}")
    ports = {key.rsplit(":", 1)[-1] for key in first_bytes}
    for host, port in connected:
        if str(port) not in ports:
            trace.reaches.append(f"connects to {host} port {port} over TCP and sends no http read")
    trace.reaches = list(dict.fromkeys(trace.reaches))
    trace.services = list(dict.fromkeys(trace.services))
    return trace
