"""The shell judge's network: run as root inside a fresh network namespace (`unshare --net`).

Every IPv4 and IPv6 address is local here (an AnyIP route on `lo`), so whatever address a
command connects to, it reaches this process: a DNS server that answers every A question
with 192.0.2.1, and TCP listeners on the well-known ports and the ports given on the command
line, which answer an HTTP request with an empty 200 and close anything else. A client
therefore gets far enough to send what it would send to a real service; the judge sees
that in its trace. Nothing here records: the trace of the command is the record.

Prints `ready` on standard output once every socket is bound; ends when standard input closes.
"""

from __future__ import annotations

import contextlib
import resource
import selectors
import socket
import subprocess
import sys
import threading
import time

HIGH_PORTS = (
    1080, 1433, 2375, 2376, 2379, 3000, 3306, 4369, 5000, 5432, 5601, 5672, 5900, 6000,
    6379, 6443, 7001, 8000, 8080, 8081, 8086, 8088, 8443, 8500, 8888, 9000, 9090, 9092,
    9100, 9200, 9300, 9418, 10250, 11211, 15672, 27017,
)  # fmt: skip
ANSWER = bytes((192, 0, 2, 1))
HTTP_OK = b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
IDLE = 0.5  # a client that has sent nothing for this long is closed


def _network() -> None:
    for args in (
        ["link", "set", "lo", "up"],
        ["route", "add", "local", "0.0.0.0/0", "dev", "lo"],
        ["-6", "route", "add", "local", "::/0", "dev", "lo"],
    ):
        subprocess.run(["ip", *args], check=True)


def _dns_answer(query: bytes) -> bytes | None:
    """NOERROR with one A record for an A question, no records for any other question."""
    if len(query) < 12:
        return None
    i = 12
    while i < len(query) and query[i]:
        i += 1 + query[i]
    end = i + 5
    if end > len(query):
        return None
    qtype = int.from_bytes(query[i + 1 : i + 3], "big")
    question = query[12:end]
    header = query[:2] + b"\x81\x80\x00\x01"
    if qtype == 1:
        record = b"\xc0\x0c\x00\x01\x00\x01\x00\x00\x00\x3c\x00\x04" + ANSWER
        return header + b"\x00\x01\x00\x00\x00\x00" + question + record
    return header + b"\x00\x00\x00\x00\x00\x00" + question


def _dns(sock: socket.socket) -> None:
    while True:
        data, peer = sock.recvfrom(4096)
        answer = _dns_answer(data)
        if answer:
            with contextlib.suppress(OSError):
                sock.sendto(answer, peer)


def _listeners(ports: list[int]) -> list[socket.socket]:
    out = []
    for family, host in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
        for port in ports:
            sock = socket.socket(family, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind((host, port))
            sock.listen(64)
            sock.setblocking(False)
            out.append(sock)
    return out


def _serve(listeners: list[socket.socket]) -> None:
    sel = selectors.DefaultSelector()
    for sock in listeners:
        sel.register(sock, selectors.EVENT_READ, None)
    seen: dict[socket.socket, tuple[float, bytes]] = {}
    while True:
        for key, _ in sel.select(timeout=0.1):
            sock = key.fileobj
            assert isinstance(sock, socket.socket)
            if key.data is None:
                with contextlib.suppress(OSError):
                    conn, _ = sock.accept()
                    conn.setblocking(False)
                    sel.register(conn, selectors.EVENT_READ, "conn")
                    seen[conn] = (time.monotonic(), b"")
                continue
            data = b""
            with contextlib.suppress(OSError):
                data = sock.recv(65536)
            got = seen[sock][1] + data
            seen[sock] = (time.monotonic(), got)
            if data and not (got[:1].isalpha() and b"\r\n\r\n" in got) and len(got) < 65536:
                continue
            with contextlib.suppress(OSError):
                if got[:1].isalpha() and b"\r\n\r\n" in got:
                    sock.sendall(HTTP_OK)
            sel.unregister(sock)
            del seen[sock]
            sock.close()
        now = time.monotonic()
        for conn, (last, _) in list(seen.items()):
            if now - last > IDLE:
                sel.unregister(conn)
                del seen[conn]
                conn.close()


def main() -> None:
    _network()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 8192 if hard == resource.RLIM_INFINITY else min(hard, 8192)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, want), hard))
    ports = sorted({*range(1, 1025), *HIGH_PORTS, *(int(p) for p in sys.argv[1:])} - {53})
    for family, host in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
        udp = socket.socket(family, socket.SOCK_DGRAM)
        if family == socket.AF_INET6:
            udp.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        udp.bind((host, 53))
        threading.Thread(target=_dns, args=(udp,), daemon=True).start()
    listeners = _listeners([53, *ports])
    threading.Thread(target=_serve, args=(listeners,), daemon=True).start()
    print("ready", flush=True)
    sys.stdin.read()


if __name__ == "__main__":
    main()
