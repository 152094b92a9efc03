"""Driving `kosmos tui` in-process with Pilot: the app on real parts, waits on its state."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

from textual.app import App
from textual.css.query import NoMatches
from textual.pilot import Pilot
from textual.widget import Widget

from kosmos.config import check_settings
from kosmos.prompts import Prompts
from kosmos.runs.skills import skill_library
from kosmos.skills.discovery import SkillLibrary
from kosmos.tui.app import KosmosApp, TuiConfig
from kosmos.tui.focus import KeyRoutingApp
from kosmos.tui.widgets.command import CmdStep
from kosmos.tui.widgets.run_view import RunView

PROBE = """---
name: probe
description: A test skill that *probes* a host
params:
  - name: unit
    description: the unit to look at
    required: true
    max_length: 8
  - name: mode
    choices: [quick, full]
    default: quick
---
## What I do
Probe the host.
"""


def write_skill(root: Path, text: str = PROBE, folder: str = "probe") -> Path:
    path = root / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def make_app(
    base_url: str,
    home: Path,
    *,
    skill: str | None = "probe",
    params: dict[str, str] | None = None,
    transcript: Path | None = None,
    settings: dict[str, object] | None = None,
    hosts: list[str] | None = None,
    host: str = "local",
    bundled: bool = True,
) -> KosmosApp:
    """The app with the scripted LLM, skills from `home/skills`, transcripts in `home/runs`."""
    skills = home / "skills"
    if not skills.exists():
        write_skill(skills)
    cfg = check_settings(
        {
            "base_url": base_url,
            "llm_retries": 0,
            "transcript_dir": home / "runs",
            **(settings or {}),
        }
    )
    config = TuiConfig(
        settings=cfg,
        library=(
            skill_library(cfg, [skills], {}, home)
            if bundled
            else SkillLibrary([(skills, "--skills-dir")], cwd=home)
        ),
        prompts=Prompts.load(),
        hosts=hosts or ["local"],
        host=host,
        skill=skill,
        params=params or {},
        transcript=transcript,
    )
    return KosmosApp(config)


async def until(pilot: Pilot, check: Callable[[], object], what: str, limit: float = 20) -> None:
    """Let the app run until `check()` is true, and a key pressed then goes where the focus is
    (as an operator's key: kosmos.tui.focus); fail naming `what` if it never gets there."""
    deadline = time.monotonic() + limit
    app = pilot.app

    def ready() -> object:
        try:
            return check() and (not isinstance(app, KeyRoutingApp) or app.keys_settled)
        except NoMatches:  # not composed yet
            return False

    while not ready():
        if time.monotonic() > deadline:
            raise AssertionError(f"the app never got to: {what}")
        await pilot.pause(0.02)


def front_view(app: KosmosApp) -> RunView:
    view = app.main.front_view()
    assert view is not None, "no run tab in front"
    return view


def focused_in(app: App, widget: Widget) -> bool:
    """The focus is on `widget` or inside it (what the operator acts on now)."""
    focused = app.focused
    return focused is not None and widget in focused.ancestors_with_self


def awaiting_step(
    app: KosmosApp, step: int, run: Callable[[], RunView | None] | None = None
) -> Callable[[], bool]:
    """The run's step awaits approval and has the focus: the operator sees it asked (a key
    pressed before then is not for it). `run`: the run's view (default: the front tab's)."""

    def check() -> bool:
        view = run() if run is not None else app.main.front_view()
        widget = view.cmd_steps.get(step) if view else None
        return isinstance(widget, CmdStep) and widget.awaiting and focused_in(app, widget)

    return check


def finished(app: KosmosApp) -> Callable[[], bool]:
    def check() -> bool:
        view = app.main.front_view()
        return view is not None and view.result is not None

    return check


async def settle(pilot: Pilot) -> None:
    await pilot.pause()
    await asyncio.sleep(0)  # one more pass of the loop, for what the pause's callbacks started


def running_timers(app: App[object]) -> list[str]:
    """Every timer of the app's nodes (app, screens, widgets) that is neither stopped nor
    paused, as `Node#id:timer name`: what keeps waking the app up when nothing happens."""
    nodes = [app, *(n for s in app.screen_stack for n in s.walk_children(with_self=True))]
    found = []
    for node in nodes:
        for timer in list(node._timers):
            task = timer._task
            if task is not None and not task.done() and timer._active.is_set():
                found.append(f"{type(node).__name__}#{node.id}:{timer.name}")
    return found


def processes_running(command: str) -> list[int]:
    """PIDs of processes on this machine whose command line contains `command`."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if command in cmdline:
            found.append(int(proc.name))
    return found
