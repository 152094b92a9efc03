"""What stands between host data and the LLM, the screen and the transcript.

* Redaction: every event the session emits and every message it keeps passes through the
  run's `Redactor`; streamed output is redacted line by line, and a private key left
  open at the end of one chunk stays masked in the next until its END line.
* Fencing: command output and knowledge files are data. A line in them that the reply
  parser would take for a directive (`[DONE]`, `[CMD] rm -rf /`, `**[ASK]**`) or for the
  step counter is escaped with a backslash before the tag, so the LLM reads it as quoted
  text; only the LLM's own reply is ever parsed.
* Showing: text kosmos did not write itself (an LLM's reply, a name from a file, a host's
  output) reaches a person's screen through `visible`: a character that would steer the
  terminal or hide itself is drawn as a symbol, so what the operator reads is what is there.
"""

from __future__ import annotations

import functools
import re
import types
from typing import Any, Union, get_args, get_origin

import msgspec
from msgspec.structs import replace

from kosmos.engine.parser import _TAG_RE
from kosmos.events import CommandOutput, Event, Message
from kosmos.safety import Redactor
from kosmos.safety.redact import block_end, open_block
from kosmos.safety.secret_patterns import LONG_KEYS, SHORT_KEYS, TOKENS

_STEP_RE = re.compile(r"^([ \t>*_`]*)(\[\s*Step\s+\d+\s+of\s+\d+\s*\])", re.IGNORECASE)
_LEAD = re.compile(r"^[ \t>*_`]*")

# What a terminal does not draw as a character of its own: C0 and C1 controls (ESC starts
# the sequences that move the cursor, erase, recolour or retitle), DEL, and the format and
# separator characters of Unicode (bidi overrides and isolates, zero-width spaces and
# joiners, invisible operators, tag characters, U+2028/2029), and the marks and letters that
# draw as nothing: the combining grapheme joiner and the variation selectors carry any bytes
# after a visible character (a payload for `exec` hidden behind `exec(`). Each is drawn as
# a symbol: a C0 control as its control picture (ESC as ␛, CR as ␍), the others as ⟨U+XXXX⟩.
_HIDDEN = (
    (0x00, 0x1F),
    (0x7F, 0x9F),
    (0xAD, 0xAD),
    (0x34F, 0x34F),  # combining grapheme joiner: a mark that draws as nothing
    (0x600, 0x605),
    (0x61C, 0x61C),
    (0x6DD, 0x6DD),
    (0x70F, 0x70F),
    (0x890, 0x891),
    (0x8E2, 0x8E2),
    (0x115F, 0x1160),  # Hangul fillers: letters that draw as nothing
    (0x17B4, 0x17B5),  # Khmer inherent vowels: letters that draw as nothing
    (0x180B, 0x180F),  # Mongolian variation selectors and vowel separator
    (0x200B, 0x200F),
    (0x2028, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),  # variation selectors: marks that draw as nothing, a byte each
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF9, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE007F),
    (0xE0100, 0xE01EF),  # variation selectors supplement: 240 more byte-carrying marks
)


def _symbol(code: int) -> str:
    if code < 0x20:
        return chr(0x2400 + code)
    return "\u2421" if code == 0x7F else f"\u27e8U+{code:04X}\u27e9"


_ONE_LINE: dict[int, str] = {
    code: _symbol(code) for low, high in _HIDDEN for code in range(low, high + 1)
}
_LINES = {code: sym for code, sym in _ONE_LINE.items() if code not in (0x09, 0x0A)}
_OUTPUT = {code: sym for code, sym in _LINES.items() if code != 0x0D}
_SGR = re.compile(r"(\x1b\[[0-9;:]*m)")


def visible(text: str, *, one_line: bool = False) -> str:
    """`text` as it may be drawn for a person: every character that would steer the terminal
    or hide itself shown as a symbol. Tabs and line feeds stay, unless `one_line` (a name, a
    table's cell)."""
    return text.translate(_ONE_LINE if one_line else _LINES)


def visible_output(text: str, *, colours: bool = True) -> str:
    """A command's output for a screen: as `visible`, but a carriage return stays (it ends a
    line there) and, with `colours`, so do SGR sequences (colour, bold) for the screen to draw.
    Only the LLM and the transcript get the cleaned text (`kosmos.clean`)."""
    if not colours or "\x1b" not in text:
        return text.translate(_OUTPUT)
    parts = _SGR.split(text)
    parts[::2] = [part.translate(_OUTPUT) for part in parts[::2]]
    return "".join(parts)


# A partial line longer than this is shown before its newline arrives, all but its last
# characters, cut where no secret can straddle the cut (LineRedactor).
MAX_PENDING = 4096
KEEP_PENDING = 128


def neutralise(text: str) -> str:
    """`text` with every line that reads as a directive or a step marker escaped."""
    if "[" not in text:
        return text
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if "[" not in line:
            continue
        if _TAG_RE.match(line) or _STEP_RE.match(line):
            lead = _LEAD.match(line)
            at = lead.end() if lead else 0
            lines[i] = line[:at] + "\\" + line[at:]
    return "\n".join(lines)


# Fields that never carry host data or secrets: not worth a pass of the redactor.
_PLAIN_FIELDS = frozenset({"type", "ts", "host", "run_id", "step", "kind", "status"})


# Annotations of fields that hold no text: numbers, flags, nothing.
_NO_TEXT = frozenset({int, float, bool, type(None)})


@functools.cache
def _text_fields(kind: type[Event]) -> tuple[str, ...]:
    """The fields of an event type that may hold text: those the redactor is to read."""
    names = []
    for field in msgspec.structs.fields(kind):
        name, annotation = field.name, field.type
        union = get_origin(annotation) in (Union, types.UnionType)
        kinds = set(get_args(annotation) if union else (annotation,))
        if name in _PLAIN_FIELDS or kinds <= _NO_TEXT:
            continue
        names.append(name)
    return tuple(names)


def _plain(value: Any) -> bool:
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return all(_plain(v) for v in value)
    return value is None or isinstance(value, str | int | float | bool)


def redact_event(event: Event, redactor: Redactor) -> Event:
    """The event with every string in it redacted (the same object when nothing changed)."""
    changed: dict[str, Any] = {}
    for name in _text_fields(type(event)):
        value = getattr(event, name)
        if isinstance(value, str):
            clean: Any = redactor(value)
        elif isinstance(value, list) and value and all(isinstance(m, Message) for m in value):
            clean = [redact_message(m, redactor) for m in value]
        elif isinstance(value, dict | list | tuple) and value and _plain(value):
            clean = redactor.redact_obj(value)
        elif isinstance(value, dict | list | tuple | msgspec.Struct) and value:
            # Nested records (tool calls): redact their plain form, rebuild the field.
            plain = msgspec.to_builtins(value)
            redacted = redactor.redact_obj(plain)
            if redacted == plain:
                continue
            clean = msgspec.convert(redacted, _annotation(type(event), name))
        else:
            continue
        if clean != value:
            changed[name] = clean
    return replace(event, **changed) if changed else event


@functools.cache
def _annotation(kind: type[Event], name: str) -> Any:
    return next(f.type for f in msgspec.structs.fields(kind) if f.name == name)


def outgoing(event: Event, host: str, redactor: Redactor) -> Event:
    """An event as it leaves the engine: tagged with its host, every string redacted.

    Streamed output (`CommandOutput`) is redacted line by line where it is produced
    (`LineRedactor`) and passes as it is.
    """
    if event.host is None:
        event = replace(event, host=host)
    if isinstance(event, CommandOutput):
        return event
    return redact_event(event, redactor)


def redact_message(message: Message, redactor: Redactor) -> Message:
    """The message with its text and any tool-call arguments redacted."""
    content = redactor(message.content)
    calls = tuple(replace(c, args=redactor.redact_obj(c.args)) for c in message.tool_calls)
    if content == message.content and calls == message.tool_calls:
        return message
    return replace(message, content=content, tool_calls=calls)


class LineRedactor:
    """Redacts streamed output a line at a time, so a secret split across chunks is caught.

    * It remembers a private key (or PuTTY's private lines) left open at the end of a chunk
      and shows nothing of what follows until the block ends, however the chunks split.
    * Each chunk is redacted below the lines shown just before it, so that what only shows
      across lines (a value under its YAML key, a .netrc entry, a key's END line above its
      body) is caught when the chunk boundary falls between them.
    * A run of base64 lines at the end of a chunk waits for the next one: the body of a key
      without its BEGIN line is masked as a block, and the block may go on.
    * A line too long to wait for is shown in parts, cut only after a blank that no secret's
      label or hint stands near; without one it waits, and past HOLD_LIMIT it is not shown.
    """

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor
        self._pending = ""
        self._block: str | None = None
        self._context = ""
        self._skipping = False
        # How long the pending line was when no safe cut was found in it: looked at again
        # once it has grown by SAFE_WINDOW, not at every chunk.
        self._tried = 0

    def feed(self, text: str) -> str:
        """Complete lines (and a very long partial one) ready to show, redacted."""
        text = self._pending + text
        if self._skipping:  # the rest of a line too long to hold, never shown
            ends = [at for at in (text.find("\n"), text.find("\r")) if at >= 0]
            if not ends:
                self._pending = ""
                return ""
            text, self._skipping, self._context = text[min(ends) :], False, ""
        cut = max(text.rfind("\n"), text.rfind("\r")) + 1
        if cut == 0 and len(text) > MAX_PENDING and len(text) >= self._tried + SAFE_WINDOW:
            cut = _safe_cut(text, len(text) - KEEP_PENDING)
            self._tried = 0 if cut else len(text)
            if cut == 0 and len(text) > HOLD_LIMIT:
                self._pending, self._skipping, self._tried = "", True, 0
                return f"[… a line of over {HOLD_LIMIT // 1024} KiB not shown …]"
        elif cut:
            self._tried = 0
            cut = _held_back(text, cut)
        self._pending = text[cut:]
        return self._show(text[:cut]) if cut else ""

    def flush(self) -> str:
        text, self._pending = self._pending, ""
        if self._skipping:
            self._skipping = False
            return ""
        return self._show(text) if text else ""

    def _show(self, text: str) -> str:
        if self._block is not None:
            end = block_end(text, self._block)
            if end is None:
                return ""  # still inside the block: all of it is secret
            text, self._block, self._context = text[end:], None, ""
        self._block = open_block(text)
        context = self._context
        self._context = _tail(context + text)
        if not context or not _OPENS_LINES.search(context):
            return self.redactor(text)
        head = self.redactor(context)
        whole = self.redactor(context + text)
        return whole[len(head) :] if whole.startswith(head) else self.redactor(text)


# Lines of context a chunk is redacted below: the last CONTEXT_LINES, and back to the last
# line that starts at the left margin (a YAML key above its block) within CONTEXT_MAX_LINES.
CONTEXT_LINES = 16
CONTEXT_MAX_LINES = 64
# What in the lines above a chunk may begin a secret that goes on below: a key with nothing
# after its colon (YAML), a .netrc entry, a key's armour. Without it, the chunk is redacted
# alone (the cheap way).
_OPENS_LINES = re.compile(
    r"(?m):[ \t]*(?:[|>][-+0-9]*)?[ \t]*(?:#[^\n]*)?\r?$"
    r"|\bmachine\b|\bdefault\b|-----(?:BEGIN|END) "
    # a value on the next line (redis-cli's CONFIG GET), a token folded onto it
    r"|(?i:requirepass|masterauth)\"?[ \t]*\r?$|\bgh[pousr]_[A-Za-z0-9]{8,35}\r?$"
)
# Base64 lines held back at the end of a chunk, at most (then they are shown, masked or not).
HOLD_B64_LINES = 200
_B64_LINE = re.compile(r"[A-Za-z0-9+/]{16,76}={0,2}\r?")
# A long line is cut after a blank at least this far from any secret's label or hint.
SAFE_WINDOW = 256
HOLD_LIMIT = 1024 * 1024
# Hints of tokens without blanks, which a cut after a blank cannot split, and so common in
# text (`s.`, a Vault token's) that a long line would seldom be cut at all.
_UNSPLIT = frozenset({"s."})
_RISKY = re.compile(
    "|".join(
        [
            re.escape(h)
            for h in sorted({h for t in TOKENS for h in t[0] if len(h) > 1} - _UNSPLIT, key=len)
        ]
        + [LONG_KEYS, SHORT_KEYS, r"-----", r"\bbegin\b", r"\bmachine\b", r"\bdefault\b"]
    )
)


def _tail(text: str) -> str:
    lines = text.split("\n")
    keep = min(len(lines), CONTEXT_LINES)
    for back in range(keep, min(len(lines), CONTEXT_MAX_LINES) + 1):
        line = lines[-back]
        if line[:1] not in ("", " ", "\t"):
            keep = max(keep, back)
            break
    return "\n".join(lines[-keep:])


def _held_back(text: str, cut: int) -> int:
    """Where to cut instead so that a run of base64 lines at the end waits for the next
    chunk; `cut` itself when there is none, or it has grown past HOLD_B64_LINES."""
    start = cut
    for count in range(HOLD_B64_LINES + 1):
        line_start = text.rfind("\n", 0, max(start - 1, 0)) + 1
        if start == 0 or not _B64_LINE.fullmatch(text, line_start, start - 1):
            return start
        if count == HOLD_B64_LINES:
            return cut
        start = line_start
    return cut


def _safe_cut(text: str, limit: int) -> int:
    """A place at or before `limit` to cut a long line where no secret can straddle the cut:
    right after a blank, with no secret's label or hint within SAFE_WINDOW before it. 0 when
    there is none."""
    last = -SAFE_WINDOW
    for risky in _RISKY.finditer(text.lower(), 0, limit):
        last = risky.end()
    blank = max(text.rfind(" ", 0, limit), text.rfind("\t", 0, limit))
    return blank + 1 if blank >= last + SAFE_WINDOW else 0
