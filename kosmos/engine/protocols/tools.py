"""Native function calling: run_command, ask_user, show_message, finish.

The result of a call goes back as a tool result (OpenAI: a `tool` message with the call id;
Gemini: a functionResponse part) carrying the same text, cleaned output and step counter as
the tags protocol.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from msgspec.structs import replace

from kosmos.engine.parser import ACTION_TAGS, Kind, NoDirective, Parsed, canonical, parse_reply
from kosmos.engine.protocols.base import OnRetry, Turn
from kosmos.errors import LLMError
from kosmos.events import Emit, Message, Notice, ToolCall
from kosmos.llm.provider import CapabilityRejected, Provider, Reply, ToolSpec
from kosmos.prompts import Prompts, SystemParts


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


STEP_TOOLS = (
    ToolSpec(
        name="run_command",
        description="Run one shell command on the host; you receive its cleaned output.",
        parameters=_object(
            {"command": {"type": "string", "description": "the command, nothing else"}},
            ["command"],
        ),
    ),
    ToolSpec(
        name="ask_user",
        description="Ask the user a question and wait for the answer.",
        parameters=_object(
            {
                "question": {"type": "string", "description": "the question"},
                "optional": {
                    "type": "boolean",
                    "description": "true if the user may skip it (Enter)",
                },
            },
            ["question", "optional"],
        ),
    ),
    ToolSpec(
        name="show_message",
        description="Show a progress message or warning; the skill continues at once.",
        parameters=_object({"text": {"type": "string"}}, ["text"]),
    ),
    ToolSpec(
        name="finish",
        description="The skill is complete: summarize what was accomplished.",
        parameters=_object({"summary": {"type": "string"}}, ["summary"]),
    ),
)
_NAME = {"type": "string", "description": "the note's name: MEMORY_ + lower-case snake_case + .md"}
_TEXT = {"type": "string", "description": "the note's text"}

# Offered with --memory: [GET-FILE] and the memory directives of the tags protocol.
MEMORY_TOOLS = (
    ToolSpec(
        name="get_file",
        description="Receive the text of a file on the host, as it is.",
        parameters=_object({"path": {"type": "string"}}, ["path"]),
    ),
    ToolSpec(
        name="store_memory",
        description="Create or replace a memory note; its first line is its summary.",
        parameters=_object({"name": _NAME, "content": _TEXT}, ["name", "content"]),
    ),
    ToolSpec(
        name="append_memory",
        description="Add text at the end of a memory note (created if missing).",
        parameters=_object({"name": _NAME, "content": _TEXT}, ["name", "content"]),
    ),
    ToolSpec(
        name="retrieve_memory",
        description="Receive the text of a memory note.",
        parameters=_object({"name": _NAME}, ["name"]),
    ),
    ToolSpec(
        name="list_memory",
        description="Receive every memory note's name and first line.",
        parameters=_object({}, []),
    ),
    ToolSpec(
        name="delete_memory",
        description="Delete a memory note.",
        parameters=_object({"name": _NAME}, ["name"]),
    ),
)

# tool name -> (directive kind, argument that holds its text)
_KINDS: dict[str, tuple[Kind, str]] = {
    "run_command": ("cmd", "command"),
    "ask_user": ("ask", "question"),
    "show_message": ("message", "text"),
    "finish": ("done", "summary"),
    "get_file": ("get_file", "path"),
    "store_memory": ("store", "name"),
    "append_memory": ("append_memory", "name"),
    "retrieve_memory": ("retrieve", "name"),
    "list_memory": ("list_memory", ""),
    "delete_memory": ("delete_memory", "name"),
}
# Kinds whose text may be empty here: a memory name is judged when the action is carried out.
_MAY_BE_EMPTY = ("done", "store", "append_memory", "retrieve", "list_memory", "delete_memory")


def _directive(call: ToolCall) -> tuple[Parsed | None, str | None]:
    if call.name not in _KINDS:
        return None, f"unknown tool {call.name!r}"
    if "_unparsed" in call.args:
        return None, f"the arguments of {call.name} were not a JSON object"
    kind, key = _KINDS[call.name]
    value = call.args.get(key)
    text = value.strip() if isinstance(value, str) else ""
    if not text and kind not in _MAY_BE_EMPTY:
        return None, f"{call.name} needs a non-empty {key!r}"
    if kind in ACTION_TAGS:
        raw = call.args.get("content") if kind in ("store", "append_memory") else None
        content = raw.strip("\n").rstrip() if isinstance(raw, str) else ""
        parsed = Parsed(
            kind, text, canonical=canonical(kind, text, content=content), content=content
        )
        return parsed, None
    text = text or "Skill completed"
    optional = call.args.get("optional") in (True, "true", "True")
    required = not (kind == "ask" and optional)
    return Parsed(kind, text, required, False, canonical(kind, text, required)), None


class ToolsProtocol:
    """Each step is one call of a step tool; text beside the call is kept and shown."""

    name = "tools"

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
        self._emit: Callable[[Notice], None] = emit or (lambda event: None)
        # Calls of every step tool are understood; the memory ones are offered with --memory.
        self.offered = STEP_TOOLS + MEMORY_TOOLS if memory else STEP_TOOLS

    def system_prompt(self, parts: SystemParts) -> str:
        return self.prompts.system(
            parts, base="SKILL_SYSTEM_PROMPT_TOOLS", memory_base="SKILL_SYSTEM_PROMPT_TOOLS_MEMORY"
        )

    async def complete(self, messages: Sequence[Message], *, step: int, on_retry: OnRetry) -> Reply:
        try:
            return await self.provider.complete(messages, on_retry=on_retry, tools=self.offered)
        except CapabilityRejected as e:
            if e.capability != "tools":
                raise
            raise LLMError(
                f"the LLM at {self.provider.base_url} does not take tool calls ({e}); "
                "use --protocol auto, tags or json"
            ) from e

    def parse(self, reply: Reply) -> Turn:
        if not reply.tool_calls:
            # Small models sometimes answer in tags anyway; a real tag is taken as it is.
            try:
                parsed = parse_reply(reply.text)
            except NoDirective:
                parsed = None
            if parsed is not None and not parsed.inferred:
                return Turn(reply, parsed)
            return Turn(reply, None, problem="no tool call")
        call = reply.tool_calls[0]
        if call.id is None:
            call = replace(call, id="call_0")
        if len(reply.tool_calls) > 1:
            extra = ", ".join(c.name for c in reply.tool_calls[1:])
            self._emit(Notice(message=f"the LLM called more than one tool; ignored: {extra}"))
        parsed, problem = _directive(call)
        return Turn(reply, parsed, problem=problem, said=reply.text.strip(), call=call)

    def assistant_message(self, turn: Turn, command: str | None = None) -> Message:
        if turn.call is None:
            assert turn.parsed is not None
            content = canonical("cmd", command) if command is not None else turn.parsed.canonical
            return Message(role="assistant", content=content)
        call = turn.call
        if command is not None:
            call = replace(call, args={"command": command})
        # Only the call acted on is kept: every call in history needs its own result.
        return Message(role="assistant", content=turn.reply.text, tool_calls=(call,))

    def result_message(self, turn: Turn, content: str) -> Message:
        if turn.call is None:
            return Message(role="user", content=content)
        return Message(role="tool", content=content, tool_call_id=turn.call.id, name=turn.call.name)

    def correction(self, turn: Turn, step: int, max_steps: int) -> list[Message]:
        text = self.prompts["SKILL_TOOLS_CORRECTION"].format(
            problem=turn.problem or "no tool call", step=step, max_steps=max_steps
        )
        if turn.call is not None:
            return [
                self.assistant_message(turn),
                Message(role="tool", content=text, tool_call_id=turn.call.id, name=turn.call.name),
            ]
        return [
            Message(role="assistant", content=turn.reply.text.strip() or "(empty reply)"),
            Message(role="user", content=text),
        ]
