"""The TUI's fleet, on a thread and a loop of its own: the fleet core's sessions, and its desk.

`serve` is the thread's whole life (`fleet_thread` starts it): it waits for the `FleetJob` (the
screen starts the thread early, so that a start key finds its imports done), runs every host,
and sends each host's events, each question for the operator and the table's rows over its
`fleet_wire.Link`. The operator's answers come back the same way. If the screen goes away (it
hangs up), the fleet ends as if cancelled: every host's run aborted, its command stopped, its
transcript closed. Nothing here imports Textual.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from kosmos.engine.operator import Approval
from kosmos.engine.session import Session
from kosmos.errors import HostError, KosmosError
from kosmos.events import Event, Notice, RunFinished
from kosmos.fleet.approvals import (
    AnswerRequest,
    ApprovalBroker,
    ApprovalRequest,
    FleetAnswer,
    FleetApproval,
)
from kosmos.fleet.journal import Journal
from kosmos.fleet.orchestrator import Fleet, SessionParts
from kosmos.fleet.results import FleetFinished
from kosmos.fleet.targets import HostSpec
from kosmos.heap import settle
from kosmos.hosts.factory import make_runner
from kosmos.hosts.passphrases import Passphrases
from kosmos.hosts.runner import Runner
from kosmos.hosts.sshconfig import SSHConfigFile, local_user
from kosmos.llm.factory import make_provider
from kosmos.runs.fleet import FleetRecorder, FleetSessions, write_fleet_result
from kosmos.seal import key_bytes
from kosmos.tui.fleet_wire import (
    ROWS_S,
    SEND_S,
    Answer,
    Ask,
    Asked,
    AskKind,
    Cancel,
    Ended,
    Fixed,
    FleetJob,
    Kept,
    Link,
    Prompt,
    Released,
    Reply,
    Rows,
    RunAll,
    RunRow,
    StopCommand,
    Waiting,
    told,
)


def _settle(future: asyncio.Future[Any], value: Any) -> None:
    if not future.done():
        future.set_result(value)


class _SharedPassphrases(Passphrases):
    """The session's passphrases; one typed here is sent to the screen to keep."""

    def __init__(self, typed: dict[Path, str], send: Callable[[Any], None]) -> None:
        super().__init__()
        self._typed.update(typed)
        self._send = send

    def keep(self, path: Path, passphrase: str) -> None:
        super().keep(path, passphrase)
        self._send(Kept(path, passphrase))


class FleetDesk:
    """The broker's front end: each question goes to the screen, named by its host, and the
    answer comes back as an `Answer` with the same id."""

    def __init__(self, send: Callable[[Any], None], redactor: Callable[[str], str]) -> None:
        self.send = send
        self.redactor = redactor
        self.broker: ApprovalBroker | None = None
        self.current: ApprovalRequest | None = None
        self.question: AnswerRequest | None = None
        self._current: asyncio.Future[Any] | None = None
        # What each sent item waits on, and how an `Answer` to it becomes the value (a secret
        # or a host key modal answers with a `Reply`, its value as it is).
        self._waits: dict[int, tuple[asyncio.Future[Any], Callable[[Answer], Any] | None]] = {}
        self._ids = itertools.count(1)

    # -- the screen's answers (in this loop) --------------------------------------------------

    def answer_of(self, answer: Answer) -> None:
        future, wrap = self._waits.get(answer.id, (None, None))
        if future is not None and wrap is not None:
            _settle(future, wrap(answer))

    def reply(self, reply: Reply) -> None:
        wait = self._waits.get(reply.id)
        if wait is None or wait[0].done():
            return
        if reply.error is not None:
            wait[0].set_exception(KosmosError(reply.error))
        else:
            wait[0].set_result(reply.value)

    async def _wait(
        self,
        item: Callable[[int], Any],
        wrap: Callable[[Answer], Any] | None = None,
        current: bool = False,
    ) -> Any:
        """Send `item(id)` and wait for what the screen answers to that id (`current`: the
        approval `A` may settle for every host at once)."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        ask_id = next(self._ids)
        self._waits[ask_id] = (future, wrap)
        if current:
            self._current = future
        try:
            self.send(item(ask_id))
            return await future
        finally:
            del self._waits[ask_id]

    async def _ask(
        self,
        host: str,
        kind: AskKind,
        payload: Any,
        wrap: Callable[[Answer], Any],
        current: bool = False,
    ) -> Any:
        ids: list[int] = []

        def ask(ask_id: int) -> Ask:
            ids.append(ask_id)
            return Ask(host, ask_id, kind, payload)

        try:
            return await self._wait(ask, wrap, current)
        finally:
            if ids:
                self.send(Asked(host, ids[0]))

    # -- the broker's questions -------------------------------------------------------------

    async def decide(self, request: ApprovalRequest) -> FleetApproval:
        self.current = request
        self.send(Waiting(request))
        try:
            proposal = request.proposal
            wrap = lambda a: FleetApproval(a.value)  # noqa: E731
            return await self._ask(proposal.host, "approval", proposal, wrap, current=True)
        finally:
            self.current = None
            self._current = None
            self.send(Waiting(None))

    def run_on_all(self, command: str, inferred: bool) -> int:
        """Run `command` on every host waiting on it and on those that propose it later (never
        a dangerous one); returns how many hosts it released now."""
        if self.broker is None:
            return 0
        released = self.broker.decide_all(command, Approval.run(), inferred=inferred)
        current, future = self.current, self._current
        same = current is not None and (current.proposal.command, current.proposal.inferred) == (
            command,
            inferred,
        )
        if same and current is not None and not current.dangerous and future is not None:
            _settle(future, FleetApproval(Approval.run(), "all"))
        return released

    async def answer(self, request: AnswerRequest) -> FleetAnswer:
        self.question = request
        self.send(Waiting(replace(request, waiting=Fixed(request.hosts))))

        def scoped(a: Answer) -> FleetAnswer:
            several = len(request.hosts) > 1
            return FleetAnswer(a.value, "all" if several and a.all else "host")

        try:
            return await self._ask(request.host, "question", request.question, scoped)
        finally:
            self.question = None
            self.send(Waiting(None))

    async def retry(self, host: str, error: KosmosError) -> bool:
        kind = "host" if isinstance(error, HostError) else "LLM"
        self.send(Waiting(host))
        reason = (self.redactor(str(error)), kind)
        return bool(await self._ask(host, "retry", reason, lambda a: bool(a.value)))

    async def ask_secret(self, host: str, prompt: str) -> str | None:
        value = await self._wait(lambda i: Prompt(i, "secret", (host, prompt)))
        return None if value is None else str(value)

    async def confirm_host_key(self, host: str, key_type: str, fingerprint: str) -> bool:
        args = (host, key_type, fingerprint)
        return bool(await self._wait(lambda i: Prompt(i, "host_key", args)))


class FleetController:
    """Owns one fleet run in the fleet's thread: its sessions, the broker, the transcripts in
    one run directory; `send` takes what goes to the screen."""

    def __init__(self, job: FleetJob, send: Callable[[Any], None]) -> None:
        self.job = job
        self.send = send
        self.desk = FleetDesk(send, job.redactor)
        self.broker = ApprovalBroker(self.desk)
        self.desk.broker = self.broker
        self.fleet: Fleet | None = None
        self.sessions: dict[str, Session] = {}
        self.ssh_config = SSHConfigFile(Path.home() / ".ssh" / "config", local_user())
        self.passphrases = _SharedPassphrases(job.passphrases, send)
        self._sent: dict[str, RunRow] = {}
        self._rows_due = False
        # A host that starts or stops waiting on the operator shows so at once, not at the
        # next tick: once per loop turn, however many hosts it is.
        self.broker.on_waiting = lambda host, waiting: self._rows_soon()

    def _rows_soon(self) -> None:
        if not self._rows_due:
            self._rows_due = True
            asyncio.get_running_loop().call_soon(self.rows)

    def _runner(self, spec: HostSpec) -> Runner:
        if self.job.open_runner is not None:
            runner: Runner = self.job.open_runner(spec)
            return runner

        def notify(message: str) -> None:
            self.send(Notice(message=self.job.redactor(message), host=spec.name))

        return make_runner(
            spec.target,
            self.job.settings,
            prompter=self.broker.desk_for(spec.name),
            notify=notify,
            ssh_config=self.ssh_config,
            passphrases=self.passphrases,
        )

    def rows(self) -> None:
        """Send the rows that changed, and what waits on the operator."""
        self._rows_due = False
        if self.fleet is None:
            return
        changed = []
        for run in self.fleet.runs.values():
            row = RunRow.of(run)
            if self._sent.get(row.name) != row:
                self._sent[row.name] = row
                changed.append(row)
        question = self.desk.question
        asking = question.hosts if question is not None else ()
        self.send(Rows(changed, self.broker.waiting, asking))

    async def _send_rows(self) -> None:
        while True:
            await asyncio.sleep(ROWS_S)
            self.rows()

    def stop_command(self, host: str) -> None:
        session = self.sessions.get(host)
        if session is not None and session.command_running:
            session.stop_command()

    async def run(self) -> FleetFinished | None:
        """Run every host to its end; each host's events reach its file and the screen."""
        job, spec, settings = self.job, self.job.spec, self.job.settings
        run_dir = job.run_dir
        journal = Journal(run_dir, key=key_bytes(settings.seal_key))
        provider = make_provider(settings)
        broker = self.broker
        sessions = FleetSessions(
            spec.skill,
            spec.params,
            settings,
            job.prompts,
            job.redactor,
            journal,
            run_id=job.run_id,
        )
        recorder = FleetRecorder(sessions)

        def on_event(event: Event) -> None:
            recorder(event)
            if event.host is not None:
                self.send(told(event))
                if isinstance(event, RunFinished):
                    # Its command can no longer be stopped; its history need not stay.
                    self.sessions.pop(event.host, None)

        def make_session(parts: SessionParts) -> Session:
            session = sessions(parts)
            self.sessions[parts.host.name] = session
            return session

        self.fleet = Fleet(
            spec.hosts,
            open_runner=self._runner,
            make_operator=lambda h: broker.desk_for(h.name),
            make_session=make_session,
            provider=provider,
            forks=spec.forks,
            llm_concurrency=spec.llm_concurrency,
            canary=spec.canary,
            on_event=on_event,
            redact=job.redactor,
            transcript_of=journal.path,
        )
        recorder.fleet = self.fleet
        ticker = asyncio.create_task(self._send_rows())
        try:
            return await self.fleet.run()
        finally:
            ticker.cancel()
            await broker.aclose()
            journal.close()
            await provider.aclose()
            if self.fleet.result is not None:
                write_fleet_result(run_dir, self.fleet.result, journal)
            self.rows()


def serve(link: Link) -> None:
    """Wait for the job, run it, send how it ended; then close `link`. A screen that hangs up
    before the job (closed unstarted) ends it at once."""
    try:
        job = link.job()
        if not isinstance(job, FleetJob):
            return
        settle()
        asyncio.run(_serve(link, job))
    finally:
        link.close()


async def _serve(link: Link, job: FleetJob) -> None:
    loop = asyncio.get_running_loop()
    batch: list[Any] = []

    def flush() -> None:
        items = batch[:]
        batch.clear()
        if not items:
            return
        link.to_screen(items)

    def send(item: Any) -> None:
        """Queue `item` for the screen; what was queued within `SEND_S` goes as one message,
        at once when the operator is to answer it (hosts wait on the answer)."""
        if not batch:
            loop.call_later(SEND_S, flush)
        batch.append(item)
        if isinstance(item, Waiting | Ask | Prompt):
            loop.call_soon(flush)

    controller = FleetController(job, send)
    main = asyncio.current_task()
    assert main is not None
    cancelled = False

    def cancel() -> None:
        nonlocal cancelled
        cancelled = True
        main.cancel()

    def take(item: Any) -> None:
        if isinstance(item, Answer):
            controller.desk.answer_of(item)
        elif isinstance(item, Reply):
            controller.desk.reply(item)
        elif isinstance(item, RunAll):
            send(Released(item.command, controller.desk.run_on_all(item.command, item.inferred)))
        elif isinstance(item, StopCommand):
            controller.stop_command(item.host)
        elif isinstance(item, Cancel):
            cancel()

    link.listen(loop, take)
    result: FleetFinished | None = None
    error: str | None = None
    try:
        result = await controller.run()
    except asyncio.CancelledError:
        result = controller.fleet.result if controller.fleet is not None else None
    except Exception as e:
        error = job.redactor(f"{e!r}")
        result = controller.fleet.result if controller.fleet is not None else None
    batch.append(Ended(result, error, cancelled))
    flush()
