"""The fleet screen: one skill on several hosts, a live table, the selected host's run below it.

The fleet runs on a thread of its own, started with the screen; this screen drains what it
sends in batches, redraws the table's rows in view four times a second, and builds a host's run
view only when the host is shown, from the events its `HostFeed` keeps.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
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

from kosmos.fleet.approvals import AnswerRequest, ApprovalRequest
from kosmos.fleet.results import FleetFinished
from kosmos.fleet.targets import HostSpec
from kosmos.hosts.runner import Runner
from kosmos.runs.fleet import fleet_run_dir
from kosmos.skills.model import Skill
from kosmos.tui.fleet_feed import HostFeed, Packer
from kosmos.tui.fleet_host_view import Focus, HostView
from kosmos.tui.fleet_thread import FleetThread, Gone, Outbox
from kosmos.tui.fleet_wire import (
    ROWS_S,
    Ask,
    Asked,
    Ended,
    FleetJob,
    FleetSpec,
    Kept,
    Output,
    Prompt,
    Released,
    Reply,
    Rows,
    RunAll,
    RunRow,
    Told,
    Waiting,
)
from kosmos.tui.messages import RunStateChanged
from kosmos.tui.parts import TuiParts
from kosmos.tui.widgets.fleet_approval import ApprovalBar, FleetSummary, RunOnAll
from kosmos.tui.widgets.fleet_table import FleetTable
from kosmos.tui.widgets.keys import Keys
from kosmos.tui.widgets.run_view import RunView
from kosmos.tui.widgets.steps import Note

if TYPE_CHECKING:
    from kosmos.tui.widgets.sidebar import Sidebar

# A host highlighted in the table is shown once the cursor has rested on it this long: holding
# a key down through a thousand hosts builds no thousand run views.
SHOW_AFTER_S = 0.5


class FleetNews(Message):
    """The fleet's outbox has something (one message per batch, however many items)."""


RunnerFactory = Callable[[HostSpec], Runner]


@dataclass
class FleetRecord:
    """A started fleet as the screen knows it: where its transcripts go, what waits on the
    operator (as last sent), and its result once it has ended."""

    spec: FleetSpec
    run_dir: Path  # where its transcripts go (and the fleet's traceback, if it failed)
    result: FleetFinished | None = None
    waiting: list[ApprovalRequest] = field(default_factory=list)
    asking: tuple[str, ...] = ()


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
        packer = Packer()  # the hosts' ended stories, packed against one another
        self.feeds = {h.name: HostFeed(h.name, packer) for h in spec.hosts}
        self.controller: FleetRecord | None = None
        self.fleet: FleetThread | None = None
        self.outbox = Outbox(lambda: None)
        self.host_view = HostView(
            lambda: self.query_one("#fleet-hosts", Vertical),
            self.feeds,
            lambda host: f"{spec.skill.name} @ {host}",
            self._refresh_keys,
        )
        self.canary = spec.canary
        self.finished = False
        # The table's rows, kept current from what the fleet sends.
        self._rows = {h.name: RunRow(h.name, canary=h.name == spec.canary) for h in spec.hosts}
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
        # The fleet's thread starts now: its imports are done before the start key.
        self.fleet = FleetThread()
        self.table.set_runs(list(self._rows.values()))
        self.show_host(self.spec.hosts[0].name)
        self.table.focus()

    def action_start(self) -> None:
        """Start every host (the canary alone first, when there is one)."""
        if self.started or self.fleet is None:
            return
        parts, fleet = self.parts, self.fleet
        loop = asyncio.get_running_loop()

        def wake() -> None:  # the fleet's thread: one drain per batch
            with contextlib.suppress(RuntimeError):  # the app's loop has closed
                loop.call_soon_threadsafe(self.post_message, FleetNews())

        self.outbox = Outbox(wake)
        spec = replace(self.spec, canary=self.canary)
        for feed in self.feeds.values():
            feed.send = fleet.send
            feed.answer_all = lambda: self.bar.answer_all
        run_id = uuid.uuid4().hex
        run_dir = fleet_run_dir(parts.config.settings, spec.skill.name, run_id)
        self.controller = FleetRecord(spec, run_dir)
        job = FleetJob(
            spec=spec,
            settings=parts.config.settings,
            prompts=parts.config.prompts,
            redactor=parts.new_redactor(),
            run_id=run_id,
            run_dir=run_dir,
            passphrases=parts.pool.passphrases.typed(),
            open_runner=self.open_runner,
        )
        fleet.start(job, self.outbox)
        self.query_one("#fleet-title", Static).update(self._title())
        self._ticker = self.set_interval(ROWS_S, self._redraw)
        self._refresh_keys()

    def action_canary(self) -> None:
        """The highlighted host becomes the canary (again on the canary: no canary)."""
        host = self.table.highlighted_host
        if self.started or host is None:
            return
        self.canary = None if host == self.canary else host
        for run in self._rows.values():
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
        record = self.controller
        for item in self.outbox.drain():
            if isinstance(item, Told | Output):
                self.feeds[item.host].take(item)
            elif isinstance(item, Rows):
                for row in item.rows:
                    self._rows[row.name].__dict__.update(row.__dict__)
                if record is not None:
                    record.waiting, record.asking = item.waiting, item.asking
            elif isinstance(item, Ask):
                self.feeds[item.host].ask(item)
            elif isinstance(item, Asked):
                self.feeds[item.host].asked(item)
            elif isinstance(item, Waiting):
                self._waiting(item.request)
            elif isinstance(item, Prompt):
                self.run_worker(self._prompt(item), group="fleet-modal")
            elif isinstance(item, Kept):
                self.parts.pool.passphrases.keep(item.path, item.passphrase)
            elif isinstance(item, Released):
                self.notify(
                    f"`{item.command}`: released {item.count} waiting host(s); "
                    "hosts that propose it later run it unasked"
                )
            elif isinstance(item, Ended):
                self._finished(item)
            elif isinstance(item, Gone):
                self._gone(item)

    def _gone(self, gone: Gone) -> None:
        """The fleet's thread has ended; ended without its `Ended`, it failed: its traceback goes
        beside the transcripts (`fleet-error.log`), and the screen says why."""
        record = self.controller
        text = self.parts.redactor(gone.error)
        log = None
        if text.strip() and record is not None:
            log = record.run_dir / "fleet-error.log"
            try:
                log.parent.mkdir(parents=True, exist_ok=True)
                log.write_text(text)
            except OSError:
                log = None
        if self.finished:
            return
        why = "the fleet failed"
        if gone.reason:
            why += f": {self.parts.redactor(gone.reason)}"
        if log is not None:
            why += f"; its traceback is in {log}"
        self._finished(Ended(None, why))

    async def _prompt(self, item: Prompt) -> None:
        """A modal for the fleet (a secret, a host key); its answer goes back."""
        prompter = self.parts.prompter
        try:
            if item.kind == "secret":
                host, prompt = item.args
                value: object = await prompter.ask_secret(f"{host}: {prompt}")
            else:
                value = await prompter.confirm_host_key(*item.args)
        except Exception as e:
            reply = Reply(item.id, None, self.parts.redactor(str(e)))
        else:
            reply = Reply(item.id, value)
        if self.fleet is not None:
            self.fleet.send(reply)

    def _waiting(self, request: ApprovalRequest | AnswerRequest | str | None) -> None:
        if isinstance(request, str):
            # A host's error card waits on Retry: show that host.
            self.show_host(request, focus="pending")
        elif isinstance(request, AnswerRequest):
            # The hosts asking it, as the fleet last sent them.
            record, sent = self.controller, request.waiting
            self.bar.ask(replace(request, waiting=lambda: (record and record.asking) or sent()))
            self.show_host(request.host, focus="pending")
        else:
            self.bar.show(request, self._waiting_hosts(request) if request else ())
            if request is not None:
                # The asking host's run view comes up, its command step focused.
                self.show_host(request.proposal.host, focus="pending")
        self._refresh_keys()

    @property
    def fleet_runs(self) -> list[RunRow]:
        return list(self._rows.values())

    def _redraw(self) -> None:
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
        if request.dangerous or self.controller is None:
            return (request.proposal.host,)
        for group in self.controller.waiting:
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
        if not self.is_attached or self._pruning:
            return  # the screen is being taken down (a host's view caught up meanwhile)
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

    def _finished(self, ended: Ended) -> None:
        if self.finished:
            return
        self.finished = True
        if self._ticker is not None:
            self._ticker.stop()
            self._ticker = None
        record = self.controller
        if record is not None:
            record.result = ended.result
            record.waiting, record.asking = [], ()
        self._redraw()
        self.bar.show(None)
        if ended.error is not None:
            text = self.parts.redactor(ended.error)
            self.mount(Note(f"the fleet stopped on an internal error: {text}", "warn"), before=0)
        if record is not None and record.result is not None:
            canary = record.spec.canary is not None
            summary = FleetSummary(record.result, record.run_dir, canary=canary)
            self.mount(summary, before="#fleet-hosts")
        self._refresh_keys()

    async def on_unmount(self) -> None:
        self.host_view.close()
        # Closed mid-run (the app quits): every host's run ends as aborted, transcripts closed.
        if self.fleet is not None:
            await self.fleet.stop()

    # -- hosts ----------------------------------------------------------------------------

    @property
    def view(self) -> RunView | None:
        """The run view on screen (of `shown_host`)."""
        return self.host_view.view

    @property
    def shown_host(self) -> str | None:
        return self.host_view.host

    def show_host(self, host: str, *, focus: Focus = "") -> None:
        """Show `host`'s run under the table (built from its events), then focus as `focus`
        says (fleet_host_view.Focus)."""
        if self._show_timer is not None:
            self._show_timer.stop()
            self._show_timer = None
        self.host_view.show(host, focus=focus)

    @on(FleetTable.Highlighted)
    def _row_highlighted(self, message: FleetTable.Highlighted) -> None:
        if not self.table.has_focus:
            return
        self.host_view.let_a_frame_through()  # the cursor's new row, drawn now
        if self._show_timer is not None:
            # The cursor moved on before the last host it rested on was shown.
            self._show_timer.stop()
            self._show_timer = None
        if message.host in (self.shown_host, self.host_view.coming):
            return
        self._show_timer = self.set_timer(SHOW_AFTER_S, lambda: self.show_host(message.host))

    @on(FleetTable.Selected)
    def _row_selected(self, message: FleetTable.Selected) -> None:
        self.show_host(message.host, focus="view")

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
        request, fleet = self.bar.request, self.fleet
        if request is None or not self.bar.can_run_all or fleet is None or not self.started:
            return
        fleet.send(RunAll(request.proposal.command, request.proposal.inferred))
        # The bar's host is answered: its view offers nothing more.
        self.bar.show(None)
        self._refresh_keys()

    def action_open_host(self) -> None:
        host = self.table.highlighted_host
        if host is not None:
            self.show_host(host, focus="view")

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
