"""Where the files that ship with kosmos (prompts.json, bundled skills) are found."""

from __future__ import annotations

from pathlib import Path


def data_dir() -> Path:
    """`kosmos/data` in an installed wheel; the repository root in a source checkout."""
    package = Path(__file__).resolve().parent
    installed = package / "data"
    if (installed / "prompts.json").is_file():
        return installed
    return package.parent


def prompts_path() -> Path:
    return data_dir() / "prompts.json"


def bundled_skills_dir() -> Path:
    return data_dir() / "skills"


def bundled_recording(skill: str) -> Path:
    """The transcript shipped for a bundled skill, replayed by `--replay bundled`."""
    return data_dir() / "recordings" / f"{skill}.jsonl"
