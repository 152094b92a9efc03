"""The lock's seccomp filter, assembled as classic BPF for one arch.

The filter answers EPERM, never kills: a refused call fails as the shell reports it (`chmod:
changing permissions of 'f': Operation not permitted`). Every call of another arch (i386 or
x32 on x86_64, arm32 on aarch64) is refused, so a foreign binary cannot step around it.
"""

from __future__ import annotations

import functools
import struct
from dataclasses import dataclass

from kosmos.hosts import lock_rules as rules

# Classic BPF opcodes (linux/bpf_common.h) and seccomp return values (linux/seccomp.h).
LD_W_ABS = 0x20
ALU_AND_K = 0x54
JEQ_K = 0x15
JGE_K = 0x35
JGT_K = 0x25
RET_K = 0x06
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000

# Offsets in struct seccomp_data: nr, arch, then args[] (the low half of each, little-endian).
NR, ARCH = 0, 4


def _arg(index: int) -> int:
    return 16 + 8 * index


@dataclass
class _Op:
    code: int
    k: int
    true: str | int = 0  # a label, or a relative jump
    false: str | int = 0
    label: str | None = None


class _Program:
    """A list of instructions whose jumps name labels; `assemble` resolves them."""

    def __init__(self) -> None:
        self.ops: list[_Op] = []
        self._next_label: str | None = None

    def label(self, name: str) -> None:
        self._next_label = name

    def add(self, code: int, k: int, true: str | int = 0, false: str | int = 0) -> None:
        self.ops.append(_Op(code, k, true, false, self._next_label))
        self._next_label = None

    def load(self, offset: int) -> None:
        self.add(LD_W_ABS, offset)

    def ret(self, value: int) -> None:
        self.add(RET_K, value)

    def assemble(self) -> bytes:
        where = {op.label: i for i, op in enumerate(self.ops) if op.label}
        out = bytearray()
        for i, op in enumerate(self.ops):
            jumps = []
            for target in (op.true, op.false):
                jump = where[target] - i - 1 if isinstance(target, str) else target
                if not 0 <= jump <= 255:
                    raise ValueError(f"a BPF jump of {jump} from instruction {i}")
                jumps.append(jump)
            out += struct.pack("<HBBI", op.code, jumps[0], jumps[1], op.k)
        return bytes(out)


@functools.cache
def build_filter(arch: str, *, sockets: bool, truncate: bool) -> bytes:
    """The filter for `arch` (`x86_64`, `aarch64`): struct sock_filter[] as bytes.

    Built once per set of arguments (eight at most) and shared: a fleet's every host probes
    with one and runs its commands under another, and building one takes milliseconds.

    `sockets`: unix and netlink sockets may be opened. `truncate`: refuse truncate(2) too, for
    a Landlock ABI before 3, which does not hold it.
    """
    calls = rules.SYSCALLS[arch]
    p = _Program()
    p.load(ARCH)
    p.add(JEQ_K, rules.ARCHES[arch], 1, 0)
    p.ret(RET_ERRNO | rules.EPERM)
    p.load(NR)
    if arch == "x86_64":
        p.add(JGE_K, rules.X32_BIT, "deny", 0)
    denied = [name for group in rules.DENIED.values() for name in group]
    if truncate:
        denied += rules.DENIED_BEFORE_TRUNCATE_RIGHT
    for name in dict.fromkeys(denied):
        if name in calls:  # aarch64 has no chmod, ioperm, ...
            p.add(JEQ_K, calls[name], "deny", 0)
    checked = {
        "socket": "socket",
        "ioctl": "ioctl",
        "syslog": "syslog",
        "shmat": "shmat",
        "shmctl": "shmctl",
        "msgctl": "msgctl",
        "semctl": "semctl",
        "mq_open": "mq_open",
    }
    for name, label in checked.items():
        p.add(JEQ_K, calls[name], label, 0)
    p.ret(RET_ALLOW)

    # socket(domain, type, protocol): IP for TCP and UDP; unix and netlink only with `sockets`.
    p.label("socket")
    p.load(_arg(0))
    p.add(JEQ_K, rules.AF_INET, "inet", 0)
    p.add(JEQ_K, rules.AF_INET6, "inet", 0)
    if sockets:
        p.add(JEQ_K, rules.AF_UNIX, "allow", 0)
        p.add(JEQ_K, rules.AF_NETLINK, "allow", "deny")
    else:
        p.ret(RET_ERRNO | rules.EPERM)
    p.label("inet")
    p.load(_arg(1))
    p.add(ALU_AND_K, rules.SOCK_TYPE_MASK)
    p.add(JEQ_K, rules.SOCK_DGRAM, "allow", 0)
    p.add(JEQ_K, rules.SOCK_STREAM, 0, "deny")
    p.load(_arg(2))
    p.add(JEQ_K, rules.TCP_PROTOCOLS[0], "allow", 0)
    p.add(JEQ_K, rules.TCP_PROTOCOLS[1], "allow", "deny")

    # ioctl(fd, request, ...): file flags, freezing, and the socket ioctls that set.
    p.label("ioctl")
    p.load(_arg(1))
    for request in rules.DENIED_IOCTLS:
        p.add(JEQ_K, request, "deny", 0)
    low, high = rules.WIRELESS_IOCTLS
    p.add(JGE_K, low, 0, "sockio")
    p.add(JGT_K, high, "allow", "deny")
    p.label("sockio")
    low, high = rules.SOCKET_IOCTLS
    p.add(JGE_K, low, 0, "allow")
    p.add(JGT_K, high, "allow", 0)
    for request in rules.SOCKET_IOCTL_READS:
        p.add(JEQ_K, request, "allow", 0)
    p.ret(RET_ERRNO | rules.EPERM)

    p.label("syslog")
    p.load(_arg(0))
    for action in rules.SYSLOG_READS:
        p.add(JEQ_K, action, "allow", 0)
    p.ret(RET_ERRNO | rules.EPERM)

    p.label("shmat")
    p.load(_arg(2))
    p.add(ALU_AND_K, rules.SHM_RDONLY)
    p.add(JEQ_K, 0, "deny", "allow")

    for name, reads in rules.IPC_READS.items():
        p.label(name)
        p.load(_arg(1))
        p.add(ALU_AND_K, rules.IPC_CMD_MASK)
        for cmd in reads:
            p.add(JEQ_K, cmd, "allow", 0)
        p.ret(RET_ERRNO | rules.EPERM)

    p.label("mq_open")
    p.load(_arg(1))
    p.add(ALU_AND_K, rules.MQ_OPEN_WRITES)
    p.add(JEQ_K, 0, "allow", "deny")

    p.label("deny")
    p.ret(RET_ERRNO | rules.EPERM)
    p.label("allow")
    p.ret(RET_ALLOW)
    return p.assemble()
