"""What the steps of a run view share: their first line, and one restyle a focus change.

A step's first line: its tag (`[CMD] step 3`) and its state (`exit 0 · 0.2 s · 6 B`).

One widget draws both. A row of two labels was three widgets a step, each styled, laid out
and drawn; a host's run view is built from dozens of steps at once, and every widget in it is
paid for again at each layout of the screen. The state changes its text and its colour alone,
never the line's size: a new state repaints the line and lays nothing out.
"""

from __future__ import annotations

from rich.text import Text
from textual.containers import Vertical
from textual.widget import Widget

# The states a step's line shows in colour (a component class each, styled in kosmos.tcss).
STATE_CLASSES = ("awaiting", "running", "ok", "failed", "skipped")
GAP = "  "  # between the tag and the state


class StepHead(Widget):
    """`tag`, then the step's state in the colour of its kind (one of STATE_CLASSES, or none)."""

    COMPONENT_CLASSES = {"step-head--tag", *(f"step-head--{name}" for name in STATE_CLASSES)}

    DEFAULT_CSS = """
    StepHead {
        height: 1;
    }
    """

    def __init__(self, tag: str, state: str = "", kind: str = "") -> None:
        super().__init__(classes="step-head")
        self.tag = tag
        self.state = state
        self.kind = kind

    def set_state(self, state: str, kind: str = "") -> None:
        """Show `state`, coloured as `kind` (one of STATE_CLASSES, or "" for none)."""
        if (state, kind) != (self.state, self.kind):
            self.state, self.kind = state, kind
            self.refresh()

    def render(self) -> Text:
        line = Text(no_wrap=True, overflow="ellipsis", end="")
        line.append(self.tag, self.get_component_rich_style("step-head--tag", partial=True))
        if self.state:
            line.append(GAP)
            if self.kind in STATE_CLASSES:
                style = self.get_component_rich_style(f"step-head--{self.kind}", partial=True)
                line.append(self.state, style)
            else:
                line.append(self.state)
        return line


class FocusableStep(Vertical):
    """A step that takes the focus itself (it awaits the operator's word).

    The screen restyles a step, and every widget in it, each time the focus comes into it or
    leaves it (kosmos.tcss: `.step:focus-within`); Widget's own watcher would restyle them all
    a second time when the step itself gains or loses the focus. Only the step's own style
    reads its `:focus`, so the watcher restyles the step alone.
    """

    def watch_has_focus(self, has_focus: bool) -> None:
        if self._has_focus_within:
            self.app.stylesheet.update_nodes([self], animate=True)
        else:
            super().watch_has_focus(has_focus)
