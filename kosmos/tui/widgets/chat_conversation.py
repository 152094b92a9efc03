"""The chat screen's conversation: the operator's lines, the agent's texts, embedded skill runs."""

from __future__ import annotations

from dataclasses import dataclass

from rich.segment import Segment
from rich.style import Style as RichStyle
from textual import on
from textual.containers import VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.strip import Strip
from textual.visual import Visual
from textual.widget import Widget
from textual.widgets import Static

# The agent's kinds (kosmos.chat.agent.Kind), the operator's lines and the screen's own notes.
KINDS = frozenset({"progress", "result", "error", "help", "reason", "operator", "note"})
# Kinds whose lines sit close to the next one (no blank row after them), as in kosmos.tcss.
CLOSE_KINDS = frozenset({"progress", "note"})
# The newest widgets of a conversation stay as they are; older lines fold into a ChatHistory.
KEEP = 24


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


class ChatHistory(Widget):
    """Earlier lines of the conversation in one widget that draws only the rows in view.

    Every widget in the conversation costs each layout and each refresh, so a chat of many
    turns would slow down turn after turn; folded here, old lines cost almost nothing. Each
    kind is styled by its `chat-history--KIND` component class (kosmos.tcss).
    """

    COMPONENT_CLASSES = {f"chat-history--{kind}" for kind in KINDS}

    def __init__(self) -> None:
        super().__init__(classes="chat-history")
        self.entries: list[tuple[list[str], str]] = []  # a folded ChatLine's texts, its kind
        self._rows: list[Strip] = []
        self._width = -1
        self._laid_out = 0  # entries already in `_rows`

    def add(self, texts: list[str], kind: str) -> None:
        self.entries.append((texts, kind))
        self.refresh(layout=True)

    def get_content_height(self, container: object, viewport: object, width: int) -> int:
        return len(self._lay_out(width))

    def render_line(self, y: int) -> Strip:
        rows = self._lay_out(self.size.width)
        if y < len(rows):
            return rows[y]
        return Strip.blank(self.size.width, self.visual_style.rich_style)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._width = -1  # a theme change: draw every row again

    def _lay_out(self, width: int) -> list[Strip]:
        """The rows at `width`: only entries added since the last call are drawn."""
        if width != self._width:
            self._width, self._rows, self._laid_out = width, [], 0
        for texts, kind in self.entries[self._laid_out :]:
            self._rows.extend(self._draw("\n".join(texts), kind, width))
        self._laid_out = len(self.entries)
        return self._rows

    def _draw(self, text: str, kind: str, width: int) -> list[Strip]:
        component = f"chat-history--{kind}"
        style = self.get_visual_style(component)
        blank = RichStyle(bgcolor=self.visual_style.rich_style.bgcolor)  # as margins draw
        edge, edge_color = self.get_component_styles(component).border_left
        lead = Strip.blank(0)
        if edge:  # the bar a border-left draws, and a space, before each row
            bar = blank + RichStyle(color=edge_color.rich_color)
            lead = Strip([Segment("█", bar), Segment(" ", blank)], 2)
        room = max(width - lead.cell_length, 1)
        strips = [
            Strip.join([lead, strip.extend_cell_length(room, blank)])
            for strip in Visual.to_strips(
                self, Content(text), room, None, style, apply_selection=False
            )
        ]
        if kind not in CLOSE_KINDS:
            strips.append(Strip.blank(width, blank))
        return strips


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
        if message.kind == "operator":
            self._fold()  # a new request: the last ones are done
        self._append(ChatLine(message.text, message.kind))

    def _fold(self) -> None:
        """Fold the lines older than the newest KEEP widgets into history blocks.

        A run of lines becomes one ChatHistory (or joins the one before it); a skill's run view
        stays a widget of its own between two blocks.
        """
        children = list(self.children)
        if len(children) <= KEEP:
            return
        history: ChatHistory | None = None
        folded: list[Widget] = []
        for widget in children[:-KEEP]:
            if isinstance(widget, ChatHistory):
                history = widget
            elif isinstance(widget, ChatLine):
                if history is None:
                    history = ChatHistory()
                    self.mount(history, before=widget)
                history.add(widget.texts, widget.kind)
                folded.append(widget)
            else:
                history = None
        if folded:
            self.remove_children(folded)

    @on(ChatShow)
    def _show(self, message: ChatShow) -> None:
        message.stop()
        self._append(message.widget)

    def lines(self, kind: str | None = None) -> list[str]:
        """The texts shown so far (of one kind), folded or not, for the screen and its tests."""
        said: list[tuple[list[str], str]] = []
        for widget in self.children:
            if isinstance(widget, ChatHistory):
                said.extend(widget.entries)
            elif isinstance(widget, ChatLine):
                said.append((widget.texts, widget.kind))
        return [text for texts, k in said if kind is None or k == kind for text in texts]
