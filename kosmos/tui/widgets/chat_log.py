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
    """One text of the conversation, styled by its kind."""

    def __init__(self, text: str, kind: str) -> None:
        kind = kind if kind in KINDS else "progress"
        super().__init__(text, markup=False, classes=f"chat-line chat-{kind}")
        self.text = text
        self.kind = kind


class ChatLog(VerticalScroll):
    """Everything said, in order, the newest kept in view.

    Lines and widgets arrive as messages, so a worker's texts and the run views it opens keep
    the order in which the agent produced them.
    """

    def _append(self, widget: Widget) -> None:
        self.mount(widget)
        self.follow()

    def follow(self) -> None:
        """Something was added or grew (a run view's step): show the newest part."""
        self.call_after_refresh(self.scroll_end, animate=False)

    @on(ChatSaid)
    def _said(self, message: ChatSaid) -> None:
        message.stop()
        self._append(ChatLine(message.text, message.kind))

    @on(ChatShow)
    def _show(self, message: ChatShow) -> None:
        message.stop()
        self._append(message.widget)

    def lines(self, kind: str | None = None) -> list[str]:
        """The texts shown so far (of one kind), for the screen and its tests."""
        return [w.text for w in self.query(ChatLine) if kind is None or w.kind == kind]
