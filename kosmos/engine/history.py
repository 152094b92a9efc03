"""Which of the accumulated messages go to the LLM: history modes full, last_n, system_only."""

from __future__ import annotations

from collections.abc import Sequence

from kosmos.events import Message

DEFAULT_HISTORY_MAX = 10


def view(messages: Sequence[Message], mode: str, history_max: int | None) -> list[Message]:
    """The messages to send.

    - `full`: all of them (docs/protocol.md, History).
    - `last_n`: the system message, the first request (the task and its parameters) and the
      last `history_max` messages after it, starting at an assistant reply so roles alternate.
    - `system_only`: the system message and the newest user message.
    """
    if mode == "full" or len(messages) <= 2:
        return list(messages)
    if mode == "system_only":
        if messages[-1].role == "tool" and messages[-2].role == "assistant":
            # A tool result travels with the call it answers.
            return [messages[0], messages[-2], messages[-1]]
        return [messages[0], messages[-1]]
    n = history_max or DEFAULT_HISTORY_MAX
    head, rest = list(messages[:2]), list(messages[2:])
    if len(rest) <= n:
        return head + rest
    tail = rest[-n:]
    if tail[0].role != "assistant":
        tail = tail[1:]
    return head + tail
