"""Whether anyone can answer `kosmos run`'s questions on standard input.

A terminal can. So can a pipe or file that holds answers (`printf 'y\\n' | kosmos run ...`).
Standard input at its end (`</dev/null`, cron, an empty file) cannot, and neither can a pipe
that stays open and silent (`sleep 1000 | kosmos run ...`, `ssh host kosmos run ...` without
`-t`): kosmos would wait for an answer forever. For those the run is non-interactive, as if
`--non-interactive` had been given.
"""

from __future__ import annotations

import os
import select
from typing import TextIO

# How long a pipe that is open but silent may take to send its first byte. Answers piped in
# are there at once; a writer still starting up gets this long.
GRACE = 1.0

NOTICE = (
    "kosmos: standard input is not a terminal and holds no answers, so the run is "
    "non-interactive; pass --non-interactive to say so"
)


def nobody_to_ask(stream: TextIO | None, *, grace: float = GRACE) -> bool:
    """True when `stream` (standard input) is no terminal and has nothing to answer with:
    closed, at its end, or silent for `grace` seconds. Nothing is consumed from it."""
    if stream is None:
        return True  # started with standard input closed (`<&-`)
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return False  # not a real file (an embedding program's object): ask as before
    if os.isatty(fd):
        return False
    try:
        ready, _, _ = select.select([fd], [], [], grace)
    except (OSError, ValueError):
        return False  # cannot tell: ask as before
    if not ready:
        return True
    peek = getattr(getattr(stream, "buffer", None), "peek", None)
    if peek is None:
        return False
    try:
        # Readable: one read returns at once, with data (kept in the buffer for the questions)
        # or with nothing at the end of input.
        return not peek(1)
    except OSError:
        return True
