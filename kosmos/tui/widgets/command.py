"""The [CMD] step: the command, its state, Run / Skip / Edit, and its live bounded output."""

from __future__ import annotations

import dataclasses
import time

from rich.syntax import Syntax
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Button, Input, Static

from kosmos.engine.guard import visible
from kosmos.engine.operator import Approval, CommandProposal
from kosmos.events import CommandFinished
from kosmos.tui.messages import Decided
from kosmos.tui.output import LINE_END
from kosmos.tui.widgets.output_log import OutputLog
from kosmos.tui.widgets.step_head import FocusableStep, StepHead

# Lines the output area keeps; older ones scroll away (the transcript keeps head and tail).
LOG_LINES = 500


def _size(count: int) -> str:
    size = float(count)
    for unit in ("B", "KB", "MB"):
        if size < 1024 or unit == "MB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{count} B"


def command_syntax(command: str) -> Syntax:
    """The command as it will run, every line of it; a control character shows as a symbol."""
    return Syntax(
        visible(command), "bash", theme="ansi_dark", word_wrap=True, background_color="default"
    )


class CmdStep(FocusableStep):
    """One proposed command through its life: awaiting approval, running, finished or skipped."""

    BINDINGS = [
        Binding("enter", "run", "Run"),
        Binding("s", "skip", "Skip"),
        Binding("e", "edit", "Edit"),
        Binding("a", "run_auto", "Run + auto read-only"),
        Binding("escape", "cancel_edit", "Back", show=False),
    ]

    # The step itself takes the focus while it awaits approval, so that its keys (enter, s, e)
    # are the ones the footer shows; the buttons are there for the mouse and for tab.
    can_focus = True

    def __init__(self, step: int, command: str) -> None:
        super().__init__(classes="step cmd-step")
        self.step = step
        self.command = command
        self.proposal: CommandProposal | None = None
        self.awaiting = False
        self.state = "proposed"
        self._started = 0.0
        self._timer: Timer | None = None
        self._after_cr = False
        # What a dangerous command's host-name confirmation approves (the command or its edit).
        self._confirmed = Approval.run()
        self.head = StepHead(f"[CMD] step {step}", "proposed")

    def compose(self) -> ComposeResult:
        yield self.head
        yield Static(command_syntax(self.command), classes="command", id="command")
        # The risk line, Run / Skip / Edit and the two inputs come with the step's first
        # request (`_controls`), the error line with its first error (`_say`): most steps a
        # run view is built with have long been decided, and these widgets were more than
        # half of what mounting one cost.
        # One more than LOG_LINES: the log counts the empty line after the last line break.
        yield OutputLog(max_lines=LOG_LINES + 1, classes="output", id="output")

    def _controls(self) -> None:
        """Mount the risk line, the buttons and the inputs under the command, once (before an
        error line already there, whatever came first)."""
        if self.query("#actions"):
            return
        actions = Horizontal(
            Button("Run", variant="success", id="run", compact=True),
            Button("Skip", id="skip", compact=True),
            Button("Edit", id="edit", compact=True),
            classes="actions",
            id="actions",
        )
        edit = Input(
            classes="edit-input",
            id="edit-input",
            placeholder="edit the command; enter runs it, escape goes back",
            select_on_focus=False,
        )
        confirm = Input(classes="confirm-input", id="confirm-input")
        risk = Static("", classes="risk", id="risk", markup=False)
        self.mount(risk, actions, edit, confirm, after="#command")

    def _say(self, text: str) -> None:
        """The step's error line (a refusal, an empty edit), mounted when first needed."""
        said = self.query("#error")
        if said:
            said.first(Static).update(text)
        elif text:
            self.mount(
                Static(text, classes="step-error", id="error", markup=False), before="#output"
            )

    # -- what the run view calls ----------------------------------------------------------

    def request(self, proposal: CommandProposal) -> None:
        """The engine awaits the operator's decision on this command."""
        self.proposal = proposal
        self.awaiting = True
        self._set_state("awaiting approval", "awaiting")
        self._controls()
        risk = self.query_one("#risk", Static)
        if proposal.risk == "dangerous":
            reason = proposal.reason or "this command can destroy data"
            risk.update(visible(f"dangerous: {reason}; running it takes typing the host's name"))
            risk.set_class(True, "dangerous", "shown")
        else:
            notes = [proposal.reason or proposal.risk.replace("_", "-")]
            if proposal.inferred:
                notes.append("the reply had no tag: read the command before running it")
            risk.update(visible(" · ".join(notes)))
            risk.set_class(True, "shown")
        self.query_one("#actions").set_class(True, "shown")
        self._keys_changed()  # its run focuses it

    def focus_target(self) -> Widget | None:
        """What the operator acts on now."""
        inputs = {widget.id: widget for widget in self.query(Input)}  # none before a request
        for name in ("confirm-input", "edit-input"):
            widget = inputs.get(name)
            if widget is not None and widget.has_class("shown"):
                return widget
        return self if self.awaiting else None

    def decided(self, decision: str, command: str, reason: str = "", unasked: str = "") -> None:
        """`unasked`: why it ran with nobody asked here (`approval.unasked_line`), or ""."""
        self.awaiting = False
        self.query("#actions, #edit-input, #confirm-input").set_class(False, "shown")
        # A refusal says why (the host's name was not typed, a read-only policy...).
        self._say(reason if decision == "refused" else "")
        if unasked and not self.query("#unasked"):
            self.mount(
                Static(visible(unasked), classes="step-note", id="unasked", markup=False),
                before="#output",
            )
        if command != self.command:
            self.command = command
            self.query_one("#command", Static).update(command_syntax(command))
            self.add_class("edited")
        if decision == "skip":
            self._set_state("skipped", "skipped")
        elif decision == "refused":
            self._set_state("refused", "failed")
        self._keys_changed()

    def _keys_changed(self) -> None:
        # The footer shows these keys only while the step has the focus; refreshing it costs a
        # rebuild of the footer, which a fleet's run views, built from many events, would pay
        # for every step.
        if self.has_focus_within:
            self.refresh_bindings()

    def started(self) -> None:
        self._started = time.monotonic()
        self._set_state("running 0.0 s", "running")
        self.query_one("#output", OutputLog).set_class(True, "shown")
        self._timer = self.set_interval(0.5, self._tick)

    def _tick(self) -> None:
        elapsed = time.monotonic() - self._started
        self.head.set_state(f"running {elapsed:.1f} s", "running")

    def write(self, text: str) -> None:
        """Append output as it came: blank lines, leading blanks, a line not ended yet.

        `Log.write` keeps every line (its `write_lines` drops empty ones); only the newest
        LOG_LINES lines of a batch are given to it, the rest would scroll away at once.
        """
        if self._after_cr and text.startswith("\n"):
            text = text[1:]  # a CR LF split between two batches ends one line, not two
        if not text:
            return
        self._after_cr = text.endswith("\r")
        ends = [m.end() for m in LINE_END.finditer(text)]
        if len(ends) > LOG_LINES:
            text = text[ends[-LOG_LINES - 1] :]
        self.query_one("#output", OutputLog).write(text)

    def finished(self, event: CommandFinished) -> None:
        if self._timer is not None:
            self._timer.stop()
        if event.timed_out:
            state, css = f"timed out after {event.duration_s:.1f} s", "failed"
        elif event.cancelled:
            state, css = f"stopped after {event.duration_s:.1f} s", "failed"
        elif event.connection_lost:
            state, css = "connection lost", "failed"
        else:
            code = "?" if event.exit_code is None else event.exit_code
            state = f"exit {code} · {event.duration_s:.1f} s"
            css = "ok" if event.exit_code == 0 else "failed"
        self._set_state(f"{state} · {_size(event.bytes)}", css)
        if event.bytes == 0:
            self.query_one("#output", OutputLog).set_class(False, "shown")

    def _set_state(self, text: str, css: str) -> None:
        self.state = css
        self.head.set_state(text, css)

    # -- the operator's decisions -----------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("run", "skip", "edit", "run_auto"):
            if not self.awaiting:
                return False
            if action == "run_auto":
                return self.proposal is not None and self.proposal.risk == "read_only"
        return True

    def _decide(self, approval: Approval) -> None:
        if self.awaiting:
            self.post_message(Decided(approval))

    def action_run(self, edited: str | None = None) -> None:
        """Run the command (or its edit); a dangerous one first asks for the host's name."""
        assert self.proposal is not None
        approval = Approval.edit(edited) if edited else Approval.run()
        if self.proposal.risk == "dangerous":
            self._confirmed = approval
            self.query_one("#edit-input", Input).set_class(False, "shown")
            confirm = self.query_one("#confirm-input", Input)
            confirm.placeholder = f"type {self.proposal.host} to run this command"
            confirm.set_class(True, "shown")
            confirm.focus()
            return
        self._decide(approval)

    def action_run_auto(self) -> None:
        self._decide(Approval("run", auto_read_only=True))

    def action_skip(self) -> None:
        self._decide(Approval.skip())

    def action_edit(self) -> None:
        edit = self.query_one("#edit-input", Input)
        edit.value = self.command
        edit.cursor_position = len(edit.value)
        edit.set_class(True, "shown")
        edit.focus()

    def action_cancel_edit(self) -> None:
        self.query("#edit-input, #confirm-input").set_class(False, "shown")
        self._say("")
        target = self.focus_target()
        if target is not None:
            target.focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        actions = {"run": self.action_run, "skip": self.action_skip, "edit": self.action_edit}
        if self.awaiting and event.button.id in actions:
            actions[event.button.id]()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if not self.awaiting or self.proposal is None:
            return
        value = event.value.strip()
        if event.input.id == "confirm-input":
            # What was typed goes to the engine, which runs the command only for the host's name.
            if value:
                self._decide(dataclasses.replace(self._confirmed, typed=value))
            else:
                self._say(f"type {self.proposal.host} to run it, or press s to skip")
            return
        if not value:
            self._say("the command is empty; type one, or press escape to go back")
        elif value == self.proposal.command:
            self.action_cancel_edit()
            self.action_run()
        else:
            self.action_run(edited=value)
