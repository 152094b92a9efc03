"""The fleet's approval bar (a command waiting on N hosts) and its final summary."""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Button, Checkbox, Label, Log, Static

from kosmos.engine.guard import visible
from kosmos.fleet.approvals import AnswerRequest, ApprovalRequest
from kosmos.fleet.results import FleetFinished, lock_lines, report_lines, summary_lines
from kosmos.tui.paths import shown_path


class RunOnAll(Message):
    """The operator pressed "Run on all N"."""


class ApprovalBar(Vertical):
    """What waits for the operator: the command and the hosts proposing it ("Run on all N"),
    or the question and the hosts asking it (the same answer for all)."""

    def __init__(self) -> None:
        super().__init__(id="approval-bar")
        self.request: ApprovalRequest | None = None
        self.question: AnswerRequest | None = None
        self.hosts: tuple[str, ...] = ()

    def compose(self) -> ComposeResult:
        yield Static("", id="approval-text", markup=False)
        with Horizontal(classes="fleet-actions"):
            yield Button("Run on all", variant="success", id="run-all", compact=True)
            yield Checkbox(
                "the same answer for every host asking", True, id="answer-all", compact=True
            )
        yield Static("", id="approval-hint", classes="hint", markup=False)

    @property
    def answer_all(self) -> bool:
        return self.query_one("#answer-all", Checkbox).value

    def ask(self, question: AnswerRequest | None) -> None:
        """Show the question being answered and how many hosts ask it now."""
        self.question = question
        self.request = None
        self.set_class(question is not None, "shown")
        self.set_class(False, "dangerous")
        if question is None:
            return
        hosts = question.hosts
        self.hosts = hosts
        listed = ", ".join(hosts[:8]) + ("…" if len(hosts) > 8 else "")
        text = f"{len(hosts)} host(s) ask: {question.question.text}\n{listed}"
        self.query_one("#approval-text", Static).update(visible(text))
        asking = visible(question.host, one_line=True)
        self.query_one("#approval-hint", Static).update(
            f"answer in {asking}'s run view; the box decides whether the others get it"
        )
        self.query_one("#run-all", Button).display = False
        self.query_one("#answer-all", Checkbox).display = len(hosts) > 1

    def show(self, request: ApprovalRequest | None, hosts: tuple[str, ...] = ()) -> None:
        """Show the waiting request with the hosts now waiting on it (None hides the bar)."""
        self.request = request
        self.question = None
        self.hosts = hosts or (request.hosts if request else ())
        self.set_class(request is not None, "shown")
        if request is None:
            return
        self.query_one("#answer-all", Checkbox).display = False
        p = request.proposal
        n = len(self.hosts)
        listed = ", ".join(self.hosts[:8]) + ("…" if n > 8 else "")
        if request.dangerous:
            text = f"{p.host} step {p.step}: $ {p.command}\ndangerous: {p.reason or p.risk}"
            hint = f"asked per host: type {p.host} in its run view to run it there, s skips"
        else:
            text = "\n".join([f"{n} host(s) wait on: $ {p.command}", listed, *request.notes()])
            hint = (
                f"A runs it on these {n} and on any host that proposes it later · "
                f"enter runs on {p.host} only · s skips there · e edits there"
            )
        # The command is the LLM's, the names are from files: drawn as they are.
        self.query_one("#approval-text", Static).update(visible(text))
        self.query_one("#approval-hint", Static).update(visible(hint))
        button = self.query_one("#run-all", Button)
        button.label = f"Run on all {n} (A)"
        button.display = self.can_run_all
        self.set_class(request.dangerous, "dangerous")

    @property
    def can_run_all(self) -> bool:
        """A command that is not dangerous: `A` runs it on every host waiting on it now and
        on every host that proposes it later (so with one host waiting too)."""
        return self.request is not None and not self.request.dangerous

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "run-all":
            self.post_message(RunOnAll())


class FleetSummary(Vertical):
    """The end of a fleet run: one row per host, the counts, where the transcripts are; the
    rows scroll in a bounded area, so the selected host's run stays in view below it."""

    def __init__(self, result: FleetFinished, run_dir: Path | None, *, canary: bool) -> None:
        css = "" if result.exit_code == 0 else "failed"
        super().__init__(id="fleet-summary", classes=css)
        self.result = result
        self.run_dir = run_dir
        self.canary = canary

    def compose(self) -> ComposeResult:
        r = self.result
        yield Label(f"Fleet {r.status}: {visible(r.message)}", classes="tag", markup=False)
        head, *rows = summary_lines(r, canary=self.canary)
        # The columns' names stay in view above the rows, which scroll beneath them.
        yield Label(head, id="summary-head", markup=False)
        yield SummaryTable(rows)
        # Each outcome once with the hosts that share it (and what each report was made
        # from), then the hosts whose commands ran without the kernel lock.
        told = [*report_lines(r, width=160), *lock_lines(r)]
        if told:
            yield Static("\n".join(told), id="fleet-report", markup=False)
        stats = f"duration: {r.duration_s:.1f} s · exit code: {r.exit_code}"
        if self.run_dir is not None:
            stats += f" · transcripts: {shown_path(self.run_dir)}"
        yield Static(stats, classes="stats", id="summary-stats", markup=False)


class SummaryTable(Log):
    """The summary's table, a line per host, drawn only where it shows: as one `Static`, a
    thousand hosts' lines would be laid out and kept as a whole (megabytes)."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__(auto_scroll=False, id="summary-table")
        self._rows = lines

    def on_mount(self) -> None:
        self.write_lines(self._rows)
        self._rows = []
