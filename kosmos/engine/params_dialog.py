"""Collect a skill's missing parameters in a short dialogue with the LLM (docs/protocol.md).

The LLM gets two tools, `update_params` (one property per skill param) and `confirm_and_run`,
and a `[SYSTEM STATE]` block before every call. kosmos merges each update (new values
overwrite, old ones stay), checks every value against the param's rules, ignores a premature
confirm (and a confirm before the operator answered with every value on screen), and ends
when the LLM confirms or the operator presses Confirm.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from msgspec.structs import replace

from kosmos.errors import InputNeeded
from kosmos.events import Emit, Message, ParamsUpdate, ToolCall
from kosmos.llm.provider import Provider, ToolSpec
from kosmos.prompts import Prompts
from kosmos.skills.model import Skill
from kosmos.skills.params import validate_value

UPDATE = "update_params"
CONFIRM = "confirm_and_run"
# LLM calls in a row that only call tools, without a word for the operator.
MAX_SILENT = 3
# Replies in a row without any tool call: the model does not work with the tools.
MAX_IDLE = 3


class DialogStalled(Exception):
    """The LLM keeps talking without calling the tools; the front end asks plainly instead."""


@dataclass(frozen=True)
class DialogState:
    """What the front end shows: values so far, required ones missing, whether all are in."""

    values: dict[str, str]
    missing: list[str]
    # Values the LLM gave since the last turn that break their param's rules, so the operator
    # sees what was not taken: name -> `VALUE: why`.
    rejected: dict[str, str] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return not self.missing


@dataclass(frozen=True)
class DialogReply:
    """The operator's turn: typed text (it goes to the LLM), Confirm, or None text to give up."""

    text: str | None = None
    confirmed: bool = False


class ParamDialog(Protocol):
    """What a front end implements to hold the dialogue (TUI: a chat with a Confirm button;
    line mode: prompts, and `Run with these parameters? [Y/n]` once all are collected)."""

    async def turn(self, text: str, state: DialogState) -> DialogReply:
        """Show the LLM's text; return what the operator typed or pressed."""
        ...


@dataclass
class ParamCollector:
    """One dialogue for one skill; `collect()` returns the confirmed parameters."""

    skill: Skill
    provider: Provider
    prompts: Prompts
    dialog: ParamDialog
    emit: Emit = field(default=lambda event: None)
    given: Mapping[str, str] = field(default_factory=dict)
    max_turns: int = 50

    def __post_init__(self) -> None:
        self.values: dict[str, str] = {}
        for param in self.skill.params:
            value = self.given.get(param.name) or param.default
            if value:
                self.values[param.name] = value
        self.messages: list[Message] = [
            Message(
                role="user", content=self.prompts["PARAMS_START"].format(skill_name=self.skill.name)
            )
        ]
        # Whether the operator answered while every value was on screen (and none changed since):
        # only then does the LLM's confirm_and_run count.
        self.summary_answered = False
        self.rejected: dict[str, str] = {}

    # -- state ---------------------------------------------------------------------------

    @property
    def missing(self) -> list[str]:
        return [p.name for p in self.skill.params if p.required and p.name not in self.values]

    def state(self) -> DialogState:
        return DialogState(dict(self.values), self.missing, dict(self.rejected))

    def state_block(self) -> str:
        """The `[SYSTEM STATE]` block sent before every call: what is collected, what is missing."""
        collected = {p.name: self.values.get(p.name) for p in self.skill.params}
        lines = ["[SYSTEM STATE]", f"Collected: {json.dumps(collected, ensure_ascii=False)}"]
        if self.missing:
            lines.append(self.prompts["PARAMS_STATE_NEED"].format(missing=", ".join(self.missing)))
        else:
            lines.append(self.prompts["PARAMS_STATE_DONE"])
        lines.append(self.prompts["PARAMS_STATE_RULE"])
        return "\n".join(lines)

    def system(self) -> str:
        described = []
        for p in self.skill.params:
            notes = [p.description or p.name, "required" if p.required else "optional"]
            if p.choices:
                notes.append("one of: " + ", ".join(p.choices))
            if p.max_length:
                notes.append(f"at most {p.max_length} characters")
            described.append(f"- {p.name}: " + "; ".join(notes))
        base = self.prompts["PARAMS_SYSTEM_PROMPT"].format(
            skill_name=self.skill.name,
            skill_description=self.skill.description or self.skill.name,
            params="\n".join(described),
        )
        return f"{base}\n\n{self.state_block()}"

    def tools(self) -> list[ToolSpec]:
        properties = {}
        for p in self.skill.params:
            prop: dict[str, object] = {"type": "string", "description": p.description or p.name}
            if p.choices:
                prop["enum"] = list(p.choices)
            properties[p.name] = prop
        return [
            ToolSpec(
                name=UPDATE,
                description=self.prompts["PARAMS_UPDATE_TOOL"],
                parameters={"type": "object", "properties": properties},
            ),
            ToolSpec(name=CONFIRM, description=self.prompts["PARAMS_CONFIRM_TOOL"]),
        ]

    # -- tool calls ----------------------------------------------------------------------

    def update(self, args: Mapping[str, object]) -> str:
        """Merge: each valid new value overwrites, every other value stays."""
        accepted: dict[str, str] = {}
        problems: dict[str, str] = {}
        refused: dict[str, str] = {}
        for name, raw in args.items():
            param = self.skill.param(name)
            if param is None:
                problems[name] = "no such parameter"
                self.rejected[name] = f"{raw}: no such parameter"
                continue
            if raw is None or (isinstance(raw, str) and not raw.strip()):
                continue  # an empty value never erases a collected one
            value = raw.strip() if isinstance(raw, str) else json.dumps(raw)
            problem = validate_value(param, value)
            if problem is not None:
                problems[name] = problem
                refused[name] = value
                self.rejected[name] = f"{value}: {problem}"
            else:
                accepted[name] = value
        if any(self.values.get(k) != v for k, v in accepted.items()):
            self.summary_answered = False  # the operator has not seen these values yet
        self.values.update(accepted)
        if accepted:
            self.emit(ParamsUpdate(kind="update", values=accepted, missing=self.missing))
        if problems:
            self.emit(
                ParamsUpdate(
                    kind="rejected", values=refused, problems=problems, missing=self.missing
                )
            )
        result = self.prompts["PARAMS_SAVED"].format(
            collected=json.dumps(self.values, ensure_ascii=False)
        )
        if problems:
            detail = "; ".join(f"{k}: {v}" for k, v in problems.items())
            result += "\n" + self.prompts["PARAMS_REJECTED"].format(problems=detail)
        return result + "\n" + self.state_block()

    def confirm(self) -> tuple[bool, str]:
        if self.missing:
            self.emit(ParamsUpdate(kind="premature_confirm", missing=self.missing))
            return False, self.prompts["PARAMS_PREMATURE"].format(missing=", ".join(self.missing))
        if not self.summary_answered:
            # Only the operator confirms: the LLM may not start a run with values nobody saw.
            self.emit(ParamsUpdate(kind="premature_confirm"))
            return False, self.prompts["PARAMS_UNSEEN"]
        return True, self.prompts["PARAMS_CONFIRMED"]

    def _answer(self, call: ToolCall) -> tuple[bool, Message]:
        confirmed = False
        if call.name == UPDATE:
            text = self.update(call.args)
        elif call.name == CONFIRM:
            confirmed, text = self.confirm()
        else:
            text = f"unknown tool {call.name!r}; use {UPDATE} or {CONFIRM}"
        return confirmed, Message(role="tool", content=text, tool_call_id=call.id, name=call.name)

    # -- the dialogue --------------------------------------------------------------------

    async def collect(self) -> dict[str, str]:
        """Talk until the parameters are confirmed; raise InputNeeded if the operator leaves."""
        silent = idle = 0
        for _ in range(self.max_turns):
            sent = [Message(role="system", content=self.system()), *self.messages]
            reply = await self.provider.complete(sent, tools=self.tools())
            calls = [
                c if c.id else replace(c, id=f"call_{i}") for i, c in enumerate(reply.tool_calls)
            ]
            self.messages.append(
                Message(role="assistant", content=reply.text, tool_calls=tuple(calls))
            )
            confirmed = False
            for call in calls:
                done, message = self._answer(call)
                confirmed = confirmed or done
                self.messages.append(message)
            if confirmed:
                return self._done()
            idle = 0 if calls else idle + 1
            if idle >= MAX_IDLE:
                raise DialogStalled(f"{idle} replies in a row without a tool call")
            if calls and not reply.text.strip() and silent < MAX_SILENT:
                silent += 1
                continue  # let the LLM say something about the tool results
            silent = 0
            text = reply.text.strip()
            while True:
                shown = self.state()
                self.rejected = {}  # said once, with this turn
                answer = await self.dialog.turn(text, shown)
                self.emit(ParamsUpdate(kind="turn", said=text, typed=answer.text))
                if shown.complete and answer.text and answer.text.strip():
                    self.summary_answered = True  # typed with every value on screen
                if answer.confirmed:
                    if not self.missing:
                        return self._done()
                    text = ""  # Confirm is not offered yet; nothing to send
                    continue
                if answer.text is None:
                    raise InputNeeded(
                        f"the parameter dialogue for '{self.skill.name}' ended before the "
                        "parameters were confirmed; pass them with --param KEY=VALUE"
                    )
                if answer.text.strip():
                    break
                text = ""  # nothing typed: ask again without bothering the LLM
            self.messages.append(Message(role="user", content=answer.text.strip()))
        raise InputNeeded(
            f"the parameter dialogue for '{self.skill.name}' took more than {self.max_turns} "
            "turns; pass the parameters with --param KEY=VALUE"
        )

    def _done(self) -> dict[str, str]:
        self.emit(ParamsUpdate(kind="confirm", values=dict(self.values)))
        return dict(self.values)
