"""kosmos: run AI skills against servers."""

import sys
import types

__version__ = "0.1.0"

# httpx's package imports its own command-line client when click, rich and pygments are
# installed (textual and the mcp SDK bring them), which costs a run tens of milliseconds at
# start-up for a program kosmos never runs. A None entry makes that one import fail at once,
# as httpx expects where they are missing: `httpx.main` is then a stub, and the rest of httpx
# is untouched. (No entry is made if something imported httpx's client first.)
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]

# pydantic looks for plugins (the `pydantic` entry-point group) when it builds a model's
# validator: it imports importlib.metadata, with email, zipfile and csv behind it, and reads
# the metadata of every installed distribution: some 20 ms of every run's start-up.
# kosmos's models take no plugins; a plugin sees every value they validate, settings with
# their API keys among them. This module stands in for pydantic's plugin loader and finds none.
# (It is not put in place if pydantic's loader was imported first.)
if "pydantic.plugin._loader" not in sys.modules:
    _no_plugins = types.ModuleType("pydantic.plugin._loader", "kosmos's models take no plugins")
    _no_plugins.get_plugins = lambda: ()  # type: ignore[attr-defined]
    sys.modules["pydantic.plugin._loader"] = _no_plugins
