"""Custom content types: typed message contents and the handlers that render them.

A context message's content may be a string or a typed object such as
`{"type": "state", "state": {...}}`. Each type has a handler; handlers run in context order and
may change all three parts of the request being built: the LLM settings, the schema and the
messages (usually by turning the object into text).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from kosmos.clean import cap, clean
from kosmos.errors import UsageError
from kosmos.events import Message

# What of a command's output or a file goes to the LLM (as for a skill step's output).
MAX_BYTES = 10 * 1024
MAX_LINES = 256


class StateContent(BaseModel):
    """Structured state the LLM should know (collected values, what is still needed)."""

    model_config = ConfigDict(frozen=True)

    type: Literal["state"] = "state"
    state: dict[str, Any]
    title: str = "SYSTEM STATE"


class CommandOutputContent(BaseModel):
    """A command and its raw output; the handler cleans and caps it."""

    model_config = ConfigDict(frozen=True)

    type: Literal["command_output"] = "command_output"
    command: str
    output: str
    exit_code: int | None = 0


class FileContent(BaseModel):
    """A file's text, named by its path."""

    model_config = ConfigDict(frozen=True)

    type: Literal["file"] = "file"
    path: str
    text: str


TypedContent = Annotated[
    StateContent | CommandOutputContent | FileContent, Field(discriminator="type")
]


# Who says a message of a request's context.
Role = Literal["system", "user", "assistant"]


class ContextMessage(BaseModel):
    """One message of a request's context: text, or a typed object a handler renders."""

    model_config = ConfigDict(frozen=True)

    role: Role
    content: str | TypedContent | BaseModel


@dataclass
class Draft:
    """The request being built; handlers may change any part of it."""

    schema: dict[str, Any]
    llm: dict[str, Any] = field(default_factory=dict)  # temperature, max_tokens overrides
    messages: list[Message] = field(default_factory=list)

    def add(self, role: Role, text: str) -> None:
        self.messages.append(Message(role=role, content=text))


Handler = Callable[[Any, Role, Draft], None]


def _capped(text: str) -> str:
    kept, _ = cap(
        clean(text.encode()) or "(no output)",
        max_bytes=MAX_BYTES,
        max_lines=MAX_LINES,
        marker=lambda lines, size: f"[... {lines} lines ({size} bytes) omitted ...]",
    )
    return kept


def render_state(item: StateContent, role: Role, draft: Draft) -> None:
    # The [SYSTEM STATE] block.
    body = "\n".join(f"{k}: {json.dumps(v, ensure_ascii=False)}" for k, v in item.state.items())
    draft.add(role, f"[{item.title}]\n{body}")


def render_command_output(item: CommandOutputContent, role: Role, draft: Draft) -> None:
    status = "" if item.exit_code in (0, None) else f"\n[exit code: {item.exit_code}]"
    draft.add(role, f"$ {item.command}\n{_capped(item.output)}{status}")


def render_file(item: FileContent, role: Role, draft: Draft) -> None:
    draft.add(role, f"--- File: {item.path} ---\n{_capped(item.text)}")


class ContentTypes:
    """The registry of content handlers of one request layer (no global registry)."""

    def __init__(self, handlers: dict[str, Handler] | None = None) -> None:
        self.handlers: dict[str, Handler] = dict(handlers or {})

    @classmethod
    def default(cls) -> ContentTypes:
        return cls(
            {
                "state": render_state,
                "command_output": render_command_output,
                "file": render_file,
            }
        )

    def register(self, type_name: str, handler: Handler) -> None:
        self.handlers[type_name] = handler

    def build(self, context: Iterable[ContextMessage], schema: dict[str, Any]) -> Draft:
        """Run every message through its handler; plain strings pass through unchanged."""
        draft = Draft(schema=json.loads(json.dumps(schema)))
        for message in context:
            content = message.content
            if isinstance(content, str):
                draft.add(message.role, content)
                continue
            type_name = getattr(content, "type", None)
            handler = self.handlers.get(str(type_name))
            if handler is None:
                known = ", ".join(sorted(self.handlers))
                raise UsageError(
                    f"no handler for content type {type_name!r}; register one "
                    f"(known types: {known})"
                )
            handler(content, message.role, draft)
        return draft


def as_context(messages: Iterable[Message]) -> list[ContextMessage]:
    """Plain chat messages as a request context (tool messages become user text)."""
    out = []
    for m in messages:
        role = m.role if m.role in ("system", "user", "assistant") else "user"
        out.append(ContextMessage(role=role, content=m.content))
    return out
