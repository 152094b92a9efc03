"""What `kosmos --version` says: kosmos's version, the Python it runs on and the versions of the
libraries a bug report needs."""

from __future__ import annotations

import platform
import sys

from kosmos import __version__

# The libraries whose releases change what kosmos does, in the order a report lists them.
KEY_DEPENDENCIES = ("asyncssh", "cryptography", "httpx", "mcp", "pydantic", "textual")


def version_text() -> str:
    """Three lines: kosmos, the Python and its platform, the key dependencies' versions."""
    from importlib import metadata  # only here: reading distributions' metadata is slow

    def installed(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "not installed"

    python = f"{platform.python_implementation()} {platform.python_version()}"
    where = f"{platform.system()} {platform.machine()}"
    libraries = ", ".join(f"{name} {installed(name)}" for name in KEY_DEPENDENCIES)
    return f"kosmos {__version__}\n{python} on {where} ({sys.executable})\n{libraries}"
