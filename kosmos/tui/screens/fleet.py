"""The fleet screen: one skill on several hosts, a live table, the selected host's run below it.

The fleet runs in a thread of its own; this screen drains what it sends in batches, redraws the
table's rows in view four times a second, and builds a host's run view only when the host is
shown, from the events its `HostFeed` keeps.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Static

from kosmos.events import Event
from kosmos.fleet.approvals import AnswerRequest, ApprovalRequest
from kosmos.fleet.orchestrator import HostRun
from kosmos.fleet.targets import HostSpec
from kosmos.skills.model import Skill
from kosmos.tui.fleet_feed import Ask, Asked, HostFeed, OnScreen, Waiting
from kosmos.tui.fleet_host_view import HostView
from kosmos.tui.fleet_runs import FleetController, FleetSpec, RunnerFactory
from kosmos.tui.fleet_thread import FleetThread, Outbox
from kosmos.tui.messages import RunStateChanged
from kosmos.tui.parts import TuiParts
from kosmos.tui.widgets.fleet_approval import ApprovalBar, FleetSummary, RunOnAll
from kosmos.tui.widgets.fleet_table import FleetTable
from kosmos.tui.widgets.keys import Keys
from kosmos.tui.widgets.run_view import RunView
from kosmos.tui.widgets.steps import Note

if TYPE_CHECKING:
    from kosmos.tui.widgets.sidebar import Sidebar

# The table's rows in view are redrawn this often (seconds) while the fleet runs.
REDRAW_S = 0.25
# A host highlighted in the table is shown once the cursor has rested on it this long: holding
# a key down through a thousand hosts builds no thousand run views.
SHOW_AFTER_S = 0.5


class FleetNews(Message):
    """The fleet's outbox has something (one message per batch, however many items)."""


@dataclass
class FleetEnded(Message):
    """The fleet's thread has ended: with its result, or with `error`."""

    error: BaseException | None


@dataclass
class Released(Message):
    """`A` released `count` hosts waiting on `command` (the fleet's answer)."""

    command: str
    count: int


class FleetScreen(Screen[None]):
    """Runs one skill on every host of `spec` once started (after a canary, if one is picked);
    enter opens a host's run view."""

    CSS_PATH = Path(__file__).parent.parent / "fleet.tcss"

    BINDINGS = [
        Binding("ctrl+r", "start", "Start"),
        Binding("c", "canary", "Canary"),
        Binding("A", "run_all", "Run on all"),
        Binding("ctrl+o", "open_host", "Open host"),
        Binding("ctrl+t", "focus_table", "Hosts"),
        Binding("ctrl+c", "stop_command", "Stop command", priority=True),
        Binding("ctrl+w", "close", "Close"),
    ]

    def __init__(
        self, spec: FleetSpec, parts: TuiParts, *, open_runner: RunnerFactory | None = None
    ) -> None:
        super().__init__()
        self.spec = spec
        self.parts = parts
        self.open_runner = open_runner
        self.feeds = {h.name: HostFeed(h.name) for h in spec.hosts}
        self.controller: FleetController | None = None
        self.thread: FleetThread | None = None
        self.outbox = Outbox(lambda: None)
        self.host_view = HostView(
            lambda: self.query_one("#fleet-hosts", Vertical),
            self.feeds,
            lambda host: f"{spec.skill.name} @ {host}",
            self._refresh_keys,
        )
        self.canary = spec.canary
        self.finished = False
        # What the table shows until the operator starts the fleet.
        self._ready = [HostRun(h, canary=h.name == spec.canary) for h in spec.hosts]
        self._live = False
        self._ticker: Timer | None = None
        self._show_timer: Timer | None = None
        self._offered: tuple[bool, ...] = ()

    def _title(self) -> str:
        spec = self.spec
        title = f"▶ {spec.skill.name} on {len(spec.hosts)} hosts · forks {spec.forks}"
        if spec.llm_concurrency:
            title += f" · LLM requests {spec.llm_concurrency} at once"
        if self.canary:
            title += f" · canary {self.canary} first, the others only if it is done"
        if self.controller is None:
            title += " · ready: ctrl+r starts"
        return title

    @property
    def started(self) -> bool:
        return self.controller is not None

    def compose(self) -> ComposeResult:
        yield Static(self._title(), id="fleet-title", markup=False)
        yield FleetTable()
        yield ApprovalBar()
        yield Vertical(id="fleet-hosts")
        yield Keys()

    @property
    def table(self) -> FleetTable:
        return self.query_one(FleetTable)

    @property
    def bar(self) -> ApprovalBar:
        return self.query_one(ApprovalBar)

    def on_mount(self) -> None:
        self.table.set_runs(self._ready)
        self.show_host(self.spec.hosts[0].name)
        self.table.focus()

    def action_start(self) -> None:
        """Start every host (the canary alone first, when there is one)."""
        if self.started:
            return
        parts = self.parts
        loop = asyncio.get_running_loop()

        def wake() -> None:  # the fleet's thread: one drain per batch
            with contextlib.suppress(RuntimeError):  # the app's loop has closed
                loop.call_soon_threadsafe(self.post_message, FleetNews())

        self.outbox = Outbox(wake)
        self.thread = thread = FleetThread()
        for feed in self.feeds.values():
            feed.call = thread.call
        self.controller = FleetController(
            spec=replace(self.spec, canary=self.canary),
            settings=parts.config.settings,
            prompts=parts.config.prompts,
            prompter=parts.prompter,
            redactor=parts.new_redactor(),
            feeds=self.feeds,
            outbox=self.outbox,
            answer_all=lambda: self.bar.answer_all,
            open_runner=self.open_runner,
            passphrases=parts.pool.passphrases,
        )

        def ended(error: BaseException | None) -> None:  # the fleet's thread, at its end
            self.outbox.put(FleetEnded(error))

        thread.start(self.controller.run, ended)
        self.query_one("#fleet-title", Static).update(self._title())
        self._ticker = self.set_interval(REDRAW_S, self._redraw)
        self._refresh_keys()

    def action_canary(self) -> None:
        """The highlighted host becomes the canary (again on the canary: no canary)."""
        host = self.table.highlighted_host
        if self.started or host is None:
            return
        self.canary = None if host == self.canary else host
        for run in self._ready:
            run.canary = run.name == self.canary
        self.query_one("#fleet-title", Static).update(self._title())
        self.table.tick()
        if self.canary is None:
            self.notify("no canary: every host starts at once")
        else:
            self.notify(f"canary: {host} runs first; the others follow only if it is done")

    # -- what the fleet sends ---------------------------------------------------------------

    @on(FleetNews)
    def _news(self) -> None:
        for item in self.outbox.drain():
            if isinstance(item, Event):
                self.feeds[item.host or ""].take(item)
            elif isinstance(item, Ask):
                self.feeds[item.host].ask(item)
            elif isinstance(item, Asked):
                self.feeds[item.host].asked(item)
            elif isinstance(item, Waiting):
                self._waiting(item.request)
            elif isinstance(item, OnScreen):
                self.run_worker(self._on_screen(item), group="fleet-modal")
            elif isinstance(item, Released):
                self.notify(
                    f"`{item.command}`: released {item.count} waiting host(s); "
                    "hosts that propose it later run it unasked"
                )
            elif isinstance(item, FleetEnded):
                self._finished(item.error)

    async def _on_screen(self, item: OnScreen) -> None:
        try:
            value = await item.make()
        except Exception as e:
            item.reply(None, e)
        else:
            item.reply(value, None)

    def _waiting(self, request: ApprovalRequest | AnswerRequest | str | None) -> None:
        if isinstance(request, str):
            # A host's error card waits on Retry: show that host.
            self.show_host(request, focus=True)
        elif isinstance(request, AnswerRequest):
            self.bar.ask(request)
            self.show_host(request.host, focus=True)
        else:
            self.bar.show(request, self._waiting_hosts(request) if request else ())
            if request is not None:
                # The asking host's run view comes up, its command step focused.
                self.show_host(request.proposal.host, focus=True)
        self._refresh_keys()

    @property
    def fleet_runs(self) -> list[HostRun]:
        fleet = self.controller.fleet if self.controller else None
        return list(fleet.runs.values()) if fleet else self._ready

    def _redraw(self) -> None:
        fleet = self.controller.fleet if self.controller else None
        if fleet is not None and not self._live:
            # The fleet's own live state, once its thread has built it.
            self._live = True
            self.table.set_runs(list(fleet.runs.values()))
        self.table.tick()
        self._refresh_keys()  # a command may have started or ended on the host shown
        bar = self.bar
        if bar.question is not None and bar.question.hosts != bar.hosts:
            bar.ask(bar.question)
        if bar.request is not None:
            hosts = self._waiting_hosts(bar.request)
            if hosts != bar.hosts:
                bar.show(bar.request, hosts)
                self._refresh_keys()

    def _waiting_hosts(self, request: ApprovalRequest) -> tuple[str, ...]:
        """The hosts waiting on the request's command right now (more may have come)."""
        if request.dangerous or self.controller is None or self.controller.broker is None:
            return (request.proposal.host,)
        for group in self.controller.broker.waiting:
            same = (group.proposal.command, group.proposal.inferred)
            if same == (request.proposal.command, request.proposal.inferred):
                # In the fleet's order, so the list does not reshuffle as hosts arrive.
                waiting = set(group.hosts)
                return tuple(h for h in self.feeds if h in waiting) or request.hosts
        return request.hosts

    @on(RunStateChanged)
    def _run_state(self, message: RunStateChanged) -> None:
        message.stop()
        self._refresh_keys()

    def _refresh_keys(self) -> None:
        """Refresh the footer's keys when what they offer has changed: the footer is built
        anew each time, and a thousand hosts' events must not rebuild it each."""
        feed = self.feeds.get(self.shown_host or "")
        offered = (
            self.started,
            self.finished,
            self.bar.can_run_all,
            feed is not None and feed.command_running,
        )
        if offered != self._offered:
            self._offered = offered
            self.refresh_bindings()

    def _finished(self, error: BaseException | None) -> None:
        if self.finished:
            return
        self.finished = True
        if self._ticker is not None:
            self._ticker.stop()
            self._ticker = None
        self._redraw()
        self.bar.show(None)
        if error is not None and not isinstance(error, asyncio.CancelledError):
            text = self.parts.redactor(f"{error!r}")
            self.mount(Note(f"the fleet stopped on an internal error: {text}", "warn"), before=0)
        controller = self.controller
        if controller is not None and controller.result is not None:
            canary = controller.spec.canary is not None
            summary = FleetSummary(controller.result, controller.run_dir, canary=canary)
            self.mount(summary, before="#fleet-hosts")
        self._refresh_keys()

    async def on_unmount(self) -> None:
        self.host_view.close()
        # Closed mid-run (the app quits): every host's run ends as aborted, transcripts closed.
        if self.thread is not None and self.thread.running:
            await self.thread.stop()

    # -- hosts ----------------------------------------------------------------------------

    @property
    def view(self) -> RunView | None:
        """The run view on screen (of `shown_host`)."""
        return self.host_view.view

    @property
    def shown_host(self) -> str | None:
        return self.host_view.host

    def show_host(self, host: str, *, focus: bool = False) -> None:
        """Show `host`'s run under the table (built from its events), and focus what it waits
        on if asked to."""
        if self._show_timer is not None:
            self._show_timer.stop()
            self._show_timer = None
        self.host_view.show(host, focus=focus)

    @on(FleetTable.Highlighted)
    def _row_highlighted(self, message: FleetTable.Highlighted) -> None:
        if not self.table.has_focus or message.host in (self.shown_host, self.host_view.coming):
            return
        if self._show_timer is not None:
            self._show_timer.stop()
        self._show_timer = self.set_timer(SHOW_AFTER_S, lambda: self.show_host(message.host))

    @on(FleetTable.Selected)
    def _row_selected(self, message: FleetTable.Selected) -> None:
        self.show_host(message.host, focus=True)

    # -- keys -----------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("start", "canary"):
            return not self.started
        if action == "run_all":
            return self.bar.can_run_all
        if action == "stop_command":
            feed = self.feeds.get(self.shown_host or "")
            return feed is not None and feed.command_running
        if action == "close":
            return self.controller is None or self.finished
        return True

    @on(RunOnAll)
    def action_run_all(self) -> None:
        """Run the command in the bar on every host waiting on it, and on any that proposes it
        later; the bar's host is answered at once."""
        request, thread, controller = self.bar.request, self.thread, self.controller
        if request is None or not self.bar.can_run_all or thread is None or controller is None:
            return
        desk = controller.desk
        assert desk is not None
        command, inferred = request.proposal.command, request.proposal.inferred
        future = thread.submit(lambda: desk.run_on_all(command, inferred))

        def released(done: object) -> None:  # the fleet's thread
            with contextlib.suppress(Exception):
                self.outbox.put(Released(command, future.result()))

        future.add_done_callback(released)
        # The bar's host is answered: its view offers nothing more.
        self.bar.show(None)
        self._refresh_keys()

    def action_open_host(self) -> None:
        host = self.table.highlighted_host
        if host is not None:
            self.show_host(host, focus=True)

    def action_focus_table(self) -> None:
        self.table.focus()

    def action_stop_command(self) -> None:
        feed = self.feeds.get(self.shown_host or "")
        if feed is not None and feed.stop_command():
            self.notify(f"stopping the command on {feed.name} (its whole process tree)")

    def action_close(self) -> None:
        if self.controller is None or self.finished:
            self.dismiss(None)

    def running_commands(self) -> int:
        return sum(1 for f in self.feeds.values() if f.command_running)


def fleet_screen(
    parts: TuiParts, skill: Skill, params: dict[str, str], sidebar: Sidebar
) -> FleetScreen:
    """The fleet screen for the hosts marked in the sidebar (inventory names keep their
    targets)."""
    config = parts.config
    known = {h.name: h for h in config.fleet}
    hosts = [known.get(name, HostSpec(name, name)) for name in sidebar.marked]
    names = [h.name for h in hosts]
    canary = config.canary if config.canary in names else None
    spec = FleetSpec(
        skill,
        params,
        hosts,
        forks=config.forks,
        llm_concurrency=config.llm_concurrency,
        canary=canary,
    )
    return FleetScreen(spec, parts, open_runner=config.open_runner)
