"""What a run learns before step 1: the host's knowledge and OS, the skill's folder, the memory.

Each part goes into the system prompt (docs/protocol.md, The system prompt; --memory adds the
Target OS block and the memory index) and is announced by an event.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from kosmos.engine.envelope import target_os
from kosmos.engine.guard import neutralise
from kosmos.engine.skill_script import SkillFiles
from kosmos.errors import KosmosError
from kosmos.events import Event, KnowledgeLoaded, Notice, SkillFolderReady
from kosmos.hosts.knowledge import KnowledgeTimeout, load_knowledge
from kosmos.hosts.lock import LockStatus, host_lock, learn_lock
from kosmos.hosts.osname import os_name
from kosmos.hosts.runner import FileUnreadable, Runner
from kosmos.memory import MemoryRefused, MemoryStore, index_text
from kosmos.prompts import Prompts
from kosmos.safety import Redactor
from kosmos.skills.folder import place_folder
from kosmos.skills.model import Skill

Emit = Callable[[Event], None]


async def detect_os(runner: Runner, *, timeout: float) -> tuple[str | None, str | None]:
    """(what `uname -s` said, the OS it names); (None, None) when the host would not say."""
    try:
        kernel = await target_os(runner, timeout=timeout)
    except (KosmosError, TimeoutError, OSError):
        return None, None
    return kernel, os_name(kernel)


@dataclass
class Learnt:
    """What a run learnt before run_started, and what stopped it learning."""

    knowledge: str | None = None
    events: list[Event] = field(default_factory=list)  # to emit once run_started is out
    failed: Exception | None = None  # ends the run, once it has started
    kernel: str | None = None
    os_name: str | None = None
    lock: LockStatus | None = None


async def learn(
    runner: Runner, *, fresh: bool, timeout: float, redactor: Redactor, locking: bool = False
) -> Learnt:
    """A fresh run's knowledge file, then the host's OS. Over SSH the knowledge read asks
    for the OS too, so the two cost one round trip; a resumed run reads no knowledge.

    `locking`: the policy runs commands in the kernel lock unasked; a runner that starts
    them from a process of its own (`local`'s spawner) starts it while the host is learnt.
    """
    learnt = Learnt()
    ready = getattr(runner, "ready_lock", None) if locking else None
    if ready is not None:
        ready()
    if fresh:
        try:
            learnt.knowledge = await knowledge(
                runner, timeout=timeout, redactor=redactor, emit=learnt.events.append
            )
        except Exception as e:  # raised again inside the run, after run_started
            learnt.failed = e
            return learnt
    # Over SSH the knowledge read learnt the lock and the OS already; otherwise one command
    # asks for both.
    learnt.lock = await learn_lock(runner, timeout=timeout)
    learnt.kernel, learnt.os_name = await detect_os(runner, timeout=timeout)
    return learnt


def lock_notices(runner: Runner, status: LockStatus | None, policy: str) -> list[Notice]:
    """One line for the operator where the kernel lock is wanted and cannot be had."""
    kit = host_lock(runner)
    if status is None or status.held or kit is None:
        return []
    if policy == "locked":
        return [
            Notice(
                message=f"policy locked: the kernel lock on {runner.name} is "
                f"{status.describe()}; every command there needs a person's yes"
            )
        ]
    if kit.config.required:
        return [
            Notice(
                message=f"the kernel lock is required on {runner.name} and is "
                f"{status.describe()}; nothing runs there without a person's yes"
            )
        ]
    return []


async def knowledge(
    runner: Runner, *, timeout: float, redactor: Redactor, emit: Emit
) -> str | None:
    """The host's knowledge file, redacted and fenced (it is data from the host), or None."""

    def skipped(error: FileUnreadable) -> None:
        emit(Notice(message=f"knowledge file skipped: {error}"))

    try:
        found = await load_knowledge(runner, timeout=timeout, on_skip=skipped)
    except KnowledgeTimeout as e:
        emit(Notice(message=f"knowledge file skipped: {e}"))
        return None
    if found is None:
        return None
    # Directive-like lines in it are escaped.
    text = neutralise(redactor(found.text))
    emit(KnowledgeLoaded(path=found.path, text=text))
    return text


async def skill_body(
    skill: Skill, runner: Runner, prompts: Prompts, *, timeout: float, emit: Emit
) -> tuple[str, SkillFiles | None]:
    """The skill's text for the Active Skill block, and where its files are on the target: a
    skill with files beside its SKILL.md gets them there first, and its block ends with their
    base directory."""
    placed = await place_folder(skill, runner, timeout=timeout)
    if placed is None:
        return skill.body, None
    if placed.note:
        emit(Notice(message=placed.note))
    emit(
        SkillFolderReady(
            base=placed.base, files=list(placed.files), bytes=placed.size, how=placed.how
        )
    )
    folder = prompts.skill_folder(placed.base, list(placed.files))
    return f"{skill.body}\n\n{folder}", SkillFiles(placed.base, placed.files)


async def memory_index(
    memory: MemoryStore, prompts: Prompts, redactor: Redactor, emit: Emit
) -> str:
    """The Current Memory Index: each note's name and first line."""
    try:
        notes = await memory.index()
    except MemoryRefused as e:
        emit(Notice(message=f"memory index left empty: {e}"))
        notes = []
    return redactor(neutralise(index_text(notes, prompts["SKILL_MEMORY_INDEX_EMPTY"])))
