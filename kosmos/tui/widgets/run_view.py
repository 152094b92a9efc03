"""A run's tab: a scrolling column of step widgets, newest at the bottom, kept in view."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from textual import on
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widget import AwaitMount, Widget
from textual.widgets import Static

from kosmos.engine.approval import unasked_line
from kosmos.engine.guard import visible
from kosmos.engine.parser import ACTION_TAGS
from kosmos.events import (
    Answer,
    CapabilityFallback,
    CommandDecision,
    CommandFinished,
    CommandStarted,
    Directive,
    FileRead,
    FormatError,
    KnowledgeLoaded,
    LLMReply,
    LLMRequest,
    LLMRetry,
    MemoryAction,
    Notice,
    ParamsUpdate,
    RunFinished,
    RunStarted,
    SkillFolderReady,
)
from kosmos.tui.focus import KeyRoutingApp
from kosmos.tui.messages import (
    ApprovalNeeded,
    Decided,
    EngineEvent,
    OutputReady,
    QuestionNeeded,
    RetryNeeded,
    RunStateChanged,
)
from kosmos.tui.paths import shown_path
from kosmos.tui.widgets.action import ActionStep
from kosmos.tui.widgets.command import CmdStep
from kosmos.tui.widgets.steps import AskStep, DoneCard, ErrorCard, MessageStep, Note, Thinking

if TYPE_CHECKING:
    from kosmos.tui.operator import TuiOperator
    from kosmos.tui.runs import RunController


# Streamed output reaches the screen at most this often (seconds).
FLUSH_INTERVAL = 0.1


class RunView(VerticalScroll):
    """Renders one run's events; hands the operator's decisions back to the engine."""

    def __init__(self, title: str, *, id: str | None = None) -> None:
        super().__init__(id=id, classes="run-view")
        self.run_title = visible(title)
        self.controller: RunController | None = None
        self.operator: TuiOperator | None = None
        self.cmd_steps: dict[int, CmdStep] = {}
        self.action_steps: dict[int, ActionStep] = {}
        self.asks: dict[int, AskStep] = {}
        self.thinking: Thinking | None = None
        self.knowledge: KnowledgeLoaded | None = None
        self.system_prompt: str | None = None
        self.done_text: str | None = None
        self.pending: Widget | None = None
        self.result: RunFinished | None = None
        self._last_flush = 0.0
        self._flush_scheduled = False

    def compose(self) -> ComposeResult:
        yield Static(self.run_title, classes="run-title", id="run-title", markup=False)

    # -- helpers ------------------------------------------------------------------------

    @property
    def gone(self) -> bool:
        """Removed (or being removed, or the app is closing): what is still queued for it is
        dropped; the transcript has every event all the same."""
        return not self.is_attached or self._closing or self._pruning

    def _add(self, widget: Widget) -> AwaitMount | None:
        if self.gone:
            return None
        at_end = self.is_vertical_scroll_end or self.max_scroll_y == 0
        mounted = self.mount(widget)
        if at_end:
            self.call_after_refresh(self.scroll_end, animate=False)
        return mounted

    async def _put(self, widget: Widget) -> None:
        """Mount and wait: a later event may act on the widget (the indicator's removal)."""
        mounted = self._add(widget)
        if mounted is not None:
            await mounted

    def _stop_thinking(self) -> None:
        if self.thinking is not None:
            if self.thinking.is_attached:
                self.thinking.remove()
            self.thinking = None

    async def _show_thinking(self, thinking: Thinking) -> None:
        if self.thinking is thinking:  # no reply yet
            await self._put(thinking)

    def _wait_for(self, widget: Widget) -> None:
        self.pending = widget
        self.post_message(RunStateChanged(self.id or ""))
        self.call_after_refresh(self.focus_pending, by_itself=True)

    def focus_pending(self, by_itself: bool = False) -> None:
        """Focus what this run waits on (if its tab is in front). `by_itself`: the run
        started to wait, the operator did not ask for it (a key pressed before then is not
        for it: kosmos.tui.focus)."""
        widget = self.pending
        if widget is not None and widget.is_attached and widget.display:
            what = getattr(widget, "focus_target", None)
            target = what() if what is not None else None
            if target is not None and by_itself and isinstance(self.app, KeyRoutingApp):
                self.app.take_focus(target, self)
            elif target is not None:
                target.focus()
            self.scroll_to_widget(widget, animate=False)

    @property
    def waiting(self) -> bool:
        return self.pending is not None

    async def _cmd_step(self, step: int, command: str) -> CmdStep:
        """The step's widget, mounted (created if the directive did not come first)."""
        widget = self.cmd_steps.get(step)
        if widget is None:
            widget = CmdStep(step, command)
            self.cmd_steps[step] = widget
            mounted = self._add(widget)
            if mounted is not None:
                await mounted
        return widget

    # -- what the operator asked for --------------------------------------------------------

    @on(Decided)
    def _decided(self, message: Decided) -> None:
        message.stop()
        if self.operator is not None and self.operator.resolve(message.value):
            self.pending = None
            self.post_message(RunStateChanged(self.id or ""))

    @on(ApprovalNeeded)
    async def _approval(self, message: ApprovalNeeded) -> None:
        if self.gone:
            return
        action = self.action_steps.get(message.proposal.step)
        if message.proposal.kind != "command" and action is not None:
            action.request(message.proposal)
            self._wait_for(action)
            return
        widget = await self._cmd_step(message.proposal.step, message.proposal.command)
        widget.request(message.proposal)
        self._wait_for(widget)

    @on(QuestionNeeded)
    async def _question(self, message: QuestionNeeded) -> None:
        if self.gone:
            return
        widget = AskStep(message.question)
        self.asks[message.question.step] = widget
        mounted = self._add(widget)
        if mounted is not None:
            await mounted
        self._wait_for(widget)

    @on(RetryNeeded)
    async def _retry(self, message: RetryNeeded) -> None:
        if self.gone:
            return
        self._stop_thinking()
        widget = ErrorCard(message.reason, message.kind)
        mounted = self._add(widget)
        if mounted is not None:
            await mounted
        self._wait_for(widget)

    # -- what the engine did ----------------------------------------------------------------

    @on(OutputReady)
    def _output(self, message: OutputReady) -> None:
        message.stop()
        # At most one write per FLUSH_INTERVAL: between two, chunks gather in the step's tail
        # (cheap appends), so a fast producer is read at full speed while keys stay responsive.
        wait = self._last_flush + FLUSH_INTERVAL - time.monotonic()
        if wait > 0:
            if not self._flush_scheduled:
                self._flush_scheduled = True
                self.set_timer(wait, self._flush)
            return
        self._flush()

    def _flush(self) -> None:
        """Write the output of every step that has some waiting (a late timer finds it all)."""
        self._flush_scheduled = False
        self._last_flush = time.monotonic()
        if self.controller is None or self.gone:
            return
        output = self.controller.output
        for step in output.pending:
            widget = self.cmd_steps.get(step)
            if widget is not None:
                widget.write(output.take(step))

    @on(EngineEvent)
    async def _event(self, message: EngineEvent) -> None:
        event = message.event
        if self.gone:
            return
        if isinstance(event, RunStarted):
            if event.transcript:
                title = self.query_one("#run-title", Static)
                title.update(f"{self.run_title} · transcript {shown_path(event.transcript)}")
            if event.lock and event.policy in ("read-only", "locked"):
                # Where commands run unasked from the start: the lock that holds them.
                await self._put(Note(f"policy {event.policy} · kernel lock {event.lock}"))
        elif isinstance(event, KnowledgeLoaded):
            self.knowledge = event
            await self._put(Note(f"System Context loaded from {event.path} (ctrl+o shows it)"))
        elif isinstance(event, SkillFolderReady):
            files = f"{len(event.files)} file{'s' if len(event.files) != 1 else ''}"
            await self._put(Note(f"skill files: {files} in {event.base} ({event.how})"))
        elif isinstance(event, FileRead | MemoryAction):
            step = self.action_steps.get(event.step)
            if step is not None:
                step.finished(event)
        elif isinstance(event, LLMRequest):
            if self.system_prompt is None:
                system = [m for m in event.new_messages if m.role == "system"]
                self.system_prompt = system[0].content if system else None
            self._stop_thinking()
            self.thinking = Thinking(event.step)
            # Mounted once the events queued already are handled: a view built from a host's
            # story has the reply right behind, and would mount the indicator, and remove it,
            # for every turn of the story.
            self.call_later(self._show_thinking, self.thinking)
        elif isinstance(event, LLMRetry):
            if self.thinking is not None:
                self.thinking.retrying(f"retry {event.attempt}: {event.reason}")
        elif isinstance(event, LLMReply):
            self._stop_thinking()
        elif isinstance(event, Directive):
            await self._directive(event)
        elif isinstance(event, CommandDecision):
            widget = await self._cmd_step(event.step, event.proposed)
            widget.decided(event.decision, event.command, event.reason, unasked_line(event))
        elif isinstance(event, CommandStarted):
            widget = await self._cmd_step(event.step, event.command)
            widget.started()
        elif isinstance(event, CommandFinished):
            widget = await self._cmd_step(event.step, event.command)
            if self.controller is not None:
                widget.write(self.controller.output.close(event.step))
            widget.finished(event)
        elif isinstance(event, Answer):
            ask = self.asks.get(event.step)
            if ask is not None:
                ask.answered(event.answer)
        elif isinstance(event, FormatError):
            await self._put(
                Note(f"step {event.step}: the reply had no tag ({event.count})", "warn")
            )
        elif isinstance(event, Notice):
            await self._put(Note(event.message, "warn"))
        elif isinstance(event, CapabilityFallback):
            await self._put(Note(f"{event.capability} refused: {event.reason}; using {event.next}"))
        elif isinstance(event, ParamsUpdate) and event.kind == "rejected":
            await self._put(Note(f"params rejected: {event.problems}", "warn"))
        elif isinstance(event, RunFinished):
            await self._finished(event)

    async def _directive(self, event: Directive) -> None:
        if event.said:
            await self._put(Note(event.said))
        if event.kind == "cmd":
            await self._cmd_step(event.step, event.text)
        elif event.kind == "message":
            await self._put(MessageStep(event.step, event.text))
        elif event.kind == "done":
            self.done_text = event.text
        elif event.kind in ACTION_TAGS:
            widget = ActionStep(event)
            self.action_steps[event.step] = widget
            await self._put(widget)

    async def _finished(self, event: RunFinished) -> None:
        self._stop_thinking()
        self.result = event
        self.pending = None
        text = self.done_text if event.status == "done" and self.done_text else event.message
        card = DoneCard(event, text)
        await self._put(card)
        self.call_after_refresh(self.scroll_end, animate=False)
        self.post_message(RunStateChanged(self.id or ""))
