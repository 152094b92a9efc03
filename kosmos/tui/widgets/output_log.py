"""A command's live output: a Log whose lines keep the colours the command printed."""

from __future__ import annotations

import re

from rich.style import Style
from rich.text import Text
from textual.selection import Selection
from textual.strip import Strip
from textual.widgets import Log

# The only escape sequences that reach this widget: `kosmos.tui.output` shows every other
# control character as a symbol before a line is written here.
SGR = re.compile(r"\x1b\[[0-9;:]*m")


class OutputLog(Log):
    """Lines with SGR sequences (`ls --color`, `systemctl status`, `grep --color`): drawn as
    colours, not counted in the width and not copied with a selection.

    It draws a line the way Log does, from Rich text decoded from ANSI instead of plain text.
    """

    @classmethod
    def _process_line(cls, line: str) -> str:
        # Log measures a line's width on this: the text without its colour sequences.
        return SGR.sub("", line).expandtabs()

    def _render_line_strip(self, y: int, rich_style: Style) -> Strip:
        selection = self.text_selection
        cached = self._render_line_cache.get(y) if selection is None else None
        if cached is not None:
            return cached
        text = Text.from_ansi(self._lines[y], no_wrap=True, end="")
        text.expand_tabs()
        # Under the line's own colours: the widget's style is the default they override.
        text.stylize_before(rich_style)
        if selection is not None:
            span = selection.get_span(y - self._clear_y)
            if span is not None:
                start, end = span
                if end == -1:
                    end = len(text)
                style = self.screen.get_component_rich_style("screen--selection")
                text.stylize(style, start, end)
        strip = Strip(text.render(self.app.console), text.cell_len)
        if selection is None:
            self._render_line_cache[y] = strip
        return strip

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        text = "\n".join(SGR.sub("", line) for line in self._lines)
        return selection.extract(text), "\n"
