"""Paths as the TUI shows them."""

from __future__ import annotations

from pathlib import Path

import pytest

from kosmos.tui.paths import shown_path


def test_nearest_base_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    project = home / "proj"
    project.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    # The working folder above the home folder: the home folder is nearer.
    monkeypatch.chdir(tmp_path)
    assert shown_path(home / ".local/state/x.jsonl") == "~/.local/state/x.jsonl"
    # The working folder inside the home folder: relative to it.
    monkeypatch.chdir(project)
    assert shown_path(project / "skills/a/SKILL.md") == "skills/a/SKILL.md"
    assert shown_path(home / ".local/state/x.jsonl") == "~/.local/state/x.jsonl"
    assert shown_path("/elsewhere/x") == "/elsewhere/x"
