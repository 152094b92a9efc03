"""Render engine events for people (line mode, headless text) or machines (--json)."""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

from kosmos.engine.approval import unasked_line
from kosmos.engine.guard import visible, visible_output
from kosmos.engine.parser import ACTION_TAGS
from kosmos.events import (
    Answer,
    CapabilityFallback,
    CommandDecision,
    CommandFinished,
    CommandOutput,
    CommandStarted,
    Directive,
    Event,
    FileRead,
    FormatError,
    KnowledgeLoaded,
    LLMReply,
    LLMRequest,
    LLMRetry,
    MemoryAction,
    Notice,
    RunFinished,
    RunStarted,
    SkillFolderReady,
    dump,
)
from kosmos.frontends.console import Console

# Lines of one command's output shown live; the rest is counted (the transcript keeps it).
LIVE_LINES = 400
# Lines of a [STORE] / [APPEND_MEMORY] text shown under the directive.
CONTENT_LINES = 8


class TextRenderer:
    """Human-readable progress: each directive, streamed output, one status line per command."""

    def __init__(self, console: Console, *, show_prompts: bool = True) -> None:
        self.c = console
        self.show_prompts = show_prompts
        self._lines = 0
        self._hidden = 0
        self._at_line_start = True
        self._shown = False

    def __call__(self, event: Event) -> None:
        c = self.c
        match event:
            case RunStarted():
                source = f"model {event.model}"
                if event.replay_of:
                    source = f"replaying {event.replay_of} (no LLM)"
                c.say(
                    c.style(f"▶ {visible(event.skill, one_line=True)}", "1")
                    + f" on {visible(event.host or '', one_line=True)} · {visible(source)}"
                    + f" · up to {event.max_steps} steps"
                    + (f" · protocol {event.protocol}" if event.protocol != "tags" else "")
                )
                if event.policy != "ask" or event.lock:
                    lock = f" · lock {event.lock}" if event.lock and event.policy != "auto" else ""
                    c.say(c.style(f"  policy: {event.policy}{lock}", "2"))
                if event.memory:
                    notes = f" · notes in {event.memory_dir}" if event.memory_dir else ""
                    c.say(c.style(f"  memory on{notes} · target OS: {event.os or 'unknown'}", "2"))
                for k, v in event.params.items():
                    c.say(f"  {visible(k, one_line=True)} = {visible(v, one_line=True)}")
            case KnowledgeLoaded():
                path = visible(event.path, one_line=True)
                c.say(c.style(f"  knowledge: {path} ({len(event.text)} chars)", "2"))
            case SkillFolderReady():
                how = {"local": "", "remote": " (kept on the host)"}.get(
                    event.how, f" ({event.how})"
                )
                files = _count(len(event.files), "file")
                base = visible(event.base, one_line=True)
                c.say(c.style(f"  skill files: {files} in {base}{how}", "2"))
            case FileRead() | MemoryAction():
                self._action(event)
            case LLMRequest():
                c.start_spinner(f"step {event.step}: thinking")
            case LLMRetry():
                c.say(
                    c.style(
                        f"  LLM: {visible(event.reason)}; retry {event.attempt} in "
                        f"{event.delay_s:.1f}s",
                        "33",
                    ),
                    stream=c.err,
                )
            case LLMReply():
                c.stop_spinner()
            case FormatError():
                c.say(
                    c.style(
                        f"  [step {event.step}] reply without a tag ({event.count} in a row): "
                        f"{_first_line(event.reply)!r}",
                        "33",
                    )
                )
            case Directive():
                self._directive(event)
            case CommandDecision() if event.decision == "refused":
                c.say(c.style(f"  refused: {visible(event.reason)}", "33"))
            case CommandDecision() if why := unasked_line(event):
                c.say(c.style(f"  {visible(why)}", "2"))
            case CommandDecision() if event.decision == "skip":
                c.say(c.style("  skipped", "2"))
            case CommandDecision() if event.decision == "edit":
                self._command("  edited: ", event.command, "2")
            case CommandStarted():
                self._lines = self._hidden = 0
                self._shown = False
                self._at_line_start = True
            case CommandOutput():
                self._output(visible_output(event.text, colours=c.color))
            case CommandFinished():
                self._finished(event)
            case Answer():
                shown = "(skipped)" if event.answer is None else visible(event.answer)
                c.say(c.style(f"  ↳ {shown}", "2"))
            case Notice():
                c.say(c.style(f"  ! {visible(event.message)}", "33"), stream=c.err)
            case CapabilityFallback():
                c.say(
                    c.style(
                        f"  ! the LLM refused {event.capability}; using {event.next} from now on",
                        "33",
                    ),
                    stream=c.err,
                )
            case RunFinished():
                self._result(event)
            case _:
                pass

    def _directive(self, event: Directive) -> None:
        # Everything here is the LLM's: drawn with its control characters visible, so that
        # what the operator reads is what runs (an ESC[2K in a command cannot erase it).
        c = self.c
        if event.said and event.said != event.text:
            c.say(c.style(f"[{event.step}] ", "34") + visible(event.said))
        if event.kind == "cmd":
            note = c.style(" (inferred: the reply had no tag)", "33") if event.inferred else ""
            self._command(f"[{event.step}] $ ", event.text, "36", note)
        elif event.kind == "ask":
            tag = "ASK" if event.required else "ASK:optional"
            c.say(c.style(f"[{event.step}] {tag} ", "35") + visible(event.text))
        elif event.kind == "message":
            c.say(c.style(f"[{event.step}] ", "34") + visible(event.text))
        elif event.kind == "done":
            c.say(c.style(f"[{event.step}] DONE ", "32") + visible(event.text))
        else:
            tag = ACTION_TAGS[event.kind]
            c.say(c.style(f"[{event.step}] {tag} ", "36") + c.style(visible(event.text), "1"))
            for line in visible(event.content).splitlines()[:CONTENT_LINES]:
                c.say(c.style(f"    {line}", "2"))
            hidden = len(event.content.splitlines()) - CONTENT_LINES
            if hidden > 0:
                c.say(c.style(f"    … {hidden} more lines", "2"))

    def _command(self, head: str, command: str, color: str, note: str = "") -> None:
        """A command as it runs: every line of it, each under the first, controls visible."""
        c = self.c
        first, *rest = visible(command).split("\n")
        c.say(c.style(head, color) + c.style(first, "1") + note)
        gutter = " " * max(len(head) - 2, 0) + "│ "
        for line in rest:
            c.say(c.style(gutter, color) + c.style(line, "1"))

    def _action(self, event: FileRead | MemoryAction) -> None:
        """The end of a [GET-FILE] or memory step: what it did, or why not."""
        c = self.c
        if event.status == "done":
            if isinstance(event, FileRead):
                head = f"read · {_size(event.bytes)}"
            else:
                head = {
                    "store": f"stored · {_size(event.bytes)}",
                    "append": f"appended · {_size(event.bytes)} now",
                    "retrieve": f"retrieved · {_size(event.bytes)}",
                    "list": "listed",
                    "delete": "deleted",
                }[event.action]
            c.say(c.style(f"  └ {head}", "32"))
        elif event.status == "skipped":
            c.say(c.style("  └ skipped", "2"))
        else:
            reason = visible(_first_line(event.reason, 300))
            c.say(c.style(f"  └ {event.status}: {reason}", "33"))

    def _output(self, text: str) -> None:
        if self._lines >= LIVE_LINES:
            self._hidden += text.count("\n")
            return
        lines = text.split("\n")
        budget = LIVE_LINES - self._lines
        if len(lines) - 1 > budget:
            shown = "\n".join(lines[:budget]) + "\n"
            self._hidden += len(lines) - 1 - budget
            self._lines = LIVE_LINES
        else:
            shown = text
            self._lines += text.count("\n")
        self.c.write(shown)
        self._shown = True
        self._at_line_start = shown.endswith("\n")

    def _finished(self, event: CommandFinished) -> None:
        c = self.c
        if c.color and self._shown:
            c.write("\x1b[0m")  # a colour the output left on ends with it
        if not self._at_line_start:
            c.write("\n")
            self._at_line_start = True
        if self._hidden:
            c.say(c.style(f"  … {self._hidden} more lines not shown (kept in the transcript)", "2"))
        parts = [f"{event.duration_s:.1f}s", _size(event.bytes)]
        if event.timed_out:
            head, color = "timed out, stopped", "31"
        elif event.cancelled:
            head, color = "stopped", "33"
        elif event.connection_lost:
            head, color = "connection lost, exit status unknown", "31"
        elif event.exit_code == 0:
            head, color = "exit 0", "32"
        else:
            head, color = f"exit {event.exit_code}", "31"
        c.say(c.style(f"  └ {head} · " + " · ".join(parts), color))

    def _result(self, event: RunFinished) -> None:
        c = self.c
        color = "32" if event.status == "done" else "31"
        label = {"done": "done", "step_limit": "step limit", "needs_input": "needs input"}.get(
            event.status, event.status
        )
        summary = (
            f"{label} · {_count(event.steps, 'step')} · {_count(event.commands_run, 'command')}"
            f" · {event.duration_s:.1f}s"
        )
        c.say(c.style(f"■ {summary}", color), stream=c.err if event.status != "done" else c.out)
        if event.status != "done":
            c.error(f"kosmos: {event.message}")
        if event.transcript:
            c.say(c.style(f"  transcript: {event.transcript}", "2"), stream=c.err)


class JsonRenderer:
    """`--json`: one JSON object per line on stdout, each with a `type`; `result` comes last.

    Lines are written through `console` (Console.put), which tells the front end once when
    the reader of stdout went away."""

    def __init__(self, out: TextIO | None = None, *, console: Console | None = None) -> None:
        self.out = out or sys.stdout
        self.console = console or Console()

    def __call__(self, event: Event) -> None:
        if not event.persist:
            return
        data = dump(event)
        if isinstance(event, CommandFinished):
            # The raw output (up to 1 MiB) stays in the transcript; --json carries what the LLM saw.
            data.pop("output", None)
        line = json_line(data, screen=self.console.is_tty(self.out))
        self.console.put(self.out, line + "\n")


def json_line(data: Any, *, screen: bool) -> str:
    """One JSON line. For a `screen` (stdout is a terminal) every character that is not
    printable ASCII is written as an escape: a JSON string keeps C1 controls, DEL, bidi
    overrides and invisible marks as they are, and a terminal would obey or hide them."""
    if not screen:
        return json.dumps(data, ensure_ascii=False)
    return json.dumps(data).replace("\x7f", "\\u007f")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _first_line(text: str, limit: int = 120) -> str:
    stripped = text.strip()
    return stripped.splitlines()[0][:limit] if stripped else ""


def _size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size} B"
