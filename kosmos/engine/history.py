"""Which of the accumulated messages go to the LLM: history modes full, last_n, system_only."""

from __future__ import annotations

import json
from collections.abc import Sequence

from kosmos.events import Message, dump

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


class Sizes:
    """The size of the messages a request sends, as one JSON array of UTF-8 (what
    `LLMRequest.sent_bytes` reports), each message measured once: a long run re-sends its
    whole history at every step."""

    def __init__(self) -> None:
        self._known: dict[int, tuple[Message, int]] = {}

    def of(self, sent: Sequence[Message]) -> int:
        known: dict[int, tuple[Message, int]] = {}
        total = 0
        for m in sent:
            size = self._known.get(id(m))
            if size is None or size[0] is not m:
                size = (m, len(json.dumps(dump(m), ensure_ascii=False).encode()))
            known[id(m)] = size
            total += size[1]
        self._known = known
        # `[a, b]`: the brackets and a ", " between two messages.
        return total + 2 + 2 * max(len(sent) - 1, 0)
