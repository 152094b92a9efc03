"""Terminal output made fit for an LLM: escapes stripped, overwrites applied, noise collapsed.

`clean` turns raw command output (str or bytes) into the text a person would read on the
screen: ANSI/VT escapes removed, carriage returns and backspaces applied the way a terminal
shows them, trailing blanks and blank lines dropped, runs of identical lines collapsed and
shell prompts or Windows banners removed. `cap` then bounds the result by bytes and lines,
keeping a head and a tail around one marker line.

Speed: the work happens on UTF-8 bytes, in line-aligned blocks small enough to stay in the
CPU cache, with C-level primitives (memchr scans, one regex split per block, bytes.rstrip
mapped over the lines). Only lines holding a CR that is not a line end, a backspace or a
cursor-moving escape go through the per-line screen model, and a progress bar's frames
before its last erase are skipped without being parsed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from itertools import compress, count, islice, repeat
from operator import eq, itemgetter
from typing import AnyStr

__all__ = ["DEFAULT_MAX_BYTES", "DEFAULT_MAX_LINES", "cap", "clean", "default_marker"]

DEFAULT_MAX_BYTES = 10 * 1024
DEFAULT_MAX_LINES = 256

# Every escape except the cursor moves the line model applies (CUF C, CUB D, CHA G, EL K):
# those stay in the text until the lines holding them are rendered.
_ESCAPE_SOURCE = (
    r"\x1b(?:"  # possessive quantifiers: same matches, less work for the regex engine
    r"\[[0-?]*+[ -/]*+[@-BEFH-JL-~]"  # CSI: colours, cursor addressing, private modes
    r"|[\]PX^_](?:[^\x07\x1b]*+(?:\x07|\x1b\\)|[^\x07\x1b\n]*+)"  # OSC DCS SOS PM APC; an
    # unterminated string is cut at the end of its line rather than eating the output
    r"|[ -/]++[0-~]"  # nF: charset designations ESC ( B, ESC ) 0 ...
    r"|[0-Z\\-~]"  # Fp/Fe/Fs: ESC 7, ESC 8, ESC =, ESC >, ESC M, ESC c ... ('[' excluded)
    r")"
)
_ESCAPE_BYTES = re.compile(_ESCAPE_SOURCE.encode("ascii"))
_ESCAPE_TEXT = re.compile(_ESCAPE_SOURCE)

# What is left on a line once _ESCAPE_TEXT has run: cursor moves, and stray or cut-off
# escapes that are dropped.
_CURSOR = re.compile(r"\r|\x08|\x1b\[([0-?]*)([CDGK])|\x1b\[[0-?]*[ -/]*|\x1b")

# CR then one of these, or this then CR, leaves the line blank with the cursor at column 0:
# whatever was drawn before is gone. Progress bars redraw this way.
_ERASES_AFTER_CR = (b"\x1b[K", b"\x1b[0K", b"\x1b[2K")
_ERASE_LINE = b"\x1b[2K"

# C0 controls other than BEL, BS, TAB, LF, CR and ESC. BEL ends an OSC, so it goes after
# the escape split.
_C0_DROP = bytes([*range(0x07), 0x0B, 0x0C, *range(0x0E, 0x1B), *range(0x1C, 0x20), 0x7F])

# C1 controls arrive UTF-8 encoded (C2 80..C2 9F). The 8-bit introducers become their 7-bit
# forms so one escape grammar covers both; the other C1 controls are dropped.
_C1 = re.compile(rb"\xc2([\x80-\x9f])")
_C1_AS_7BIT = {
    b"\x90": b"\x1bP",
    b"\x98": b"\x1bX",
    b"\x9b": b"\x1b[",
    b"\x9c": b"\x1b\\",
    b"\x9d": b"\x1b]",
    b"\x9e": b"\x1b^",
    b"\x9f": b"\x1b_",
}

# A CR that overwrites; CR LF is a plain line end, which bytes.rstrip takes care of.
_LONE_CR = re.compile(rb"\r(?!\n)")

# kosmos-panel stripped these from terminal captures. Only at the start of a line; a Unix
# prompt character must end the word, so "bob@example.com: $5 paid" survives, while cmd.exe
# prints the command straight after its ">".
_PROMPT = re.compile(
    rb"(?:"
    rb"(?:[\w.-]++@[\w.-]++:[^\s$#>]*+[$#>]"  # user@host:~/dir$
    rb"|\[[\w.-]++@[\w.-]++ [^\]\n]*+\][$#]"  # [user@host dir]$
    rb")(?=[ \r\n]|\Z) ?"
    rb"|(?:PS )?[A-Za-z]:\\[^<>:\"|?*\r\n]*+> ?"  # C:\Users\me>dir  PS C:\Users\me> dir
    rb")"
)
# Every prompt holds one of these; lines without them are never tried.
_PROMPT_HINTS = (b"@", b"\\")
_WINDOWS_BANNERS = (
    b"Microsoft Windows [Version",
    b"(c) Microsoft Corporation",
    b"Copyright (c) Microsoft Corporation",
)

# Whitespace str.rstrip() removes but bytes.rstrip() does not (the rest are controls), and
# the bytes their UTF-8 forms end with.
_UNICODE_SPACES = tuple(
    c.encode()
    for c in "\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
_SPACE_ENDS = bytes(int(b in {space[-1] for space in _UNICODE_SPACES}) for b in range(256))

# Lines are handled a block at a time so that the regex split, the joins and the line split
# reuse the CPU cache instead of streaming the whole input through memory at every step.
_BLOCK = 1 << 17
_DECODE_LINES = 4096


def clean(text: str | bytes) -> str:
    """Return what a terminal would show for `text`, minus blank lines, prompts and repeats.

    Bytes are decoded as UTF-8 with invalid sequences replaced by U+FFFD. Lines come back
    right-stripped and joined by "\\n" without a trailing one; a run of N > 1 identical
    adjacent lines becomes one line ending in " [repeated N times]".
    """
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
    lines: list[bytes] = []
    repeats: list[int] = []  # each i with lines[i] == lines[i + 1]
    for block in _blocks(data):
        new = _clean_block(block)
        if lines and new and lines[-1] == new[0]:
            repeats.append(len(lines) - 1)
        repeats += compress(count(len(lines)), map(eq, new, islice(new, 1, None)))
        lines += new
    if repeats:
        lines = _collapse(lines, repeats)
    return "\n".join(
        [
            b"\n".join(lines[i : i + _DECODE_LINES]).decode("utf-8", "replace")
            for i in range(0, len(lines), _DECODE_LINES)
        ]
    )


def default_marker(lines: int, nbytes: int) -> str:
    """The line `cap` puts where it left text out."""
    return f"[... {lines} lines ({nbytes} bytes) omitted ...]"


def cap(
    text: str,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_lines: int = DEFAULT_MAX_LINES,
    marker: Callable[[int, int], str] = default_marker,
) -> tuple[str, bool]:
    """Bound `text` to `max_bytes` UTF-8 bytes and `max_lines` lines; say whether it was cut.

    Lines are what `text.split("\\n")` gives. A cut keeps whole lines from the head and the
    tail (a lone line too long for its half is cut at a character boundary) around one line
    `marker(omitted_lines, omitted_bytes)`: the lines left out entirely (a line cut in two
    counts as kept) and the UTF-8 size of the text between head and tail, not counting the
    line breaks that stay around the marker. The result, marker included, respects both
    limits; ValueError if they cannot even hold the marker.
    """
    total_bytes = _utf8_len(text)
    lines = text.split("\n")
    if total_bytes <= max_bytes and len(lines) <= max_lines:
        return text, False
    # The counts in the final marker are at most these, so this marker is the longest one
    # unless a custom marker grows as its numbers shrink; the loop covers that case.
    reserve = _utf8_len(marker(len(lines), total_bytes)) + 2  # + the line breaks around it
    while max_bytes - reserve >= 0 and max_lines >= 1:
        result = _cut(text, lines, max_bytes - reserve, max_lines - 1, marker)
        size = _utf8_len(result)
        if size <= max_bytes and result.count("\n") < max_lines:
            return result, True
        if size <= max_bytes:
            break  # a marker that spans lines: more room will not help
        reserve += size - max_bytes
    raise ValueError(f"max_bytes={max_bytes}, max_lines={max_lines} cannot hold the marker")


def _blocks(data: bytes) -> Iterator[bytes]:
    """`data` in blocks of about _BLOCK bytes, each ending at a line break."""
    start = 0
    while start < len(data):
        end = data.find(b"\n", start + _BLOCK)
        end = len(data) if end < 0 else end + 1
        yield data[start:end]
        start = end


def _clean_block(block: bytes) -> list[bytes]:
    """The non-blank, right-stripped lines of a block that ends at a line break."""
    ascii_only = block.isascii()
    if any(map(block.__contains__, _C0_DROP)):
        block = block.translate(None, _C0_DROP)
    if b"\xc2" in block:
        block = _C1.sub(_c1_as_7bit, block)
    if b"\r" in block or b"\x08" in block:
        # Before the escape split, so a progress bar's erased frames are dropped unparsed.
        block = _render_lines(block, _next_lone_cr, _next_backspace)
    if b"\x1b" in block:
        block = b"".join(_ESCAPE_BYTES.split(block))
        if b"\x1b" in block:  # cursor moves on lines without CR or BS, or stray escapes
            block = _render_lines(block, _next_escape)
    if b"\x07" in block:
        block = block.replace(b"\x07", b"")
    if any(map(block.__contains__, _PROMPT_HINTS)):
        block = _strip_prompts(block)
    lines = list(filter(None, map(bytes.rstrip, block.split(b"\n"))))
    if any(map(bytes.startswith, lines, repeat(_WINDOWS_BANNERS))):
        lines = [line for line in lines if not line.startswith(_WINDOWS_BANNERS)]
    return lines if ascii_only else _rstrip_unicode(lines)


def _c1_as_7bit(match: re.Match[bytes]) -> bytes:
    return _C1_AS_7BIT.get(match[1], b"")


def _next_lone_cr(data: bytes, pos: int) -> int:
    at = data.find(b"\r", pos)  # memchr; the regex only to step over CR LF line ends
    if at >= 0 and data[at + 1 : at + 2] == b"\n":
        match = _LONE_CR.search(data, at + 2)
        at = match.start() if match else -1
    return at


def _next_backspace(data: bytes, pos: int) -> int:
    return data.find(b"\x08", pos)


def _next_escape(data: bytes, pos: int) -> int:
    return data.find(b"\x1b", pos)


def _render_lines(block: bytes, *finders: Callable[[bytes, int], int]) -> bytes:
    """Replace each line where a finder hits by what the terminal shows for it."""
    view = memoryview(block)  # slices of it are not copies
    pieces: list[bytes | memoryview] = []
    copied = 0
    hits = [(at, find) for find in finders if (at := find(block, 0)) >= 0]
    while hits:
        first = min(at for at, _ in hits)
        start = block.rfind(b"\n", 0, first) + 1
        end = block.find(b"\n", first)
        if end < 0:
            end = len(block)
        pieces += (view[copied:start], _render_line(block, start, end))
        copied = end
        hits = [(at if at >= end else find(block, end), find) for at, find in hits]
        hits = [(at, find) for at, find in hits if at >= 0]
    if not pieces:
        return block
    pieces.append(view[copied:])
    return b"".join(pieces)


def _render_line(block: bytes, start: int, end: int) -> bytes:
    """What the terminal shows for block[start:end], one line."""
    cr = block.rfind(b"\r", start, end)
    if cr > start and (
        block.startswith(_ERASES_AFTER_CR, cr + 1, end) or block.endswith(_ERASE_LINE, start, cr)
    ):
        start = cr  # the frames before were erased: skip them unparsed
    line = block[start:end]
    if line.isascii() and b"\x1b" not in line and b"\x08" not in line and b"\x07" not in line:
        return _overlay(line.split(b"\r"))  # one byte per column
    text = line.decode("utf-8", "surrogateescape")  # columns are characters, not bytes
    return _render(text).encode("utf-8", "surrogateescape")


def _render(line: str) -> str:
    """The visible content of one terminal line: overwrites, backspaces and erases applied."""
    if "\x1b" in line:
        line = _ESCAPE_TEXT.sub("", line)
    if "\x07" in line:
        line = line.replace("\x07", "")
    if "\x1b" not in line and "\x08" not in line:
        return _overlay(line.split("\r"))
    screen = ""
    col = 0
    pos = 0
    for match in _CURSOR.finditer(line):
        if match.start() > pos:
            screen, col = _write(screen, col, line[pos : match.start()])
        pos = match.end()
        token = match[0]
        if token == "\r":
            col = 0
        elif token == "\x08":
            col = max(col - 1, 0)
        elif match[2]:
            digits = match[1].lstrip("?").split(";")[0]
            n = int(digits) if digits.isdigit() else 0
            final = match[2]
            if final == "K":
                if n == 0:
                    screen = screen[:col]
                elif n == 1:
                    screen = " " * min(col + 1, len(screen)) + screen[col + 1 :]
                elif n == 2:
                    screen = ""
            elif final == "G":
                col = max(n, 1) - 1
            elif final == "C":
                col += max(n, 1)
            else:  # D
                col = max(col - max(n, 1), 0)
        # anything else left here is a stray or cut-off escape: dropped
    if pos < len(line):
        screen, col = _write(screen, col, line[pos:])
    return screen


def _overlay(frames: list[AnyStr]) -> AnyStr:
    """What shows after each frame is written over the one before, from column 0."""
    screen = frames[-1]
    if len(screen) >= max(map(len, frames)):
        return screen  # the last frame covers every earlier one
    screen = frames[0]
    for frame in islice(frames, 1, None):
        screen = frame + screen[len(frame) :]
    return screen


def _write(screen: str, col: int, text: str) -> tuple[str, int]:
    if col > len(screen):
        screen += " " * (col - len(screen))
    end = col + len(text)
    return screen[:col] + text + screen[end:], end


def _strip_prompts(block: bytes) -> bytes:
    """Cut prompts off the starts of the lines holding a hint."""
    spans: set[tuple[int, int]] = set()
    for hint in _PROMPT_HINTS:
        at = block.find(hint)
        while at >= 0:
            start = block.rfind(b"\n", 0, at) + 1
            match = _PROMPT.match(block, start)
            if match:
                spans.add(match.span())
            end = block.find(b"\n", at)
            at = block.find(hint, end) if end >= 0 else -1
    if not spans:
        return block
    view = memoryview(block)
    pieces: list[memoryview] = []
    copied = 0
    for start, end in sorted(spans):
        pieces.append(view[copied:start])
        copied = end
    pieces.append(view[copied:])
    return b"".join(pieces)


def _rstrip_unicode(lines: list[bytes]) -> list[bytes]:
    """Also strip the Unicode spaces bytes.rstrip leaves; a cheap look at last bytes first."""
    if not lines:
        return lines
    ends = bytes(map(itemgetter(-1), lines)).translate(_SPACE_ENDS)
    at = ends.find(1)
    if at < 0:
        return lines
    while at >= 0:
        line = lines[at]
        if line.endswith(_UNICODE_SPACES):
            text = line.decode("utf-8", "surrogateescape").rstrip()
            lines[at] = text.encode("utf-8", "surrogateescape")
        at = ends.find(1, at + 1)
    return [line for line in lines if line]


def _collapse(lines: list[bytes], repeats: list[int]) -> list[bytes]:
    """Fold runs of equal lines; `repeats` holds each i with lines[i] == lines[i + 1]."""
    out: list[bytes] = []
    copied = 0
    k = 0
    while k < len(repeats):
        first = last = repeats[k]
        k += 1
        while k < len(repeats) and repeats[k] == last + 1:
            last += 1
            k += 1
        out += lines[copied:first]
        out.append(b"%s [repeated %d times]" % (lines[first], last - first + 2))
        copied = last + 2
    out += lines[copied:]
    return out


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _cut(
    text: str,
    lines: list[str],
    byte_room: int,
    line_room: int,
    marker: Callable[[int, int], str],
) -> str:
    """Head and tail within `byte_room` bytes and `line_room` lines, the marker between."""
    n = len(lines)
    head, head_whole, head_size = _take(lines, (line_room + 1) // 2, byte_room // 2, front=True)
    # The tail never reaches into the head, except that a lone line gives both a piece.
    first_tail = len(head) if head_whole else min(1, n - 1)
    tail, tail_whole, _ = _take(
        lines[first_tail:], line_room - len(head), byte_room - head_size, front=False
    )
    head_text = "\n".join(head)
    tail_text = "\n".join(tail)
    gap_start = len(head_text) + (1 if head and head_whole else 0)
    gap_end = len(text) - len(tail_text) - (1 if tail and tail_whole else 0)
    kept = len(head) + len(tail) - (1 if n == 1 and head and tail else 0)
    parts = [head_text] if head else []
    parts.append(marker(n - kept, _utf8_len(text[gap_start:gap_end])))
    if tail:
        parts.append(tail_text)
    return "\n".join(parts)


def _take(
    lines: list[str], max_lines: int, max_bytes: int, *, front: bool
) -> tuple[list[str], bool, int]:
    """Whole lines from one end within the limits, or else a cut of the end line.

    Returns the kept lines in text order, whether they are whole, and their joined size.
    """
    taken: list[str] = []
    size = 0
    for line in lines if front else reversed(lines):
        if len(taken) >= max_lines:
            break
        cost = _utf8_len(line) + (1 if taken else 0)
        if size + cost > max_bytes:
            break
        taken.append(line)
        size += cost
    if taken or max_lines < 1 or not lines:
        return (taken if front else taken[::-1]), True, size
    raw = (lines[0] if front else lines[-1]).encode("utf-8", "surrogatepass")
    # Move the cut off any UTF-8 continuation byte so no character is split.
    if front:
        end = max_bytes
        while end > 0 and raw[end] & 0xC0 == 0x80:
            end -= 1
        part = raw[:end]
    else:
        start = len(raw) - max_bytes
        while start < len(raw) and raw[start] & 0xC0 == 0x80:
            start += 1
        part = raw[start:]
    if not part:
        return [], True, 0
    return [part.decode("utf-8", "surrogatepass")], False, len(part)
