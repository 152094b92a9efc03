"""Which OS a host runs, as the memory prompt's Target OS block and `kosmos hosts` name it.

kosmos-panel learns it from `uname -s` on connect; so does kosmos (`engine.envelope.target_os`,
once per host and run). A Windows host has no `uname`: its shell's complaint says so.
"""

from __future__ import annotations

import re

# (what `uname -s` starts with, the OS's name); first match wins, any case.
KERNELS = (
    ("Linux", "Linux"),
    ("Darwin", "macOS"),
    ("FreeBSD", "FreeBSD"),
    ("Windows", "Windows"),
    ("MINGW", "Windows"),
    ("MSYS", "Windows"),
    ("CYGWIN", "Windows"),
)
# cmd.exe and PowerShell both say the command "is not recognized".
_NO_UNAME = re.compile(r"is not recognized|CommandNotFoundException", re.IGNORECASE)
_KERNEL = re.compile(r"^[A-Za-z][\w.-]{0,31}$")


def os_name(uname: str) -> str | None:
    """The OS behind `uname -s` output: Linux, macOS, FreeBSD, Windows, another kernel's own
    name (OpenBSD, SunOS); None when the output names none."""
    text = uname.strip()
    if _NO_UNAME.search(text):
        return "Windows"
    first = text.split("\n", 1)[0].strip()
    for prefix, name in KERNELS:
        if first.lower().startswith(prefix.lower()):
            return name
    return first if _KERNEL.match(first) else None
