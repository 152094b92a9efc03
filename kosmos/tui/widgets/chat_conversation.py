"""The chat screen's conversation: the operator's lines, the agent's texts, embedded skill runs."""

from __future__ import annotations

from dataclasses import dataclass

from textual import on
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Static

# The agent's kinds (kosmos.chat.agent.Kind), the operator's lines and the screen's own notes.
KINDS = frozenset({"progress", "result", "error", "help", "reason", "operator", "note"})


@dataclass
class ChatSaid(Message):
    """A line for the conversation; `kind` picks its style."""

    text: str
    kind: str = "progress"


@dataclass
class ChatShow(Message):
    """A widget for the conversation (a skill's run view), after the lines posted before it."""

    widget: Widget


class ChatLine(Static):
    """Consecutive texts of one kind, one per line: fewer widgets keep a long chat quick."""

    def __init__(self, text: str, kind: str) -> None:
        kind = kind if kind in KINDS else "progress"
        super().__init__(text, markup=False, classes=f"chat-line chat-{kind}")
        self.texts = [text]
        self.kind = kind

    def add(self, text: str) -> None:
        self.texts.append(text)
        self.update("\n".join(self.texts))


class Conversation(VerticalScroll):
    """Everything said, in order, the newest kept in view.

    Lines and widgets arrive as messages, so a worker's texts and the run views it opens keep
    the order in which the agent produced them.
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._follow_pending = False

    def _append(self, widget: Widget) -> None:
        self.mount(widget)
        self.follow()

    def follow(self) -> None:
        """Something was added or grew (a run view's step): show the newest part, once per
        refresh however many lines arrived."""
        if not self._follow_pending:
            self._follow_pending = True
            self.call_after_refresh(self._scroll_to_end)

    def _scroll_to_end(self) -> None:
        self._follow_pending = False
        self.scroll_end(animate=False)

    @on(ChatSaid)
    def _said(self, message: ChatSaid) -> None:
        message.stop()
        last = self.children[-1] if self.children else None
        # Operator lines stay apart, each its own request; other kinds join their neighbours.
        if isinstance(last, ChatLine) and last.kind == message.kind != "operator":
            last.add(message.text)
            self.follow()
            return
        self._append(ChatLine(message.text, message.kind))

    @on(ChatShow)
    def _show(self, message: ChatShow) -> None:
        message.stop()
        self._append(message.widget)

    def lines(self, kind: str | None = None) -> list[str]:
        """The texts shown so far (of one kind), for the screen and its tests."""
        return [t for w in self.query(ChatLine) if kind is None or w.kind == kind for t in w.texts]
