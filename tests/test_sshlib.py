"""asyncssh is imported without starting a compiler, and offers what it offers imported plainly.

Each test runs a fresh interpreter with a PATH whose `gcc`, `cc` and `ld` only write their
names to a log: Python's `ctypes.util.find_library` runs them for a library that ldconfig's
cache does not list.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# What a front end imports before it talks SSH, and every module that imports asyncssh.
ENTRY_MODULES = ("kosmos.cli", "kosmos.tui.app", "kosmos.tui.fleet_runs", "kosmos.mcp.server")

OFFERED = """
import json, sys
from asyncssh.encryption import get_encryption_algs
from asyncssh.kex import get_kex_algs
from asyncssh.mac import get_mac_algs
print(json.dumps([[a.decode() for a in f()] for f in (get_kex_algs, get_mac_algs,
                                                      get_encryption_algs)]))
"""


def importers() -> list[str]:
    """kosmos's modules that import asyncssh (or kosmos's import of it), by name."""
    found = []
    for path in sorted((ROOT / "kosmos").rglob("*.py")):
        tree = ast.parse(path.read_text())
        names = [
            alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.Import)
            for alias in node.names
        ] + [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
        if any(name.split(".")[0] == "asyncssh" or name == "kosmos.hosts.sshlib" for name in names):
            module = path.relative_to(ROOT).with_suffix("").as_posix().replace("/", ".")
            found.append(module)
    return found


def fresh(code: str, tmp_path: Path, **env: str) -> tuple[str, list[str]]:
    """Run `code` in a fresh interpreter whose PATH starts with a logging gcc, cc and ld:
    (its output, the names of those that ran)."""
    tools = tmp_path / "tools"
    tools.mkdir(exist_ok=True)
    log = tmp_path / "ran.log"
    log.write_text("")
    for name in ("gcc", "cc", "ld"):
        tool = tools / name
        tool.write_text(f'#!/bin/sh\necho {name} >> "{log}"\nexit 1\n')
        tool.chmod(0o755)
    environment = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    environment.update(PATH=f"{tools}:{os.environ.get('PATH', '/usr/bin:/bin')}", **env)
    environment["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-c", code], env=environment, capture_output=True, text=True, check=True
    )
    return done.stdout, log.read_text().split()


def test_the_harness_sees_a_compiler_that_a_library_lookup_starts(tmp_path: Path) -> None:
    _, ran = fresh("import ctypes.util; ctypes.util.find_library('kosmosnosuchlib')", tmp_path)
    assert "gcc" in ran


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ldconfig's cache is glibc's")
def test_no_compiler_runs_when_kosmos_imports_asyncssh(tmp_path: Path) -> None:
    modules = [*importers(), *ENTRY_MODULES]
    assert "kosmos.hosts.ssh" in modules and "kosmos.hosts.sshconfig" in modules
    code = "import importlib\n" + "".join(f"importlib.import_module({m!r})\n" for m in modules)
    _, ran = fresh(code, tmp_path)
    assert ran == []


def test_asyncssh_offers_the_same_algorithms_imported_through_kosmos(tmp_path: Path) -> None:
    plain, _ = fresh(OFFERED, tmp_path)
    ours, ran = fresh("import kosmos.hosts.sshlib\n" + OFFERED, tmp_path)
    assert ran == []
    assert json.loads(ours) == json.loads(plain)
    kex, macs, _ = json.loads(ours)
    assert "curve25519-sha256" in kex and "hmac-sha2-256-etm@openssh.com" in macs


def test_with_ld_library_path_set_python_looks_a_library_up_its_own_way(tmp_path: Path) -> None:
    code = (
        "import ctypes.util, kosmos.hosts.sshlib as s\n"
        "print(s.cache_lookup() is None, ctypes.util.find_library.__module__)\n"
    )
    out, _ = fresh(code, tmp_path, LD_LIBRARY_PATH=str(tmp_path))
    assert out.split() == ["True", "ctypes.util"]
    out, _ = fresh(code, tmp_path)
    # Outside the import, the lookup is Python's again.
    assert out.split() == ["False", "ctypes.util"]


def test_every_importer_of_asyncssh_imports_kosmos_sshlib_before_it() -> None:
    # In the file's order, at the top or inside a function that imports asyncssh only when it
    # is needed; imports made for the type checker alone never run and are left out.
    for module in importers():
        if module == "kosmos.hosts.sshlib":
            continue
        tree = ast.parse((ROOT / (module.replace(".", "/") + ".py")).read_text())
        typing_only = {
            id(inner)
            for node in ast.walk(tree)
            if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
            for inner in ast.walk(node)
        }
        imports = sorted(
            (
                node
                for node in ast.walk(tree)
                if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in typing_only
            ),
            key=lambda node: node.lineno,
        )
        first = None
        for node in imports:
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
            )
            hit = [n for n in names if n.split(".")[0] == "asyncssh" or n == "kosmos.hosts.sshlib"]
            if hit:
                first = hit[0]
                break
        assert first == "kosmos.hosts.sshlib", module


def test_the_config_is_split_by_asyncssh_s_own_rules() -> None:
    """`SSHConfigFile` splits ssh_config's lines without importing asyncssh (the screen lists
    the hosts with it); the parser that reads the lines afterwards is asyncssh's, so the
    splitting rules must be its: the keywords that keep `=` as a word, and those whose
    arguments stay one string."""
    from kosmos.hosts.keywords import ClientConfig, HostConfig
    from kosmos.hosts.sshconfig import CONDITIONALS, NO_SPLIT

    for parser in (ClientConfig, HostConfig):
        assert set(CONDITIONALS) == set(parser._conditionals)
        assert set(NO_SPLIT) == set(parser._no_split)


def test_a_failing_cache_lookup_falls_back_to_pythons_whole_lookup(tmp_path: Path) -> None:
    # As under a Python whose private helper changed: kosmos's first call of it fails. asyncssh
    # still imports and offers what it offers plainly, and that lookup ran Python's whole way.
    changed = (
        "import ctypes.util\n"
        "own = ctypes.util._findSoname_ldconfig\n"
        "calls = []\n"
        "def _findSoname_ldconfig(name):\n"
        "    calls.append(name)\n"
        "    if len(calls) == 1:\n"
        "        raise TypeError('changed')\n"
        "    return own(name)\n"
        "ctypes.util._findSoname_ldconfig = _findSoname_ldconfig\n"
        "import kosmos.hosts.sshlib\n"
        "assert len(calls) > 1 and calls[0] == calls[1], calls\n"
    )
    plain, _ = fresh(OFFERED, tmp_path)
    ours, ran = fresh(changed + OFFERED, tmp_path)
    assert json.loads(ours) == json.loads(plain)
    assert "gcc" in ran


def test_cryptographys_deprecations_of_asyncssh_are_not_shown_but_others_are(
    tmp_path: Path,
) -> None:
    # `-W default` shows every warning once; kosmos's import of asyncssh shows none of
    # cryptography's notices about asyncssh, while the same category raised anywhere else is
    # still shown, and so is any other warning.
    code = (
        "import warnings\n"
        "import kosmos.hosts.ssh\n"
        "from cryptography.utils import CryptographyDeprecationWarning as C\n"
        "warnings.warn('raised by the operator', C)\n"
        "warnings.warn('another', UserWarning)\n"
    )
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-W", "default", "-c", code],
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    )
    shown = [line for line in done.stderr.splitlines() if "Warning:" in line]
    assert shown == [
        "<string>:4: CryptographyDeprecationWarning: raised by the operator",
        "<string>:5: UserWarning: another",
    ]
    # Without kosmos's filter, the same import shows cryptography's notices (when the installed
    # cryptography has any to give): the filter is what keeps them away.
    plain = subprocess.run(
        [sys.executable, "-W", "default", "-c", "import asyncssh"],
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    )
    from importlib import metadata

    if int(metadata.version("cryptography").split(".")[0]) >= 51:
        assert "CryptographyDeprecationWarning" in plain.stderr
