"""kosmos's modules import downward only.

The TUI's app imports its screens and nothing imports it back; no front end imports another
(the TUI, `kosmos run`, the fleet, `kosmos chat`...: each builds on run assembly and the
shared terminal parts); nothing below the front ends imports one; and the package has no
circle of imports (a module that imports a package's submodule counts as importing that
submodule, not the whole package).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "kosmos"
TUI = PACKAGE / "tui"

# The front ends, each a command of its own. What else lives in kosmos.frontends is the
# terminal's shared parts (console, line and headless operators, renderers, the fleet view,
# the run request, driving a session under signals), which any line-mode front end may use.
FRONT_ENDS = {
    "kosmos.cli": "the command line",
    "kosmos.frontends.run": "kosmos run",
    "kosmos.frontends.fleet": "kosmos run on many hosts",
    "kosmos.frontends.chat": "kosmos chat",
    "kosmos.frontends.skills": "kosmos skills",
    "kosmos.frontends.hosts": "kosmos hosts",
    "kosmos.frontends.merge": "kosmos fleet merge",
    "kosmos.tui": "kosmos tui",
    "kosmos.mcp": "kosmos mcp",
}
ABOVE_THE_CORE = (
    "kosmos.__main__",
    "kosmos.cli",
    "kosmos.frontends",
    "kosmos.tui",
    "kosmos.mcp",
)


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def imported(path: Path) -> set[str]:
    """The kosmos modules `path` imports, at run time, lazily or for type checking alike."""
    name = module_name(path)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # `from .x import y`: relative to this module's package
                anchor = package[: len(package) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # `from pkg import sub` imports the submodule; `from mod import name`, the module.
            subs = [f"{base}.{alias.name}" for alias in node.names]
            names = [s for s in subs if s in MODULES] or [base]
        else:
            continue
        for target in names:
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target and target != name and target.startswith("kosmos"):
                found.add(target)
    return found


def graph(prefix: str = "kosmos") -> dict[str, set[str]]:
    return {
        name: {d for d in imported(path) if d.startswith(prefix)}
        for name, path in MODULES.items()
        if name.startswith(prefix)
    }


def circle(edges: dict[str, set[str]]) -> str | None:
    state: dict[str, str] = {}

    def visit(name: str, path: list[str]) -> str | None:
        state[name] = "open"
        for dep in sorted(edges.get(name, ())):
            if state.get(dep) == "open":
                return " -> ".join([*path[path.index(dep) :], dep])
            if dep not in state:
                found = visit(dep, [*path, dep])
                if found:
                    return found
        state[name] = "done"
        return None

    for name in sorted(edges):
        if name not in state:
            found = visit(name, [name])
            if found:
                return found
    return None


def front_end(module: str) -> str | None:
    for name in FRONT_ENDS:
        if module == name or module.startswith(name + "."):
            return name
    return None


def test_nothing_imports_the_app() -> None:
    importers = sorted(
        name for name, deps in graph("kosmos.tui").items() if "kosmos.tui.app" in deps
    )
    assert importers == []


def test_the_tui_modules_import_no_circle() -> None:
    assert circle(graph("kosmos.tui")) is None


def test_the_package_imports_no_circle() -> None:
    assert circle(graph()) is None


def test_a_circle_would_be_seen() -> None:
    assert circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == "a -> b -> c -> a"
    # The scan sees lazy imports: `kosmos.cli` reaches the front ends only inside functions.
    assert "kosmos.frontends.run" in graph()["kosmos.cli"]


def test_no_front_end_imports_another() -> None:
    crossing = sorted(
        f"{name} -> {dep}"
        for name, deps in graph().items()
        for dep in deps
        if front_end(name)
        and front_end(dep)
        and front_end(name) != front_end(dep)
        and front_end(name) != "kosmos.cli"  # the command line dispatches to each
    )
    assert crossing == []


def test_the_tui_imports_nothing_from_the_line_mode_front_ends() -> None:
    crossing = sorted(
        f"{name} -> {dep}"
        for name, deps in graph("kosmos.tui").items()
        for dep in imported(MODULES[name])
        if dep.startswith("kosmos.frontends")
    )
    assert crossing == []


def test_nothing_below_the_front_ends_imports_one() -> None:
    upward = sorted(
        f"{name} -> {dep}"
        for name, deps in graph().items()
        if not name.startswith(ABOVE_THE_CORE)
        for dep in deps
        if dep.startswith(ABOVE_THE_CORE)
    )
    assert upward == []
