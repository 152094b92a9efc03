"""Streamed command output reduced to what a log view can show, however fast it arrives."""

from __future__ import annotations

# What a log view keeps between refreshes: the newest characters, in lines no wider than this.
MAX_PENDING = 64 * 1024
MAX_WIDTH = 400
ELLIPSIS = "…"


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
        out: list[str] = []
        lines = text.split("\n")
        for i, line in enumerate(lines):
            if i:
                out.append("\n")
                self._column = 0
                self._cut = False
            room = self.max_width - self._column
            if len(line) <= room:
                out.append(line)
                self._column += len(line)
            elif not self._cut:
                out.append(line[: max(room, 0)] + ELLIPSIS)
                self._column = self.max_width
                self._cut = True
        return "".join(out)
