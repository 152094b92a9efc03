"""Reading one file on a host for the LLM: a skill's `[GET-FILE]`, or `read_file` outside one.

The approval policy judges the read exactly as it judges `cat PATH`. The text is refused when
it holds NUL bytes (not text), capped, fenced (lines that read as directives are escaped) and
redacted as command output is, without the terminal clean-up: a file keeps its blank and
repeated lines. Every read ends in one `FileRead` event holding what the LLM got.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass

from kosmos.clean import cap
from kosmos.engine.approval import ApprovalGate, Decision
from kosmos.engine.guard import neutralise
from kosmos.engine.operator import Operator
from kosmos.engine.output import LLM_MAX_BYTES, LLM_MAX_LINES
from kosmos.engine.parser import ACTION_TAGS
from kosmos.errors import HostError
from kosmos.events import ActionStatus, Event, FileRead, Notice
from kosmos.hosts.runner import TOO_LARGE, FileUnreadable, Runner
from kosmos.prompts import Prompts
from kosmos.safety import Redactor


@dataclass(frozen=True)
class FileOutcome:
    """What became of one file read: who allowed it, and the text or why there is none.

    `content`: the file's text as the LLM gets it (capped, fenced, redacted), "" unless
    `status` is `done`; `reason` says why not otherwise. `sent_to_llm` is the whole reply
    text the LLM is sent. `bytes`: the file's size as read.
    """

    path: str
    status: ActionStatus
    decision: Decision
    sent_to_llm: str
    content: str = ""
    reason: str = ""
    bytes: int = 0


class FileStep:
    """Reads files on one host through the approval gate, one at a time."""

    def __init__(
        self,
        *,
        runner: Runner,
        gate: Callable[[], ApprovalGate],
        operator: Operator,
        redactor: Redactor,
        prompts: Prompts,
        emit: Callable[[Event], None],
        read_timeout: float,
    ) -> None:
        self.runner = runner
        # The session's gate, looked up each time: a replay puts its own in place.
        self.gate = gate
        self.operator = operator
        self.redactor = redactor
        self.prompts = prompts
        self.emit = emit
        self.read_timeout = read_timeout

    async def read(self, path: str, step: int) -> FileOutcome:
        """Ask the gate, read `path`, and say what became of it (also as a `FileRead` event)."""
        p = self.prompts
        shown = f"{ACTION_TAGS['get_file']} {path}"
        decision = await self.gate().decide_as(step, shown, f"cat {shlex.quote(path)}", "file")
        if decision.action in ("refused", "skip"):
            status: ActionStatus = "refused" if decision.action == "refused" else "skipped"
            reason = decision.reason if decision.action == "refused" else p["SKILL_FILE_SKIPPED"]
            return self._failed(step, path, status, decision, reason)
        try:
            text = await self._read(path)
        except FileUnreadable as e:
            reason = p["SKILL_FILE_TOO_LARGE"] if e.reason == TOO_LARGE else e.reason
            return self._failed(step, path, "error", decision, f"{path}: {reason}")
        except TimeoutError:
            reason = p["SKILL_FILE_SLOW"].format(path=path, timeout=f"{self.read_timeout:g}")
            return self._failed(step, path, "error", decision, reason)
        if text is None:
            return self._failed(
                step, path, "error", decision, p["SKILL_FILE_MISSING"].format(path=path)
            )
        if "\x00" in text:
            reason = p["SKILL_FILE_NOT_TEXT"].format(path=path)
            return self._failed(step, path, "error", decision, reason)
        size = len(text.encode("utf-8", errors="replace"))
        body = neutralise(text.replace("\r\n", "\n")).strip("\n") or p["SKILL_FILE_EMPTY"]
        body, _ = cap(
            body,
            max_bytes=LLM_MAX_BYTES,
            max_lines=LLM_MAX_LINES,
            marker=lambda lines, size: p["SKILL_OUTPUT_OMITTED"].format(lines=lines, bytes=size),
        )
        content = self.redactor(body)
        sent = p["SKILL_FILE_CONTENT"].format(content=content)
        self.emit(
            FileRead(
                step=step, path=path, status="done", by=decision.by, bytes=size, sent_to_llm=sent
            )
        )
        return FileOutcome(path, "done", decision, sent, content=content, bytes=size)

    async def _read(self, path: str) -> str | None:
        while True:
            try:
                return await self.runner.read_file(path, timeout=self.read_timeout)
            except HostError as e:
                # The read never reached the host (no connection): safe to try again.
                if not await self.operator.retry(e):
                    raise
                self.emit(Notice(message=f"retrying the file read after: {e}"))

    def _failed(
        self, step: int, path: str, status: ActionStatus, decision: Decision, reason: str
    ) -> FileOutcome:
        sent = self.prompts["SKILL_FILE_ERROR"].format(reason=reason)
        self.emit(
            FileRead(
                step=step,
                path=path,
                status=status,
                by=decision.by,
                reason=reason,
                sent_to_llm=sent,
            )
        )
        return FileOutcome(path, status, decision, sent, reason=reason)
