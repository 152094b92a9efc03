"""kosmos: run AI skills against servers."""

import sys

__version__ = "0.1.0"

# httpx's package imports its own command-line client when click, rich and pygments are
# installed (textual and the mcp SDK bring them), which costs a run tens of milliseconds at
# start-up for a program kosmos never runs. A None entry makes that one import fail at once,
# as httpx expects where they are missing: `httpx.main` is then a stub, and the rest of httpx
# is untouched. (No entry is made if something imported httpx's client first.)
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
