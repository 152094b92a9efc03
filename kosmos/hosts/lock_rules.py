"""The kernel lock's rules as data: Landlock's access rights per ABI, and what seccomp refuses.

Numbers are the kernel's user-space ABI (include/uapi/linux/landlock.h, the syscall tables of
x86_64 and the generic table aarch64 uses, linux/sockios.h, linux/fs.h). tests/test_lock.py
checks the syscall numbers against the C headers where the machine has them.
"""

from __future__ import annotations

# -- Landlock ----------------------------------------------------------------------------------

# Filesystem rights, each with the ABI that brought it.
FS_RIGHTS: dict[str, tuple[int, int]] = {
    "execute": (1 << 0, 1),
    "write_file": (1 << 1, 1),
    "read_file": (1 << 2, 1),
    "read_dir": (1 << 3, 1),
    "remove_dir": (1 << 4, 1),
    "remove_file": (1 << 5, 1),
    "make_char": (1 << 6, 1),
    "make_dir": (1 << 7, 1),
    "make_reg": (1 << 8, 1),
    "make_sock": (1 << 9, 1),
    "make_fifo": (1 << 10, 1),
    "make_block": (1 << 11, 1),
    "make_sym": (1 << 12, 1),
    "refer": (1 << 13, 2),
    "truncate": (1 << 14, 3),
    "ioctl_dev": (1 << 15, 5),
}
# Network rights (ABI 4) and scopes (ABI 6).
NET_BIND_TCP = 1 << 0
NET_CONNECT_TCP = 1 << 1
NET_ABI = 4
SCOPE_ABSTRACT_UNIX = 1 << 0
SCOPE_SIGNAL = 1 << 1
SCOPE_ABI = 6
# The newest ABI whose rights kosmos knows; a newer kernel is asked for these (it accepts them).
KNOWN_ABI = 7

# Beneath `/`: read and execute. On /dev/null: the file rights a `>/dev/null` needs.
READ_RIGHTS = ("execute", "read_file", "read_dir")
DEV_NULL_RIGHTS = ("write_file", "read_file", "truncate")

# The size of struct landlock_ruleset_attr for an ABI: handled_access_net came with ABI 4,
# scoped with ABI 6.
RULESET_SIZES = ((SCOPE_ABI, 24), (NET_ABI, 16), (1, 8))

# -- seccomp -----------------------------------------------------------------------------------

# AUDIT_ARCH_* as the filter sees it in seccomp_data.arch; `uname -m` names.
ARCHES = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
ARCH_NAMES = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}
# x32 system calls on x86_64 carry this bit: refused, as every foreign ABI is.
X32_BIT = 0x40000000

# System calls by name, per arch. Calls aarch64 lacks (chmod, chown, ...) are absent there:
# its C library reaches the *at forms, which are listed.
SYSCALLS: dict[str, dict[str, int]] = {
    "x86_64": {
        "chmod": 90, "fchmod": 91, "fchmodat": 268, "fchmodat2": 452,
        "chown": 92, "fchown": 93, "lchown": 94, "fchownat": 260,
        "utime": 132, "utimes": 235, "utimensat": 280, "futimesat": 261,
        "setxattr": 188, "lsetxattr": 189, "fsetxattr": 190, "setxattrat": 463,
        "removexattr": 197, "lremovexattr": 198, "fremovexattr": 199, "removexattrat": 466,
        "file_setattr": 469, "truncate": 76,
        "socket": 41, "ioctl": 16, "syslog": 103,
        "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
        "reboot": 169, "kexec_load": 246, "kexec_file_load": 320,
        "init_module": 175, "finit_module": 313, "delete_module": 176,
        "swapon": 167, "swapoff": 168, "sethostname": 170, "setdomainname": 171,
        "settimeofday": 164, "clock_settime": 227, "clock_adjtime": 305, "adjtimex": 159,
        "acct": 163, "bpf": 321, "ioperm": 173, "iopl": 172,
        "msgsnd": 69, "msgrcv": 70, "semop": 65, "semtimedop": 220,
        "shmat": 30, "shmctl": 31, "msgctl": 71, "semctl": 66,
        "mq_unlink": 241, "mq_timedsend": 242, "mq_timedreceive": 243, "mq_open": 240,
        "prctl": 157,
    },
    "aarch64": {
        "fchmod": 52, "fchmodat": 53, "fchmodat2": 452,
        "fchown": 55, "fchownat": 54, "utimensat": 88,
        "setxattr": 5, "lsetxattr": 6, "fsetxattr": 7, "setxattrat": 463,
        "removexattr": 14, "lremovexattr": 15, "fremovexattr": 16, "removexattrat": 466,
        "file_setattr": 469, "truncate": 45,
        "socket": 198, "ioctl": 29, "syslog": 116,
        "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
        "reboot": 142, "kexec_load": 104, "kexec_file_load": 294,
        "init_module": 105, "finit_module": 273, "delete_module": 106,
        "swapon": 224, "swapoff": 225, "sethostname": 161, "setdomainname": 162,
        "settimeofday": 170, "clock_settime": 112, "clock_adjtime": 266, "adjtimex": 171,
        "acct": 89, "bpf": 280,
        "msgsnd": 189, "msgrcv": 188, "semop": 193, "semtimedop": 192,
        "shmat": 196, "shmctl": 195, "msgctl": 187, "semctl": 191,
        "mq_unlink": 181, "mq_timedsend": 182, "mq_timedreceive": 183, "mq_open": 180,
        "prctl": 167,
    },
}  # fmt: skip

# Refused outright, by group (the README names the groups).
DENIED: dict[str, tuple[str, ...]] = {
    # Metadata, which Landlock does not hold.
    "metadata": (
        "chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown", "lchown", "fchownat",
        "utime", "utimes", "utimensat", "futimesat",
        "setxattr", "lsetxattr", "fsetxattr", "setxattrat",
        "removexattr", "lremovexattr", "fremovexattr", "removexattrat", "file_setattr",
    ),
    # io_uring reaches files and sockets without the system calls this filter sees.
    "io_uring": ("io_uring_setup", "io_uring_enter", "io_uring_register"),
    # What root changes with a system call and no file: the kernel, clocks, names, swap, BPF.
    "system": (
        "reboot", "kexec_load", "kexec_file_load", "init_module", "finit_module",
        "delete_module", "swapon", "swapoff", "sethostname", "setdomainname", "settimeofday",
        "clock_settime", "clock_adjtime", "adjtimex", "acct", "bpf", "ioperm", "iopl",
    ),
    # System V and POSIX message queues, semaphores and shared memory of other processes.
    "ipc": (
        "msgsnd", "msgrcv", "semop", "semtimedop", "mq_unlink", "mq_timedsend",
        "mq_timedreceive",
    ),
}  # fmt: skip
# Landlock before ABI 3 does not hold truncate(2) on a path.
DENIED_BEFORE_TRUNCATE_RIGHT = ("truncate",)

# socket(): the families a command may open. Unix and netlink only with `sockets`.
AF_UNIX = 1
AF_INET = 2
AF_INET6 = 10
AF_NETLINK = 16
SOCK_STREAM = 1
SOCK_DGRAM = 2
SOCK_TYPE_MASK = 0xF
# A stream socket over IP is TCP (protocol 0 or IPPROTO_TCP): Landlock's network rules hold
# TCP only, so SCTP and MPTCP streams are refused.
TCP_PROTOCOLS = (0, 6)

# ioctl() requests that change a file's flags or the system (a file's own ioctls are not
# covered by Landlock; a device's are, from ABI 5).
DENIED_IOCTLS = (
    0x40086602,  # FS_IOC_SETFLAGS (chattr)
    0x40046602,  # FS_IOC32_SETFLAGS
    0x401C5820,  # FS_IOC_FSSETXATTR (project ids, flags)
    0x40087602,  # FS_IOC_SETVERSION
    0x40047602,  # FS_IOC32_SETVERSION
    0x40806685,  # FS_IOC_ENABLE_VERITY
    0x800C6613,  # FS_IOC_SET_ENCRYPTION_POLICY
    0x41009432,  # FS_IOC_SETFSLABEL
    0xC0045877,  # FIFREEZE
    0xC0045878,  # FITHAW
    0xC0185879,  # FITRIM
)
# Socket ioctls 0x8900-0x89ff set interfaces, routes, ARP, bridges and bonds as root. Only the
# ones that read are let through.
SOCKET_IOCTLS = (0x8900, 0x89FF)
SOCKET_IOCTL_READS = (
    0x8901, 0x8902, 0x8903, 0x8904, 0x8905, 0x8906, 0x8907,  # owner, process group, stamps
    0x8910, 0x8912, 0x8913, 0x8915, 0x8917, 0x8919, 0x891B, 0x891D, 0x891F, 0x8921,
    0x8925, 0x8927, 0x8929, 0x8933, 0x8935, 0x8938, 0x8940, 0x8942,  # SIOCGIF*
    0x8947, 0x8948,  # SIOCGMIIPHY, SIOCGMIIREG
    0x894C,  # SIOCGSKNS
    0x8954, 0x8961, 0x8970,  # SIOCGARP, SIOCGRARP, SIOCGIFMAP
    0x89B1,  # SIOCGHWTSTAMP
)  # fmt: skip
# Wireless extensions (0x8b00-0x8bff) set radios and keys: refused as a block.
WIRELESS_IOCTLS = (0x8B00, 0x8BFF)

# syslog(): reading the kernel log is allowed (READ_ALL, SIZE_UNREAD, SIZE_BUFFER); clearing
# it, consuming it or changing the console level is not.
SYSLOG_READS = (3, 9, 10)

# shmat() with SHM_RDONLY maps another process's shared memory read-only; without it, writable.
SHM_RDONLY = 0o10000
# *ctl() commands that only read: IPC_STAT, IPC_INFO and each kind's STAT/INFO/GET forms.
# The command may carry IPC_64 (0x100); the filter masks it off.
IPC_CMD_MASK = 0xFF
IPC_READS = {
    "shmctl": (2, 3, 13, 14, 15),
    "msgctl": (2, 3, 11, 12, 13),
    "semctl": (2, 3, 11, 12, 13, 14, 15, 18, 19, 20),
}
# mq_open() only to read an existing queue (O_RDONLY, without O_CREAT): O_ACCMODE | O_CREAT.
MQ_OPEN_WRITES = 0o3 | 0o100

EPERM = 1
