"""A run's tab: a scrolling column of step widgets, newest at the bottom, kept in view."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import on
from textual.containers import VerticalScroll
from textual.widget import Widget
from textual.widgets import Static

from kosmos.events import (
    Answer,
    CapabilityFallback,
    CommandDecision,
    CommandFinished,
    CommandStarted,
    Directive,
    FormatError,
    KnowledgeLoaded,
    LLMReply,
    LLMRequest,
    LLMRetry,
    Notice,
    ParamsUpdate,
    RunFinished,
    RunStarted,
)
from kosmos.tui.messages import (
    ApprovalNeeded,
    Decided,
    EngineEvent,
    OutputReady,
    QuestionNeeded,
    RetryNeeded,
    RunStateChanged,
)
from kosmos.tui.widgets.command import CmdStep
from kosmos.tui.widgets.steps import AskStep, DoneCard, ErrorCard, MessageStep, Note, Thinking

if TYPE_CHECKING:
    from kosmos.tui.runs import RunController


class RunView(VerticalScroll):
    """Renders one run's events; hands the operator's decisions back to the engine."""

    def __init__(self, title: str, *, id: str | None = None) -> None:
        super().__init__(id=id, classes="run-view")
        self.run_title = title
        self.controller: RunController | None = None
        self.cmd_steps: dict[int, CmdStep] = {}
        self.asks: dict[int, AskStep] = {}
        self.thinking: Thinking | None = None
        self.knowledge: KnowledgeLoaded | None = None
        self.system_prompt: str | None = None
        self.done_text: str | None = None
        self.pending: Widget | None = None
        self.result: RunFinished | None = None

    def compose(self):  # noqa: ANN201 - ComposeResult
        yield Static(self.run_title, classes="run-title", id="run-title")

    # -- helpers ------------------------------------------------------------------------

    def _add(self, widget: Widget) -> None:
        at_end = self.is_vertical_scroll_end or self.max_scroll_y == 0
        self.mount(widget)
        if at_end or self.pending is widget:
            self.call_after_refresh(self.scroll_end, animate=False)

    def _stop_thinking(self) -> None:
        if self.thinking is not None:
            self.thinking.remove()
            self.thinking = None

    def _wait_for(self, widget: Widget) -> None:
        self.pending = widget
        self.post_message(RunStateChanged(self.id or ""))
        self.call_after_refresh(self.focus_pending)

    def focus_pending(self) -> None:
        """Focus what this run waits on (if its tab is in front)."""
        widget = self.pending
        if widget is not None and widget.is_attached and widget.display:
            focus = getattr(widget, "focus_input", None)
            if focus is not None:
                focus()
            self.scroll_to_widget(widget, animate=False)

    @property
    def waiting(self) -> bool:
        return self.pending is not None

    def _cmd_step(self, step: int, command: str) -> CmdStep:
        widget = self.cmd_steps.get(step)
        if widget is None:
            widget = CmdStep(step, command)
            self.cmd_steps[step] = widget
            self._add(widget)
        return widget

    # -- what the operator asked for --------------------------------------------------------

    @on(Decided)
    def _decided(self, message: Decided) -> None:
        message.stop()
        if self.controller is not None and self.controller.operator.resolve(message.value):
            self.pending = None
            self.post_message(RunStateChanged(self.id or ""))

    @on(ApprovalNeeded)
    def _approval(self, message: ApprovalNeeded) -> None:
        widget = self._cmd_step(message.proposal.step, message.proposal.command)
        widget.request(message.proposal)
        self._wait_for(widget)

    @on(QuestionNeeded)
    def _question(self, message: QuestionNeeded) -> None:
        widget = AskStep(message.question)
        self.asks[message.question.step] = widget
        self._add(widget)
        self._wait_for(widget)

    @on(RetryNeeded)
    def _retry(self, message: RetryNeeded) -> None:
        self._stop_thinking()
        widget = ErrorCard(message.reason, message.kind)
        self._add(widget)
        self._wait_for(widget)

    # -- what the engine did ----------------------------------------------------------------

    @on(OutputReady)
    def _output(self, message: OutputReady) -> None:
        widget = self.cmd_steps.get(message.step)
        if widget is not None and self.controller is not None:
            widget.write(self.controller.output.take())

    @on(EngineEvent)
    def _event(self, message: EngineEvent) -> None:  # noqa: C901 - one branch per event type
        event = message.event
        if isinstance(event, RunStarted):
            if event.transcript:
                title = self.query_one("#run-title", Static)
                title.update(f"{self.run_title} · transcript {event.transcript}")
        elif isinstance(event, KnowledgeLoaded):
            self.knowledge = event
            self._add(Note(f"System Context loaded from {event.path} (ctrl+o shows it)"))
        elif isinstance(event, LLMRequest):
            if self.system_prompt is None:
                system = [m for m in event.new_messages if m.role == "system"]
                self.system_prompt = system[0].content if system else None
            self._stop_thinking()
            self.thinking = Thinking(event.step)
            self._add(self.thinking)
        elif isinstance(event, LLMRetry):
            if self.thinking is not None:
                self.thinking.retrying(f"retry {event.attempt}: {event.reason}")
        elif isinstance(event, LLMReply):
            self._stop_thinking()
        elif isinstance(event, Directive):
            self._directive(event)
        elif isinstance(event, CommandDecision):
            self._cmd_step(event.step, event.proposed).decided(event.decision, event.command)
        elif isinstance(event, CommandStarted):
            self._cmd_step(event.step, event.command).started()
        elif isinstance(event, CommandFinished):
            widget = self._cmd_step(event.step, event.command)
            if self.controller is not None:
                widget.write(self.controller.output.take())
            widget.finished(event)
        elif isinstance(event, Answer):
            ask = self.asks.get(event.step)
            if ask is not None:
                ask.answered(event.answer)
        elif isinstance(event, FormatError):
            self._add(Note(f"step {event.step}: the reply had no tag ({event.count})", "warn"))
        elif isinstance(event, Notice):
            self._add(Note(event.message, "warn"))
        elif isinstance(event, CapabilityFallback):
            self._add(Note(f"{event.capability} refused: {event.reason}; using {event.next}"))
        elif isinstance(event, ParamsUpdate) and event.kind == "rejected":
            self._add(Note(f"params rejected: {event.problems}", "warn"))
        elif isinstance(event, RunFinished):
            self._finished(event)

    def _directive(self, event: Directive) -> None:
        if event.said:
            self._add(Note(event.said))
        if event.kind == "cmd":
            self._cmd_step(event.step, event.text)
        elif event.kind == "message":
            self._add(MessageStep(event.step, event.text))
        elif event.kind == "done":
            self.done_text = event.text

    def _finished(self, event: RunFinished) -> None:
        self._stop_thinking()
        self.result = event
        self.pending = None
        text = self.done_text if event.status == "done" and self.done_text else event.message
        card = DoneCard(event, text)
        self._add(card)
        self.call_after_refresh(self.scroll_end, animate=False)
        self.post_message(RunStateChanged(self.id or ""))
