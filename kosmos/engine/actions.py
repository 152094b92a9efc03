"""[GET-FILE] and the memory directives: what each does, who allows it, what the LLM is told.

* `[GET-FILE] PATH` reads a file on the target (relative to the login directory, or on `local`
  to the working directory), as `kosmos.engine.files` does for every file read.
* Memory lives on the controller (`kosmos.memory`). `[STORE]`, `[APPEND_MEMORY]` and
  `[DELETE_MEMORY]` are writes for the policy; `[RETRIEVE]` and `[LIST_MEMORY]` only read
  kosmos's own notes and are never asked about. A bad name, or text over the limit, is a
  memory error the LLM is told about, and nothing is written. What is stored is redacted
  first: a secret never reaches the memory folder.

Each action ends in one event (`FileRead`, `MemoryAction`) that holds the text the LLM got, so
a resumed run can send it again.
"""

from __future__ import annotations

from collections.abc import Callable

from kosmos.engine.approval import ApprovalGate, Decision
from kosmos.engine.files import FileStep
from kosmos.engine.guard import neutralise
from kosmos.engine.operator import Operator
from kosmos.engine.parser import ACTION_TAGS, Parsed
from kosmos.events import ActionStatus, DecidedBy, Event, MemoryAction, MemoryVerb
from kosmos.hosts.runner import Runner
from kosmos.memory import MemoryRefused, MemoryStore, check_name, index_text
from kosmos.prompts import Prompts
from kosmos.safety import Redactor

_VERBS: dict[str, MemoryVerb] = {
    "store": "store",
    "append_memory": "append",
    "retrieve": "retrieve",
    "list_memory": "list",
    "delete_memory": "delete",
}
_WRITES = ("store", "append_memory", "delete_memory")


class Actions:
    """Carries out one run's [GET-FILE] and memory directives."""

    def __init__(
        self,
        *,
        runner: Runner,
        gate: Callable[[], ApprovalGate],
        operator: Operator,
        memory: MemoryStore,
        redactor: Redactor,
        prompts: Prompts,
        emit: Callable[[Event], None],
        read_timeout: float,
    ) -> None:
        # The session's gate, looked up each time: a replay puts its own in place.
        self.gate = gate
        self.memory = memory
        self.redactor = redactor
        self.prompts = prompts
        self.emit = emit
        self.files = FileStep(
            runner=runner,
            gate=gate,
            operator=operator,
            redactor=redactor,
            prompts=prompts,
            emit=emit,
            read_timeout=read_timeout,
        )

    async def act(self, parsed: Parsed, step: int) -> str:
        """Do what `parsed` asks; the result text for the LLM, without the step counter."""
        if parsed.kind == "get_file":
            return (await self.files.read(parsed.text, step)).sent_to_llm
        return await self._memory(parsed, step)

    # -- memory --------------------------------------------------------------------------

    async def _memory(self, parsed: Parsed, step: int) -> str:
        p = self.prompts
        verb = _VERBS[parsed.kind]
        name = parsed.text
        by: DecidedBy = "policy"
        text = self.redactor(parsed.content)
        try:
            if verb != "list":
                check_name(name)
            if verb in ("store", "append") and not text.strip():
                raise MemoryRefused(p["SKILL_MEMORY_NO_TEXT"].format(name=name))
            if parsed.kind in _WRITES:
                decision = await self._allow(step, parsed, name, text)
                by = decision.by
                if decision.action in ("refused", "skip"):
                    reason = decision.reason
                    if decision.action == "skip":
                        reason = p["SKILL_MEMORY_SKIPPED"].format(name=name)
                    return self._noted(step, verb, name, _status(decision), by, reason=reason)
            size = 0
            if verb == "store":
                size = await self.memory.store(name, text)
                reply = p["SKILL_MEMORY_STORED"].format(name=name)
            elif verb == "append":
                size = await self.memory.append(name, text)
                reply = p["SKILL_MEMORY_STORED"].format(name=name)
            elif verb == "delete":
                await self.memory.delete(name)
                reply = p["SKILL_MEMORY_DELETED"].format(name=name)
            elif verb == "retrieve":
                note = await self.memory.retrieve(name)
                size = len(note.encode())
                reply = p["SKILL_MEMORY_CONTENT"].format(
                    content=self.redactor(neutralise(note.strip("\n")))
                )
            else:
                notes = await self.memory.index()
                listed = neutralise(index_text(notes, p["SKILL_MEMORY_INDEX_EMPTY"]))
                reply = p["SKILL_MEMORY_INDEX"].format(index=self.redactor(listed))
        except MemoryRefused as e:
            return self._noted(step, verb, name, "error", by, reason=str(e))
        written = text if verb in ("store", "append") else ""
        self.emit(
            MemoryAction(
                step=step,
                action=verb,
                name=name,
                status="done",
                by=by,
                content=written,
                bytes=size,
                sent_to_llm=reply,
            )
        )
        return reply

    async def _allow(self, step: int, parsed: Parsed, name: str, text: str) -> Decision:
        """The policy's word on a memory write, shown as the directive it is."""
        if parsed.kind == "delete_memory":
            reason = self.prompts["SKILL_MEMORY_DELETE_RISK"].format(name=name)
        else:
            reason = self.prompts["SKILL_MEMORY_WRITE_RISK"].format(
                name=name, bytes=len(text.encode())
            )
        # One line: the text itself is on screen with the directive.
        shown = f"{ACTION_TAGS[parsed.kind]} {name}"
        return await self.gate().judge(step, shown, "write", reason, kind="memory")

    def _noted(
        self,
        step: int,
        verb: MemoryVerb,
        name: str,
        status: ActionStatus,
        by: DecidedBy,
        *,
        reason: str,
    ) -> str:
        content = self.prompts["SKILL_MEMORY_ERROR"].format(reason=reason)
        self.emit(
            MemoryAction(
                step=step,
                action=verb,
                name=name,
                status=status,
                by=by,
                reason=reason,
                sent_to_llm=content,
            )
        )
        return content


def _status(decision: Decision) -> ActionStatus:
    return "refused" if decision.action == "refused" else "skipped"
