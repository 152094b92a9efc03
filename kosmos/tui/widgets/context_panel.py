"""The System Context side panel: what the LLM was told about the host and the skill."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Label, Static

from kosmos.engine.guard import visible
from kosmos.events import KnowledgeLoaded


class ContextPanel(VerticalScroll):
    """The host's knowledge file and the whole system prompt of the run in front."""

    def compose(self) -> ComposeResult:
        yield Label("System Context", classes="section")
        yield Static("", id="knowledge", markup=False)
        yield Label("System prompt sent to the LLM", classes="section")
        yield Static("", id="system-prompt", markup=False)

    def show(self, knowledge: KnowledgeLoaded | None, system_prompt: str | None) -> None:
        if knowledge is None:
            text = "No knowledge file on this host (./.kosmos-panel/ai_system_promt.md, "
            text += "~/.config/kosmos-panel/ai_system_promt.md, or spelled prompt)."
        else:
            text = f"from {knowledge.path}:\n\n{knowledge.text}"
        self.query_one("#knowledge", Static).update(visible(text))
        waiting = "Not sent yet: start a run, or bring a run's tab to the front."
        self.query_one("#system-prompt", Static).update(visible(system_prompt or "") or waiting)
