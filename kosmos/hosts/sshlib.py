"""asyncssh, imported without starting a compiler.

When it is imported, asyncssh looks for two optional C libraries, liboqs (post-quantum key
exchange) and nettle (UMAC), with `ctypes.util.find_library`. For a library that ldconfig's
cache does not list, as liboqs is on most machines, Python then runs gcc and ld to ask the
linker: about 40 ms and two compiler processes at every start of kosmos that talks SSH, on
any machine with a compiler installed.

asyncssh loads what it finds by name (`dlopen`), which searches LD_LIBRARY_PATH, ldconfig's
cache and the system's default directories, and ldconfig caches those directories: a library
that only the linker finds could not be loaded by its name anyway. So, on a glibc system
without LD_LIBRARY_PATH, a lookup made while asyncssh is imported here asks ldconfig's cache
alone. Anywhere else Python's own lookup runs, as it always did, and so it does if the cache
lookup (a private helper of Python's) fails or answers in another shape.
benchmarks/private_patches.py measures what this saves.

Every kosmos module that imports asyncssh imports this module first (ruff's isort puts it in a
section of its own, before the third-party imports).

It is also where cryptography's deprecation notices about what asyncssh touches are kept from
the operator's terminal: cryptography 51 deprecates DSA, and asyncssh names DSA's types when it
is imported (and when it meets a DSA key), which printed some twenty lines of
`CryptographyDeprecationWarning` before every command that talks SSH. They are news for
asyncssh's maintainers, not for an operator. Only that category, and only when raised from
asyncssh's or cryptography's own modules, is ignored; every other warning is shown as before.
"""

from __future__ import annotations

import contextlib
import ctypes.util
import os
import sys
import warnings
from collections.abc import Callable, Iterator

from cryptography.utils import CryptographyDeprecationWarning

LD_CACHE = "/etc/ld.so.cache"


def cache_lookup() -> Callable[[str], str | None] | None:
    """ldconfig's cache lookup, where asking it alone finds what `dlopen` can load by name;
    else None (Python's whole lookup is kept)."""
    lookup = getattr(ctypes.util, "_findSoname_ldconfig", None)
    if not sys.platform.startswith("linux") or lookup is None:
        return None
    if os.environ.get("LD_LIBRARY_PATH") or not os.path.exists(LD_CACHE):
        return None
    return lookup  # type: ignore[no-any-return]


@contextlib.contextmanager
def cache_only() -> Iterator[None]:
    """While inside, `ctypes.util.find_library` asks ldconfig's cache alone (see above)."""
    lookup = cache_lookup()
    if lookup is None:
        yield
        return
    whole = ctypes.util.find_library

    def guarded(name: str) -> str | None:
        # `_findSoname_ldconfig` is Python's private helper: if a Python changes it, the lookup
        # is Python's whole one again rather than a failed import of asyncssh.
        try:
            found = lookup(name)
        except Exception:
            return whole(name)
        return found if found is None or isinstance(found, str) else whole(name)

    ctypes.util.find_library = guarded
    try:
        yield
    finally:
        ctypes.util.find_library = whole


# The modules a deprecation notice is told from: the ones asyncssh and cryptography are made of.
UPSTREAM = r"(asyncssh|cryptography)(\.|$)"


def quiet_upstream_deprecations() -> None:
    """Ignore cryptography's deprecation notices raised from asyncssh's or cryptography's own
    modules, for the rest of the process (see above); nothing else."""
    warnings.filterwarnings("ignore", category=CryptographyDeprecationWarning, module=UPSTREAM)


quiet_upstream_deprecations()
with cache_only():
    import asyncssh

__all__ = ["asyncssh"]
