"""What a skill needed and did not get, so that a run ending with [DONE] ends honestly.

The LLM is told "command refused" (seed protocol) and often finishes with [DONE] at once:
under `--policy read-only` headless, a skill whose one step is a write then ended `done`,
exit 0, having done nothing. A run whose [DONE] comes after a refused command, [GET-FILE] or
memory write, or after the skill's own script could not run (exit 126 or 127), with nothing
run on the host in its place since, ends instead with what was not done and how to allow it:
`needs_input` (exit 4) where a person could have said yes (headless), `failed` (exit 1)
otherwise. The LLM's own report stays in its [DONE] directive.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kosmos.engine.fault import preview
from kosmos.engine.skill_script import SkillFiles
from kosmos.errors import InputNeeded, KosmosError, RunFailed
from kosmos.events import CommandDecision, CommandFinished, Event, FileRead, MemoryAction

# What a shell answers when it cannot run a file: not executable, or not found.
CANNOT_RUN = frozenset({126, 127})
# The most a run's end names of what it lacked; the transcript holds them all.
SHOWN = 3


@dataclass(frozen=True)
class Unmet:
    """One thing the skill asked for that did not happen."""

    what: str  # the command line, or the directive, as shown to the operator
    why: str  # a few words: why it did not run
    refused: bool = True  # False: it ran, and the skill's script could not start
    dangerous: bool = False
    command: bool = True  # False: a [GET-FILE] or a memory write


class Shortfall:
    """Watches a run's events for refusals and a script that could not run; `ending` says
    how a [DONE] reached with some of them still unanswered ends the run."""

    def __init__(
        self,
        *,
        policy: str,
        non_interactive: bool,
        scripts: Callable[[], SkillFiles | None] = lambda: None,
    ) -> None:
        self.policy = policy
        self.non_interactive = non_interactive
        self.scripts = scripts
        self.unmet: list[Unmet] = []

    def observe(self, event: Event) -> None:
        """Feed every event of the run, in order."""
        if isinstance(event, CommandDecision) and event.decision == "refused":
            dangerous = event.risk == "dangerous"
            self.unmet.append(Unmet(event.command, _clause(event.reason), dangerous=dangerous))
        elif isinstance(event, FileRead | MemoryAction) and event.status == "refused":
            what = (
                f"[GET-FILE] {event.path}"
                if isinstance(event, FileRead)
                else f"{event.action} memory {event.name}"
            )
            self.unmet.append(Unmet(what, _clause(event.reason), command=False))
        elif isinstance(event, CommandFinished):
            # Something ran on the host after the refusals: the skill went another way.
            self.unmet.clear()
            files = self.scripts()
            if event.exit_code in CANNOT_RUN and files and files.script(event.command):
                why = f"exit {event.exit_code}: the skill's script could not run"
                self.unmet.append(Unmet(event.command, why, refused=False))
        elif isinstance(event, FileRead) and event.status == "done":
            self.unmet.clear()

    def seed(self, events: Iterable[Event]) -> None:
        """What a resumed run recorded before: a refusal there still counts."""
        for event in events:
            self.observe(event)

    def ending(self) -> KosmosError | None:
        """How the run ends instead of `done`; None when nothing it needed is missing."""
        if not self.unmet:
            return None
        n = len(self.unmet)
        items = "; ".join(f"{preview(u.what)} ({u.why})" for u in self.unmet[:SHOWN])
        if n > SHOWN:
            items += f"; and {n - SHOWN} more"
        refused = [u for u in self.unmet if u.refused]
        if not refused:
            return RunFailed(
                f"the skill's script could not run and nothing ran in its place: {items}; "
                "check that its interpreter is on the host, or use another skill"
            )
        them = "it" if n == 1 else "them"
        noun = "command" if all(u.command for u in self.unmet) else "step"
        done = "refused" if len(refused) == n else "not run"
        head = (
            f"{n} {noun}{'' if n == 1 else 's'} the skill needed {'was' if n == 1 else 'were'} "
            f"{done} and nothing ran in {'its' if n == 1 else 'their'} place: {items}"
        )
        if not self.non_interactive:
            if any(u.dangerous for u in refused):
                return RunFailed(f"{head}; a dangerous command runs once the host's name is typed")
            return RunFailed(f"{head}; allow {them} when asked, or run with --policy auto")
        if any(u.dangerous for u in refused):
            hint = "pass --allow-dangerous, or run at a terminal to be asked"
        elif self.policy in ("read-only", "locked"):
            hint = f"run at a terminal to be asked, or with --policy auto to run {them} unasked"
        else:
            hint = "run at a terminal to be asked"
        return InputNeeded(f"{head}; {hint}")


def _clause(reason: str) -> str:
    """The first sentence of what the LLM was told (`reason`): why it was refused."""
    first = re.split(r"\.\s+(?=[A-Z])", reason, maxsplit=1)[0].strip().rstrip(".")
    return preview(first, 240) or "refused"
