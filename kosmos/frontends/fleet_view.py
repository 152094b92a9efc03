"""A fleet run in a terminal: a live table of hosts, the summary, one question at a time."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator, Sequence
from typing import TextIO

from kosmos.engine.guard import visible
from kosmos.engine.operator import Approval
from kosmos.errors import InputNeeded, KosmosError
from kosmos.events import (
    CommandFinished,
    CommandStarted,
    Directive,
    Event,
    FileRead,
    MemoryAction,
    Notice,
    RunFinished,
)
from kosmos.fleet.approvals import AnswerRequest, ApprovalRequest, FleetAnswer, FleetApproval
from kosmos.fleet.orchestrator import Fleet, HostRun
from kosmos.fleet.results import table
from kosmos.frontends.console import Console, EndOfInput

REDRAW_S = 0.25
COMMAND_WIDTH = 48


def _short(text: str | None, width: int = COMMAND_WIDTH) -> str:
    if not text:
        return ""
    flat = visible(" ".join(text.split()), one_line=True)
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def live_rows(runs: Sequence[HostRun], now: float) -> list[list[str]]:
    return [
        [
            r.name,
            r.state + (" (replay)" if r.state == "running" and r.mode == "replay" else ""),
            str(r.step or ""),
            _short(r.last_command),
            f"{r.elapsed(now):.1f}s" if r.started else "",
        ]
        for r in runs
    ]


class FleetView:
    """The live table: redrawn in place on a terminal, one line per notable event otherwise."""

    def __init__(
        self, console: Console, fleet: Fleet, *, stream: TextIO, live: bool, quiet: bool = False
    ) -> None:
        self.c = console
        self.fleet = fleet
        self.stream = stream
        self.live = live
        # Quiet: no event log (stdout carries --json); a terminal still gets the live table.
        self.quiet = quiet
        self._drawn = 0
        self._paused = 0
        self._task: asyncio.Task[None] | None = None

    # -- the live table (terminal) -------------------------------------------------------

    def start(self) -> None:
        if self.live and self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._redraw_forever())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        self._erase()

    async def _redraw_forever(self) -> None:
        while True:
            if not self._paused:
                self.draw()
            await asyncio.sleep(REDRAW_S)

    def draw(self) -> None:
        runs = list(self.fleet.runs.values())
        lines = table(
            ["HOST", "STATE", "STEP", "LAST COMMAND", "ELAPSED"],
            live_rows(runs, time.monotonic()),
        )
        out = self._erase_codes() + "".join(f"\x1b[K{line}\n" for line in lines)
        self.stream.write(out)
        self.stream.flush()
        self._drawn = len(lines)

    def _erase_codes(self) -> str:
        return f"\x1b[{self._drawn}F\x1b[J" if self._drawn else ""

    def _erase(self) -> None:
        if self._drawn:
            self.stream.write(self._erase_codes())
            self.stream.flush()
            self._drawn = 0

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Hide the live table while the operator is asked something."""
        self._paused += 1
        self._erase()
        try:
            yield
        finally:
            self._paused -= 1

    # -- the event log (no terminal) -----------------------------------------------------

    def __call__(self, event: Event) -> None:
        """One line per notable event, prefixed with the host, when the table cannot redraw."""
        if self.live or self.quiet:
            return
        host = event.host or ""
        line: str | None = None
        match event:
            case CommandStarted():
                line = f"[{event.step}] $ {event.command}"
            case CommandFinished():
                status = "timed out" if event.timed_out else f"exit {event.exit_code}"
                line = f"[{event.step}] └ {status} · {event.duration_s:.1f}s"
            case Directive() if event.kind in ("ask", "message"):
                line = f"[{event.step}] {event.kind.upper()} {_short(event.text, 200)}"
            case FileRead() | MemoryAction():
                what = event.path if isinstance(event, FileRead) else f"{event.action} {event.name}"
                line = f"[{event.step}] {what}: {event.status}"
            case Notice():
                line = f"! {event.message}"
            case RunFinished():
                line = f"■ {event.status}: {_short(event.message, 200)}"
            case _:
                pass
        if line is not None:
            self.c.say_soon(f"{visible(host, one_line=True)}  {visible(line)}", stream=self.stream)


class LineFleetDesk:
    """Line mode's side of the approval broker: one question at a time, the hosts named.

    `y` runs the command on the asking host only (on a canary: the canary only; the others that
    reach it wait, and are asked once), `a` on every host that proposes it (now or later in
    this run), `n` skips it there, `e` edits it there. A dangerous command is run only on
    the host whose name the operator types.
    """

    def __init__(self, console: Console, view: FleetView, *, answers: Sequence[str]) -> None:
        self.c = console
        self.view = view
        self.answers = list(answers)
        self._answers: dict[str, list[str]] = {}

    async def _ask(self, prompt: str, *, prefill: str | None = None) -> str:
        try:
            return await self.c.ask(prompt, prefill=prefill)
        except EndOfInput as e:
            raise InputNeeded(
                "standard input closed while kosmos waited for an answer; "
                "use --non-interactive with --yes/--answer to run unattended"
            ) from e

    async def decide(self, request: ApprovalRequest) -> FleetApproval:
        # `--yes` never short-cuts this: the host's policy (auto under --yes, unless config
        # pins the host) already let through what needs no person.
        p = request.proposal
        c = self.c
        with self.view.paused():
            others = [h for h in request.hosts if h != p.host]
            who = p.host + (f" and {len(others)} more ({', '.join(others[:8])}" if others else "")
            who += ("…)" if len(others) > 8 else ")") if others else ""
            c.say(c.style(visible(f"{who} [step {p.step}]", one_line=True), "1"), stream=c.err)
            label = p.risk.replace("_", "-")
            said = p.reason if p.reason.startswith(label) else f"{label}: {p.reason}"
            risk = visible(f"  ({said if p.reason else label})")
            first, *rest = visible(p.command).split("\n")
            c.say(c.style("  $ ", "36") + c.style(first, "1") + c.style(risk, "2"), stream=c.err)
            for line in rest:  # every line of what runs
                c.say(c.style("  │ ", "36") + c.style(line, "1"), stream=c.err)
            # The canary's `y` covered the canary; where these hosts' output was not the
            # canary's, the person sees how before saying yes for them.
            for note in request.notes():
                c.say(c.style(f"  {visible(note)}", "33"), stream=c.err)
            host = visible(p.host, one_line=True)
            if request.dangerous:
                reason = visible(p.reason)
                c.say(c.style(f"  dangerous on {host}: {reason}", "31"), stream=c.err)
                typed = (await self._ask(f"Type {host} to run it there (else skip): ")).strip()
                # The gate compares what was typed with the host's name.
                return FleetApproval(Approval.run(typed=typed) if typed else Approval.skip())
            n = len(request.hosts)
            while True:
                prompt = f"Run? [y/N/a/e] (a: all hosts, {n} waiting) "
                reply = (await self._ask(c.style(prompt, "1"))).strip().lower()
                if reply in ("y", "yes"):
                    return FleetApproval(Approval.run())
                if reply in ("a", "all"):
                    return FleetApproval(Approval.run(), "all")
                if reply in ("", "n", "no", "s", "skip"):
                    return FleetApproval(Approval.skip())
                if reply in ("e", "edit"):
                    edited = (await self._ask("Edit: ", prefill=p.command)).strip()
                    if not edited:
                        return FleetApproval(Approval.skip())
                    if edited == p.command:
                        return FleetApproval(Approval.run())
                    return FleetApproval(Approval.edit(edited))
                c.say(
                    f"  answer y (run on {host}), a (run on every host), n (skip) or e (edit)",
                    stream=c.err,
                )

    async def answer(self, request: AnswerRequest) -> FleetAnswer:
        host, question = request.host, request.question
        queue = self._answers.setdefault(host, list(self.answers))
        if queue:
            return FleetAnswer(queue.pop(0))
        c = self.c
        with self.view.paused():
            others = [h for h in request.hosts if h != host]
            who = visible(host, one_line=True) + (f" and {len(others)} more" if others else "")
            c.say(
                c.style(f"{who} ask: " if others else f"{who} asks: ", "35")
                + visible(question.text),
                stream=c.err,
            )
            prompt = "> " if question.required else c.style("(Enter to skip) ", "2") + "> "
            while True:
                value = (await self._ask(prompt)).strip()
                if value or not question.required:
                    break
                c.say("  an answer is required", stream=c.err)
            # Hosts that reached the same question while the operator typed count too.
            others = [h for h in request.hosts if h != host]
            if not others:
                return FleetAnswer(value or None)
            shared = f"The same answer for {len(others)} more host(s) asking this? [Y/n] "
            reply = (await self._ask(shared)).strip()
            return FleetAnswer(value or None, "host" if reply.lower() in ("n", "no") else "all")

    async def ask_secret(self, host: str, prompt: str) -> str | None:
        with self.view.paused():
            try:
                return await self.c.ask_secret(f"{visible(host, one_line=True)}: {prompt}")
            except EndOfInput:
                return None

    async def retry(self, host: str, error: KosmosError) -> bool:
        return False

    async def confirm_host_key(self, host: str, key_type: str, fingerprint: str) -> bool:
        with self.view.paused():
            err = self.c.err
            host = visible(host, one_line=True)
            self.c.say(f"{host}: the authenticity of the host can't be established.", stream=err)
            self.c.say(f"{key_type} key fingerprint is {fingerprint}.", stream=err)
            try:
                reply = await self.c.ask(f"Trust {host}'s key and add it to known_hosts? [y/N] ")
            except EndOfInput:
                return False
            return reply.strip().lower() in ("y", "yes")
