"""The fleet screen: one skill on several hosts, a live table, any host's run view below it."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.widgets import ContentSwitcher, DataTable, Footer, Static
from textual.worker import Worker, WorkerState

from kosmos.fleet.approvals import AnswerRequest, ApprovalRequest
from kosmos.fleet.orchestrator import HostRun
from kosmos.fleet.targets import HostSpec
from kosmos.skills.model import Skill
from kosmos.tui.fleet_runs import FleetController, FleetSpec, HostFeed, RunnerFactory
from kosmos.tui.messages import RunStateChanged
from kosmos.tui.parts import TuiParts
from kosmos.tui.widgets.fleet_approval import ApprovalBar, FleetSummary, RunOnAll
from kosmos.tui.widgets.fleet_table import FleetTable
from kosmos.tui.widgets.run_view import RunView
from kosmos.tui.widgets.steps import Note

if TYPE_CHECKING:
    from kosmos.tui.widgets.sidebar import Sidebar

# The table is redrawn at most this often (seconds): 50 busy hosts stay cheap to show.
REDRAW_S = 0.25


@dataclass
class ApprovalWaiting(Message):
    """The broker asks about a command, a question, a host's error (None: nothing waits)."""

    request: ApprovalRequest | AnswerRequest | str | None


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
        self.views: dict[str, RunView] = {}
        self.feeds: dict[str, HostFeed] = {}
        self.controller: FleetController | None = None
        self.shown_host: str | None = None
        self.canary = spec.canary
        # What the table shows until the operator starts the fleet.
        self._ready = [HostRun(h, canary=h.name == spec.canary) for h in spec.hosts]

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
        spec = self.spec
        yield Static(self._title(), id="fleet-title", markup=False)
        yield FleetTable()
        yield ApprovalBar()
        with ContentSwitcher(id="fleet-hosts"):
            for i, host in enumerate(spec.hosts):
                view = RunView(f"{spec.skill.name} @ {host.name}", id=f"fleet-host-{i}")
                self.views[host.name] = view
                yield view
        yield Footer()

    @property
    def table(self) -> FleetTable:
        return self.query_one(FleetTable)

    @property
    def bar(self) -> ApprovalBar:
        return self.query_one(ApprovalBar)

    def on_mount(self) -> None:
        for name, view in self.views.items():
            feed = HostFeed(name, view)
            view.controller = feed  # type: ignore[assignment]
            view.operator = feed  # type: ignore[assignment]
            self.feeds[name] = feed
        self.show_host(self.spec.hosts[0].name)
        self.table.focus()
        self._redraw()
        self.set_interval(REDRAW_S, self._redraw)

    def action_start(self) -> None:
        """Start every host (the canary alone first, when there is one)."""
        if self.started:
            return
        parts = self.parts
        self.controller = FleetController(
            spec=replace(self.spec, canary=self.canary),
            settings=parts.config.settings,
            prompts=parts.config.prompts,
            prompter=parts.prompter,
            redactor=parts.new_redactor(),
            feeds=self.feeds,
            on_request=lambda request: self.post_message(ApprovalWaiting(request)),
            answer_all=lambda: self.bar.answer_all,
            open_runner=self.open_runner,
            passphrases=parts.pool.passphrases,
        )
        self.query_one("#fleet-title", Static).update(self._title())
        self.run_worker(self.controller.run(), group="fleet", exit_on_error=False)
        self._redraw()
        self.refresh_bindings()

    def action_canary(self) -> None:
        """The highlighted host becomes the canary (again on the canary: no canary)."""
        host = self.table.highlighted_host
        if self.started or host is None:
            return
        self.canary = None if host == self.canary else host
        for run in self._ready:
            run.canary = run.name == self.canary
        self.query_one("#fleet-title", Static).update(self._title())
        self._redraw()
        if self.canary is None:
            self.notify("no canary: every host starts at once")
        else:
            self.notify(f"canary: {host} runs first; the others follow only if it is done")

    # -- live state -----------------------------------------------------------------------

    @property
    def fleet_runs(self) -> list[HostRun]:
        fleet = self.controller.fleet if self.controller else None
        return list(fleet.runs.values()) if fleet else self._ready

    def _redraw(self) -> None:
        self.table.update_runs(self.fleet_runs)
        bar = self.bar
        if bar.question is not None and bar.question.hosts != bar.hosts:
            bar.ask(bar.question)
        if bar.request is not None:
            hosts = self._waiting_hosts(bar.request)
            if hosts != bar.hosts:
                bar.show(bar.request, hosts)
                self.refresh_bindings()

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

    @on(ApprovalWaiting)
    def _approval_waiting(self, message: ApprovalWaiting) -> None:
        request = message.request
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
        self.refresh_bindings()

    @on(RunStateChanged)
    def _run_state(self, message: RunStateChanged) -> None:
        message.stop()
        self.refresh_bindings()

    @on(Worker.StateChanged)
    def _worker_state(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if worker.group != "fleet":
            return
        if worker.state == WorkerState.ERROR:
            error = self.parts.redactor(f"{worker.error!r}")
            self.mount(Note(f"the fleet stopped on an internal error: {error}", "warn"), before=0)
        if worker.state in (WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED):
            self._finished()

    def _finished(self) -> None:
        controller = self.controller
        if controller is None or controller.result is None or self.query(FleetSummary):
            return
        self._redraw()
        self.bar.show(None)
        canary = controller.spec.canary is not None
        summary = FleetSummary(controller.result, controller.run_dir, canary=canary)
        self.mount(summary, after=self.table)
        self.refresh_bindings()

    # -- hosts ----------------------------------------------------------------------------

    def show_host(self, host: str, *, focus: bool = False) -> None:
        """Show `host`'s run view under the table (and focus what it waits on)."""
        view = self.views.get(host)
        if view is None:
            return
        self.shown_host = host
        self.query_one("#fleet-hosts", ContentSwitcher).current = view.id
        if focus:
            view.focus()
            view.call_after_refresh(view.focus_pending)

    @on(DataTable.RowHighlighted, "#fleet-table")
    def _row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key.value is not None and self.table.has_focus:
            self.show_host(str(event.row_key.value))

    @on(DataTable.RowSelected, "#fleet-table")
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value is not None:
            self.show_host(str(event.row_key.value), focus=True)

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
            controller = self.controller
            return controller is None or controller.result is not None
        return True

    @on(RunOnAll)
    def action_run_all(self) -> None:
        desk = self.controller.desk if self.controller else None
        if desk is not None and self.bar.can_run_all and desk.run_on_all():
            self.notify(f"running `{self.bar.request.proposal.command}` on every host asking it")

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
        if self.controller is None or self.controller.result is not None:
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
