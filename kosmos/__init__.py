"""kosmos: run AI skills against servers."""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

__version__ = "0.1.0"


def _real(name: str) -> types.ModuleType:
    """The module `name` as its package would load it, in place of kosmos's stand-in."""
    import importlib
    import importlib.machinery
    import importlib.util

    parent, _, _ = name.rpartition(".")
    spec = importlib.machinery.PathFinder.find_spec(name, importlib.import_module(parent).__path__)
    if spec is None or spec.loader is None:
        raise ImportError(f"no module named {name!r}", name=name)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _stand_in(name: str, doc: str, **names: Callable[..., object]) -> None:
    """Put a module in place of another package's private module `name`, offering `names`.

    The guard against a changed upstream: any other name asked of it comes from the real
    module, which then takes the stand-in's place (the plain path). Nothing is put in place if
    the real module was imported first. benchmarks/private_patches.py measures the gain."""
    if name in sys.modules:
        return
    stand_in = types.ModuleType(name, doc)
    stand_in.__dict__.update(names)

    def from_the_real_one(attribute: str) -> object:
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        return getattr(_real(name), attribute)

    stand_in.__getattr__ = from_the_real_one  # type: ignore[method-assign]
    sys.modules[name] = stand_in


# httpx's package imports its own command-line client when click, rich and pygments are
# installed (textual and the mcp SDK bring them): some 80 modules that kosmos never runs.
_stand_in(
    "httpx._main",
    "httpx's command-line client, loaded only if it is run",
    main=lambda *args, **kwargs: _real("httpx._main").main(*args, **kwargs),
)

# pydantic hands every value a model validates to the plugins it finds (the `pydantic`
# entry-point group), and looking for them imports importlib.metadata and reads the metadata
# of every installed distribution. kosmos's models validate settings with API keys in them and
# take no plugins.
_stand_in("pydantic.plugin._loader", "kosmos's models take no plugins", get_plugins=lambda: ())
