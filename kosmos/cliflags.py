"""Flag types and flag groups that several `kosmos` commands share."""

from __future__ import annotations

import argparse
from pathlib import Path


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {text}")
    return value


def skills_dir_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--skills-dir",
        action="append",
        default=[],
        type=Path,
        metavar="DIR",
        help="look for skills here first (repeatable)",
    )


def llm_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("LLM")
    g.add_argument(
        "--provider", choices=["openai", "gemini"], help="LLM provider (default: openai)"
    )
    g.add_argument(
        "--base-url",
        help="API base of the provider, e.g. http://localhost:11434/v1 "
        "(gemini: https://generativelanguage.googleapis.com/v1beta)",
    )
    g.add_argument("--model", help="model name (default: CHEAP, or $AI_MODEL)")
    g.add_argument(
        "--protocol",
        choices=["tags", "json", "tools", "auto"],
        help="how the LLM answers each step: tags (seed 001, default), json, tools "
        "(function calling), auto (tools where the provider can, else tags)",
    )
    p.add_argument(
        "--config",
        type=Path,
        help="config file instead of ./kosmos.yaml and ~/.config/kosmos/config.yaml",
    )


def fleet_pace_flags(g: argparse.ArgumentParser | argparse._ArgumentGroup, *, what: str) -> None:
    """--forks, --llm-concurrency and --canary, as `kosmos run` and `kosmos tui` take them."""
    g.add_argument(
        "--forks",
        type=positive_int,
        default=10,
        metavar="N",
        help=f"{what} at once (default 10)",
    )
    g.add_argument(
        "--llm-concurrency",
        type=positive_int,
        metavar="N",
        help="LLM requests at once across hosts (default: --forks)",
    )
    g.add_argument(
        "--canary",
        metavar="HOST",
        help="run the LLM on this host first, then replay its run on the others",
    )
