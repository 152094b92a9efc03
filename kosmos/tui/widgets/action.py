"""A [GET-FILE] or memory step: what the LLM asked for, Allow / Skip when asked, the outcome."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widget import Widget
from textual.widgets import Button, Static

from kosmos.engine.guard import visible
from kosmos.engine.operator import Approval, CommandProposal
from kosmos.engine.parser import ACTION_TAGS
from kosmos.events import Directive, FileRead, MemoryAction
from kosmos.tui.messages import Decided
from kosmos.tui.widgets.command import _size
from kosmos.tui.widgets.step_head import FocusableStep, StepHead

# Lines of a note's text shown under a [STORE] / [APPEND_MEMORY].
PREVIEW_LINES = 6

_DONE = {
    "store": "stored",
    "append": "appended",
    "retrieve": "retrieved",
    "list": "listed",
    "delete": "deleted",
}


class ActionStep(FocusableStep):
    """One [GET-FILE] or memory directive through its life: proposed, awaiting, done or not."""

    BINDINGS = [
        Binding("enter", "allow", "Allow"),
        Binding("s", "skip", "Skip"),
        Binding("a", "allow_reads", "Allow + reads unasked"),
    ]

    can_focus = True

    def __init__(self, directive: Directive) -> None:
        super().__init__(classes="step action-step")
        self.directive = directive
        self.step = directive.step
        self.proposal: CommandProposal | None = None
        self.awaiting = False
        self.state = "proposed"
        self.head = StepHead(f"{ACTION_TAGS[directive.kind]} step {directive.step}")

    def compose(self) -> ComposeResult:
        d = self.directive
        yield self.head
        if d.text:
            yield Static(visible(d.text), classes="target", id="target", markup=False)
        lines = d.content.splitlines()
        if lines:
            shown = lines[:PREVIEW_LINES]
            if len(lines) > PREVIEW_LINES:
                shown.append(f"… {len(lines) - PREVIEW_LINES} more lines")
            yield Static(visible("\n".join(shown)), classes="preview", id="preview", markup=False)
        yield Static("", classes="risk", id="risk", markup=False)
        with Horizontal(classes="actions", id="actions"):
            yield Button("Allow", variant="success", id="allow", compact=True)
            yield Button("Skip", id="skip", compact=True)
        yield Static("", classes="outcome", id="outcome", markup=False)

    # -- what the run view calls ----------------------------------------------------------

    def request(self, proposal: CommandProposal) -> None:
        """The engine awaits the operator's word on this read or memory write."""
        self.proposal = proposal
        self.awaiting = True
        self._set_state("awaiting approval", "awaiting")
        risk = self.query_one("#risk", Static)
        risk.update(visible(proposal.reason or proposal.risk.replace("_", "-")))
        risk.set_class(True, "shown")
        self.query_one("#actions").set_class(True, "shown")
        self.refresh_bindings()

    def focus_target(self) -> Widget | None:
        """What takes the focus while the step waits (its run focuses it)."""
        return self if self.awaiting else None

    def finished(self, event: FileRead | MemoryAction) -> None:
        """What became of it: done (with its size), an error, skipped or refused."""
        self.awaiting = False
        self.query_one("#actions").set_class(False, "shown")
        self.query_one("#risk", Static).set_class(False, "shown")
        outcome = self.query_one("#outcome", Static)
        if event.status == "done":
            verb = "read" if isinstance(event, FileRead) else _DONE[event.action]
            size = f" · {_size(event.bytes)}" if event.bytes else ""
            self._set_state(f"{verb}{size}", "ok")
        elif event.status == "skipped":
            self._set_state("skipped", "skipped")
        else:
            self._set_state(event.status, "failed")
            outcome.update(visible(event.reason))
        self.refresh_bindings()

    def _set_state(self, text: str, css: str) -> None:
        self.state = css
        self.head.set_state(text, css)

    # -- the operator's word ----------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "allow":
            # A dangerous one would need the host's name typed; reads and notes never are.
            return self.awaiting and self.proposal is not None and self.proposal.risk != "dangerous"
        if action == "skip":
            return self.awaiting
        if action == "allow_reads":
            return self.awaiting and self.proposal is not None and self.proposal.risk == "read_only"
        return True

    def _decide(self, approval: Approval) -> None:
        if self.awaiting:
            self.post_message(Decided(approval))

    def action_allow(self) -> None:
        self._decide(Approval.run())

    def action_allow_reads(self) -> None:
        self._decide(Approval("run", auto_read_only=True))

    def action_skip(self) -> None:
        self._decide(Approval.skip())

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "allow" and self.check_action("allow", ()):
            self.action_allow()
        elif event.button.id == "skip":
            self.action_skip()
