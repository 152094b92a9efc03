"""The `json` step protocol: each reply is a structured solution naming one action."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from kosmos.engine.parser import Parsed, action_kind, canonical
from kosmos.engine.protocols.base import OnRetry, Turn
from kosmos.events import Emit, Message
from kosmos.llm.content import as_context
from kosmos.llm.provider import Provider, Reply
from kosmos.llm.structured import InvalidSolution, StructuredClient
from kosmos.prompts import Prompts, SystemParts

Action = Literal["cmd", "ask", "ask_optional", "message", "done"]
MemoryAction = Literal[
    "cmd",
    "ask",
    "ask_optional",
    "message",
    "done",
    "get_file",
    "store",
    "append_memory",
    "retrieve",
    "list_memory",
    "delete_memory",
]


class _Tolerant(BaseModel):
    """What both step schemas accept beyond their own fields: the spellings small models use."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _tolerate(cls, data: Any) -> Any:
        # What small models write instead: `"CMD"`, `"ask:optional"`, `"command": ...`.
        if not isinstance(data, dict):
            return data
        data = dict(data)
        action = data.get("action")
        if isinstance(action, str):
            data["action"] = action.strip().strip("[]").lower().replace(":", "_")
        if "text" not in data:
            for key in ("command", "question", "message", "summary"):
                if isinstance(data.get(key), str):
                    data["text"] = data.pop(key)
                    break
        return data


class StepAction(_Tolerant):
    """One step: what to do, and its text (the command, question, message or summary)."""

    action: Action = Field(
        description="cmd: run a command; ask: a required question; ask_optional: a question "
        "the user may skip; message: show and continue; done: the skill is complete"
    )
    text: str = Field(
        description="the shell command, the question, the message or the final summary"
    )


class MemoryStepAction(_Tolerant):
    """A step with --memory: the five actions, [GET-FILE] and the memory actions."""

    action: MemoryAction = Field(
        description="cmd: run a command; ask: a required question; ask_optional: a question "
        "the user may skip; message: show and continue; done: the skill is complete; get_file: "
        "read a file on the host; store, append_memory, retrieve, list_memory, delete_memory: "
        "the memory notes"
    )
    text: str = Field(
        description="the shell command, the question, the message, the summary, the file's "
        "path or the memory note's name (MEMORY_name.md; empty for list_memory)"
    )
    content: str = Field(
        description="store and append_memory: the note's text; empty for every other action"
    )

    @model_validator(mode="before")
    @classmethod
    def _content(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = dict(data)
            data.setdefault("content", "")
            if data.get("action") in ("list_memory", "LIST_MEMORY", "[LIST_MEMORY]"):
                data.setdefault("text", "")
            for key in ("path", "name"):
                if "text" not in data and isinstance(data.get(key), str):
                    data["text"] = data.pop(key)
        return data


def _parsed(value: StepAction | MemoryStepAction) -> Parsed | None:
    kind = action_kind(value.action)
    if kind is not None:
        text = value.text.strip()
        if kind == "get_file" and not text:
            return None
        content = getattr(value, "content", "").strip("\n").rstrip()
        if kind not in ("store", "append_memory"):
            content = ""
        text = "" if kind == "list_memory" else text
        return Parsed(kind, text, canonical=canonical(kind, text, content=content), content=content)
    text = value.text.strip()
    if value.action == "ask_optional":
        return Parsed("ask", text, False, False, canonical("ask", text, False)) if text else None
    if not text:
        if value.action != "done":
            return None
        text = "Skill completed"
    return Parsed(value.action, text, True, False, canonical(value.action, text))


class JsonProtocol:
    """Step actions as validated JSON, by the best means the provider has."""

    name = "json"

    def __init__(
        self,
        provider: Provider,
        prompts: Prompts,
        *,
        emit: Emit | None = None,
        memory: bool = False,
    ) -> None:
        self.provider = provider
        self.prompts = prompts
        self.client = StructuredClient(provider, prompts, emit=emit)
        # Without --memory the schema stays the five actions.
        self.model: type[StepAction | MemoryStepAction] = MemoryStepAction if memory else StepAction
        # The last reply and what it validated to (or why it did not).
        self._last: tuple[Reply, StepAction | MemoryStepAction | str] | None = None

    def system_prompt(self, parts: SystemParts) -> str:
        return self.prompts.system(
            parts, base="SKILL_SYSTEM_PROMPT_JSON", memory_base="SKILL_SYSTEM_PROMPT_JSON_MEMORY"
        )

    async def complete(self, messages: Sequence[Message], *, step: int, on_retry: OnRetry) -> Reply:
        try:
            solution = await self.client.request(
                as_context(messages), self.model, step=step, on_retry=on_retry
            )
        except InvalidSolution as e:
            reply = Reply(text=e.raw)
            self._last = (reply, e.problem)
            return reply
        self._last = (solution.reply, solution.value)
        return solution.reply

    def parse(self, reply: Reply) -> Turn:
        value = self._last[1] if self._last is not None and self._last[0] is reply else None
        self._last = None
        if not isinstance(value, StepAction | MemoryStepAction):
            return Turn(reply, None, problem=value or "not a step action")
        parsed = _parsed(value)
        if parsed is None:
            return Turn(reply, None, problem=f"{value.action} needs a non-empty text")
        return Turn(reply, parsed)

    def assistant_message(self, turn: Turn, command: str | None = None) -> Message:
        assert turn.parsed is not None
        p = turn.parsed
        action = "ask_optional" if p.kind == "ask" and not p.required else p.kind
        text = command if command is not None else p.text
        said: dict[str, str] = {"action": action, "text": text}
        if p.content:
            said["content"] = p.content
        return Message(role="assistant", content=json.dumps(said, ensure_ascii=False))

    def result_message(self, turn: Turn, content: str) -> Message:
        return Message(role="user", content=content)

    def correction(self, turn: Turn, step: int, max_steps: int) -> list[Message]:
        text = self.prompts["SKILL_JSON_CORRECTION"].format(
            problem=turn.problem or "not a step action", step=step, max_steps=max_steps
        )
        return [
            Message(role="assistant", content=turn.reply.text.strip() or "(empty reply)"),
            Message(role="user", content=text),
        ]
