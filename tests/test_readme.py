"""The README's two commands, as written, in a fresh clone, with only the system's Python."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.helpers import need

SYSTEM_PYTHON = Path("/usr/bin/python3")


def readme_commands() -> list[str]:
    """The README's first two ```sh blocks: install and try, then the test suite."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return [block.strip() for block in re.findall(r"```sh\n(.*?)```", text, re.S)[:2]]


def system_env(home: Path) -> dict[str, str]:
    """A login on a stock server: the system's Python first on PATH, no venv or keys of
    ours, no LLM listening (the first command needs none). pip's own settings stay: they say
    how this machine reaches the package index."""
    env = {k: v for k, v in os.environ.items() if k.startswith("PIP_")}
    env.update(
        PATH="/usr/bin:/bin:/usr/sbin:/sbin",
        HOME=str(home),
        LANG="C.UTF-8",
        AI_KOSMOS_MODEL_BASE_URL="http://127.0.0.1:9/v1",
    )
    return env


@pytest.mark.slow
def test_the_readme_commands_work_as_written_with_the_system_python(tmp_path: Path) -> None:
    if not SYSTEM_PYTHON.exists():
        pytest.skip("needs /usr/bin/python3, as on a stock Debian or Ubuntu server")
    need("git", "git")
    probe = subprocess.run(
        [str(SYSTEM_PYTHON), "-c", "import ensurepip"], capture_output=True, text=True
    )
    if probe.returncode != 0:
        pytest.skip("python3-venv is not installed (the README says to install it)")
    install, test = readme_commands()
    assert install.startswith("python3 -m venv .venv && . .venv/bin/activate && ")
    assert test.startswith("python3 -m venv .venv && . .venv/bin/activate && ")
    clone = tmp_path / "kosmos"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True, timeout=120)
    home = tmp_path / "home"
    home.mkdir()
    env = system_env(home)
    # The system's Python refuses `pip install` outside a venv (PEP 668 on Debian 12 and
    # Ubuntu 24.04); the first command must not need that.
    first = subprocess.run(
        ["bash", "-c", install],
        env=env,
        cwd=clone,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
    assert "DONE OK (this report is the recorded one, about the demo host;" in first.stdout
    assert (clone / ".venv/bin/kosmos").exists()
    # The second, in a new shell: only one test, so that the suite does not run itself.
    env["PYTEST_ADDOPTS"] = "-k test_python_dash_m_and_version -p no:cacheprovider"
    second = subprocess.run(
        ["bash", "-c", test],
        env=env,
        cwd=clone,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert second.returncode == 0, second.stdout[-2000:] + second.stderr[-2000:]
    assert re.search(r"\b1 passed\b", second.stdout), second.stdout[-2000:]


def test_ci_runs_the_readmes_test_command_word_for_word() -> None:
    _, test = readme_commands()
    ci = (ROOT / ".ci/run").read_text(encoding="utf-8")
    assert test in ci.splitlines()
    # ...from the lock, each file checked against its hash.
    assert "--require-hashes -r .ci/requirements.lock" in test


def test_the_lock_pins_every_dependency_within_pyprojects_bounds_with_hashes() -> None:
    import tomllib

    from packaging.requirements import Requirement

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    lock = (ROOT / ".ci/requirements.lock").read_text(encoding="utf-8")
    pinned = {
        name.lower().replace("_", "-"): version
        for name, version in re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", lock, re.M)
    }
    for line in project["dependencies"] + project["optional-dependencies"]["test"]:
        requirement = Requirement(line)
        name = requirement.name.lower().replace("_", "-")
        assert name in pinned, f"{name} is not in .ci/requirements.lock: run bash .ci/lock"
        assert requirement.specifier.contains(pinned[name]), f"{name}: run bash .ci/lock"
    entries = [e for e in re.split(r"\n(?=[A-Za-z0-9])", lock) if "==" in e]
    assert len(entries) == len(pinned)
    assert all("--hash=sha256:" in entry for entry in entries)
