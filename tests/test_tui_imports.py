"""The TUI's modules import downward only: the app imports its screens, nothing imports it back."""

from __future__ import annotations

import ast
from pathlib import Path

TUI = Path(__file__).resolve().parent.parent / "kosmos" / "tui"


def module_name(path: Path) -> str:
    parts = path.relative_to(TUI.parent.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def tui_imports(path: Path) -> set[str]:
    """The kosmos.tui modules `path` imports, at run time or for type checking alike."""
    package = module_name(path).split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # `from .x import y`: relative to this module's package
                anchor = package[: len(package) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        else:
            continue
        found.update(n for n in names if n.startswith("kosmos.tui"))
    return found


def graph() -> dict[str, set[str]]:
    modules = {module_name(p): p for p in TUI.rglob("*.py")}
    return {name: tui_imports(path) & modules.keys() - {name} for name, path in modules.items()}


def test_nothing_imports_the_app() -> None:
    importers = sorted(name for name, deps in graph().items() if "kosmos.tui.app" in deps)
    assert importers == []


def test_the_tui_modules_import_no_circle() -> None:
    edges = graph()
    state: dict[str, str] = {}

    def visit(name: str, path: list[str]) -> None:
        state[name] = "open"
        for dep in sorted(edges[name]):
            if state.get(dep) == "open":
                raise AssertionError(" -> ".join([*path[path.index(dep) :], dep]))
            if dep not in state:
                visit(dep, [*path, dep])
        state[name] = "done"

    for name in sorted(edges):
        if name not in state:
            visit(name, [name])
