"""The other step widgets of a run: [ASK], [MESSAGE], the [DONE] card, thinking, errors."""

from __future__ import annotations

import time

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Button, Input, Label, Markdown, Static

from kosmos.engine.guard import visible
from kosmos.engine.operator import Question
from kosmos.events import RunFinished
from kosmos.tui.messages import Decided
from kosmos.tui.paths import shown_path
from kosmos.tui.widgets.step_head import StepHead

STATUS_TITLES = {
    "done": "Done",
    "failed": "Failed",
    "step_limit": "Step limit reached",
    "needs_input": "Input needed",
    "error": "Error",
    "aborted": "Aborted",
}


class AskStep(Vertical):
    """[ASK] / [ASK:optional]: a question and a focused input; only optional ones can be skipped."""

    BINDINGS = [Binding("escape", "skip", "Skip question")]

    def __init__(self, question: Question) -> None:
        super().__init__(classes="step ask-step")
        self.question = question
        self.awaiting = True

    def compose(self) -> ComposeResult:
        tag = "[ASK]" if self.question.required else "[ASK:optional]"
        yield StepHead(f"{tag} step {self.question.step}", "awaiting answer", "awaiting")
        yield Static(visible(self.question.text), classes="question", markup=False)
        hint = "type an answer, enter submits" + (
            "" if self.question.required else "; escape or an empty answer skips"
        )
        yield Input(placeholder=hint, id="answer")
        yield Static("", classes="step-error", id="error", markup=False)

    def focus_target(self) -> Widget | None:
        """What takes the focus while the step waits."""
        return self.query_one("#answer", Input) if self.awaiting else None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "skip":
            return self.awaiting and not self.question.required
        return True

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if not self.awaiting:
            return
        value = event.value
        if not value.strip():
            if self.question.required:
                self.query_one("#error", Static).update(
                    "this question needs an answer; type one and press enter"
                )
                return
            self.post_message(Decided(None))
            return
        self.post_message(Decided(value))

    def action_skip(self) -> None:
        if self.awaiting and not self.question.required:
            self.post_message(Decided(None))

    def answered(self, answer: str | None) -> None:
        self.awaiting = False
        self.query_one("#error", Static).update("")
        skipped = answer is None or not answer.strip()
        head = self.query_one(StepHead)
        head.set_state(*(("skipped", "skipped") if skipped else ("answered", "ok")))
        answer_input = self.query_one("#answer", Input)
        text = "(no answer)" if skipped else f"→ {visible(answer or '')}"
        shown = Static(text, classes="answer", markup=False)
        self.mount(shown, after=answer_input)
        answer_input.remove()
        self.refresh_bindings()


class MessageStep(Vertical):
    """[MESSAGE]: rendered Markdown; the run continues by itself."""

    def __init__(self, step: int, text: str) -> None:
        super().__init__(classes="step message-step")
        self.step = step
        self.text = text

    def compose(self) -> ComposeResult:
        yield Label(f"[MESSAGE] step {self.step}", classes="tag", markup=False)
        yield Markdown(visible(self.text))


class DoneCard(Vertical):
    """The end of a run: result text, steps, duration, commands run, transcript path."""

    def __init__(self, result: RunFinished, text: str | None = None) -> None:
        css = "done-card" if result.status == "done" else "done-card failed"
        super().__init__(classes=f"step {css}")
        self.result = result
        self.text = visible(text if text is not None else result.message)

    def compose(self) -> ComposeResult:
        r = self.result
        title = STATUS_TITLES.get(r.status, r.status)
        tag = f"[DONE] {title}" if r.status == "done" else title
        yield Label(tag, classes="tag", markup=False)
        if r.status == "done":
            yield Markdown(self.text, id="result")
        else:
            yield Static(self.text, id="result", classes="step-error", markup=False)
        stats = (
            f"steps: {r.steps} · duration: {r.duration_s:.1f} s · commands run: "
            f"{r.commands_run} · exit code: {r.exit_code}"
        )
        yield Static(stats, classes="stats")
        if r.transcript:
            yield Static(
                f"transcript: {shown_path(r.transcript)}", classes="stats", id="transcript"
            )


class Thinking(Static):
    """The LLM is working on step N: elapsed time, retries."""

    def __init__(self, step: int) -> None:
        super().__init__("", classes="thinking", markup=False)
        self.step = step
        self.note = ""
        self._started = time.monotonic()
        self._timer: Timer | None = None

    def on_mount(self) -> None:
        self._tick(layout=True)
        self._timer = self.set_interval(0.25, self._tick)

    def retrying(self, note: str) -> None:
        self.note = note
        self._tick(layout=True)  # a note may take a second line

    def _tick(self, layout: bool = False) -> None:
        elapsed = time.monotonic() - self._started
        frames = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
        frame = frames[int(elapsed * 4) % len(frames)]
        note = f" · {self.note}" if self.note else ""
        # Four times a second: the same line, redrawn in place (no layout of the screen).
        self.update(f"{frame} thinking · step {self.step} · {elapsed:.1f} s{note}", layout=layout)


class ErrorCard(Vertical):
    """An LLM or host error mid-run: the one-line reason, Retry and End run."""

    BINDINGS = [
        Binding("r", "retry", "Retry"),
        Binding("escape", "give_up", "End run"),
    ]

    def __init__(self, reason: str, kind: str) -> None:
        super().__init__(classes="step error-card")
        self.reason = reason
        self.kind = kind
        self.awaiting = True

    def compose(self) -> ComposeResult:
        yield Label(f"{self.kind} error", classes="tag")
        yield Static(visible(self.reason), classes="step-error", id="reason", markup=False)
        with Horizontal(classes="actions shown"):
            yield Button("Retry", variant="warning", id="retry", compact=True)
            yield Button("End run", id="give-up", compact=True)

    def focus_target(self) -> Widget | None:
        """What takes the focus while the card waits."""
        return self.query_one("#retry", Button) if self.awaiting else None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self.awaiting if action in ("retry", "give_up") else True

    def _decide(self, value: bool) -> None:
        if self.awaiting:
            self.awaiting = False
            self.query_one(".actions").remove_class("shown")
            self.query_one("#reason", Static).update(
                f"{visible(self.reason)}\n{'retrying…' if value else 'run ended'}"
            )
            self.post_message(Decided(value))

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self._decide(event.button.id == "retry")

    def action_retry(self) -> None:
        self._decide(True)

    def action_give_up(self) -> None:
        self._decide(False)


class Note(Static):
    """A one-line notice in the run (a warning, a retry, the knowledge file loaded)."""

    def __init__(self, text: str, css: str = "") -> None:
        super().__init__(visible(text), classes=f"note {css}".strip(), markup=False)
