"""The tags protocol: one tag per reply; also accepts the JSON envelope."""

from __future__ import annotations

import json
from collections.abc import Sequence

from kosmos.engine.envelope import parse_envelope
from kosmos.engine.parser import NoDirective, Parsed, canonical, parse_reply
from kosmos.engine.protocols.base import OnRetry, Turn
from kosmos.events import Message
from kosmos.llm.provider import Provider, Reply
from kosmos.prompts import Prompts, SystemParts


def _envelope_turn(reply: Reply) -> Turn | None:
    envelope = parse_envelope(reply.text)
    if envelope is None:
        return None
    raw = json.dumps(json.loads(reply.text), ensure_ascii=False)
    if envelope.action is not None:
        # The command itself depends on the target's OS; the session fills it in.
        parsed = Parsed("cmd", "", canonical=raw, action=envelope.action, args=dict(envelope.args))
        return Turn(reply, parsed, said=envelope.text)
    problem = f"envelope action dropped: {envelope.dropped}" if envelope.dropped else None
    if not envelope.text.strip():
        return Turn(reply, None, problem=problem or "empty text")
    try:
        parsed = parse_reply(envelope.text)
    except NoDirective as e:
        return Turn(reply, None, problem=str(e))
    if parsed.inferred:
        # A text answer without an action is something to tell the user.
        text = envelope.text.strip()
        parsed = Parsed("message", text, canonical=canonical("message", text))
    return Turn(reply, parsed, problem=problem)


class TagsProtocol:
    """[CMD] / [ASK] / [ASK:optional] / [MESSAGE] / [DONE], as docs/protocol.md describes them."""

    name = "tags"

    def __init__(self, provider: Provider, prompts: Prompts) -> None:
        self.provider = provider
        self.prompts = prompts

    def system_prompt(self, parts: SystemParts) -> str:
        return self.prompts.system(parts)

    async def complete(self, messages: Sequence[Message], *, step: int, on_retry: OnRetry) -> Reply:
        return await self.provider.complete(messages, on_retry=on_retry)

    def parse(self, reply: Reply) -> Turn:
        turn = _envelope_turn(reply)
        if turn is not None:
            return turn
        try:
            return Turn(reply, parse_reply(reply.text))
        except NoDirective as e:
            return Turn(reply, None, problem=str(e))

    def assistant_message(self, turn: Turn, command: str | None = None) -> Message:
        assert turn.parsed is not None
        if command is not None:
            return Message(role="assistant", content=canonical("cmd", command))
        return Message(role="assistant", content=turn.parsed.canonical)

    def result_message(self, turn: Turn, content: str) -> Message:
        return Message(role="user", content=content)

    def correction(self, turn: Turn, step: int, max_steps: int) -> list[Message]:
        return [
            Message(role="assistant", content=turn.reply.text.strip() or "(empty reply)"),
            Message(role="user", content=self.prompts.format_correction(step, max_steps)),
        ]
