"""Streamed command output reduced to what a log view can show, however fast it arrives."""

from __future__ import annotations

import re

from kosmos.engine.guard import visible_output

# What a log view keeps between refreshes: the newest characters, in lines no wider than this.
MAX_PENDING = 64 * 1024
MAX_WIDTH = 400
ELLIPSIS = "…"

# What ends a line on screen: a carriage return alone too, so that a progress line redrawn in
# place shows every state it went through and nothing is drawn over.
LINE_END = re.compile(r"\r\n|\r|\n")

# A colour sequence cut at the width: dropped, so that no half of one reaches the screen.
_CUT_SGR = re.compile(r"\x1b\[[0-9;:]*\Z")


class OutputTail:
    """Collects chunks between two UI refreshes; keeps only the newest `max_pending` characters.

    `feed` is called for every chunk (cheap: an append); `take` returns the text to write, with
    lines cut at `max_width` so that one endless line cannot slow the log down.
    """

    def __init__(self, max_pending: int = MAX_PENDING, max_width: int = MAX_WIDTH) -> None:
        self.max_pending = max_pending
        self.max_width = max_width
        self.total = 0
        self.dropped = 0
        self._parts: list[str] = []
        self._size = 0
        self._column = 0
        self._cut = False

    def feed(self, text: str) -> bool:
        """Add a chunk; True when it is the first since the last `take` (time to schedule one)."""
        first = not self._parts
        self._parts.append(text)
        self._size += len(text)
        self.total += len(text)
        if self._size > 2 * self.max_pending:
            joined = "".join(self._parts)
            kept = joined[-self.max_pending :]
            self.dropped += len(joined) - len(kept)
            self._parts = [kept]
            self._size = len(kept)
        return first

    @property
    def pending(self) -> bool:
        return bool(self._parts)

    def take(self) -> str:
        """The text gathered since the last call, lines cut to width; empty if there is none."""
        text = "".join(self._parts)
        self._parts = []
        self._size = 0
        if not text:
            return ""
        # Colours stay for the log to draw; every other control is shown as a symbol (a
        # `printf '\\033[2J'` must not clear the screen).
        text = visible_output(text)
        out: list[str] = []
        at = 0
        for end in [*LINE_END.finditer(text), None]:
            line = text[at : end.start() if end else len(text)]
            room = self.max_width - self._column
            if len(line) <= room:
                out.append(line)
                self._column += len(line)
            elif not self._cut:
                out.append(_CUT_SGR.sub("", line[: max(room, 0)]) + ELLIPSIS)
                self._column = self.max_width
                self._cut = True
            if end is not None:
                out.append(end.group())
                at = end.end()
                self._column = 0
                self._cut = False
        return "".join(out)


class StepOutputs:
    """One `OutputTail` per command step, so that each step's output reaches its own widget.

    The engine runs ahead of the screen: when commands run without a question in between, the
    next one may start, and stream, before the view has handled the previous one's end. Kept
    apart by step, a late view still finds all of a step's output under its number.
    """

    def __init__(self) -> None:
        self._tails: dict[int, OutputTail] = {}

    def feed(self, step: int, text: str) -> bool:
        """Add a chunk of `step`'s output; True when it is the first since that step's last take."""
        tail = self._tails.get(step)
        if tail is None:
            tail = self._tails[step] = OutputTail()
        return tail.feed(text)

    def take(self, step: int) -> str:
        """`step`'s output gathered since the last take (lines cut to width)."""
        tail = self._tails.get(step)
        return tail.take() if tail is not None else ""

    def close(self, step: int) -> str:
        """The rest of `step`'s output; the step has ended and is forgotten."""
        tail = self._tails.pop(step, None)
        return tail.take() if tail is not None else ""

    @property
    def pending(self) -> list[int]:
        """Steps whose output waits to be shown."""
        return [step for step, tail in self._tails.items() if tail.pending]
