"""Secrets that show only across lines, for the `Redactor` (kosmos.safety.redact):

* the body of a private key whose BEGIN and END lines were cut off (`sed -n 2,20p id_rsa`) or
  that came out upside down (`tac id_rsa`): two or more lines of base64 at a key's width (64
  for PEM, 70 for OpenSSH) in a block, unless the armour around it names something public (a
  certificate, a public key); and an OpenSSH key's first body line on its own;
* a `.netrc` entry spread over lines: the `password` line under its `machine` line, whatever
  the password ends with (a lone `password x` line is left to the one-line rule, which must
  tell it from prose);
* YAML: a secret-named key whose value is on the next lines, as a plain scalar or a block
  scalar (`password:\\n  s3cret`, `api_key: |\\n  ...`);
* lines whose shape alone says what they hold: a `.pgpass` line (host:port:database:user:
  password), an /etc/shadow line whose password field is a DES crypt hash (13 characters),
  and an htpasswd line of a name and such a hash (of mixed case and digits or `./`: a word
  alone is not one).

Each masks the value and keeps its label and the lines around it. None runs line by line,
so they run before the one-line patterns do, on the whole text.
"""

from __future__ import annotations

import re

from kosmos.safety.secret_patterns import MASK, SECRET_KEY

__all__ = ["mask_colon_lines", "mask_key_bodies", "mask_netrc_entries", "mask_yaml_values"]

KEY_WIDTHS = (64, 70)
# Two or more lines that are base64 alone; a block of them is looked at as a whole.
# Possessive: a longer line fails at once instead of being tried at every shorter length.
_B64_RUN = re.compile(r"(?m)^(?:[A-Za-z0-9+/]{4,76}+={0,2}+\r?(?:\n|\Z))+")
# A line of a key's full width, searched for in "\n" + text + "\n": no key body without one
# (the regex engine finds each line feed at the speed of a search for one character).
_FULL_LINE = re.compile(r"\n(?:[A-Za-z0-9+/]{64}|[A-Za-z0-9+/]{70})\r?\n")
_OPENSSH_BODY = "b3BlbnNzaC1rZXktdjE"  # base64 of "openssh-key-v1"
# The armour a block sits in, when it says what the block is.
_ARMOUR = re.compile(r"^-----(?:BEGIN|END) ([^-\n]+)-----\r?$")


def _key_shaped(widths: list[int]) -> bool:
    """Lines of one width, 64 or 70, but for a shorter one at either end (a key's last line,
    first when printed upside down): two full lines at least, or three lines."""
    width = max(widths, default=0)
    full = widths.count(width)
    return (
        width in KEY_WIDTHS
        and all(w == width for w in widths[1:-1])
        and (full >= 2 or len(widths) >= 3)
    )


def _public(text: str, start: int, end: int) -> bool:
    """Whether the armour nearest above the block (or right below it) names a public thing."""
    above = text[:start].rstrip("\n").split("\n")[-6:]
    below = text[end:].split("\n", 1)[0]
    for line in [*reversed(above), below]:
        armour = _ARMOUR.match(line.strip())
        if armour:
            return "PRIVATE" not in armour.group(1) and "Static key" not in armour.group(1)
    return False


def mask_key_bodies(text: str) -> str:
    """Blocks of key-shaped base64 lines, each masked as one [REDACTED] line."""
    if _OPENSSH_BODY not in text and _FULL_LINE.search(f"\n{text}\n") is None:
        return text
    out: list[str] = []
    done = 0
    for run in _B64_RUN.finditer(text):
        lines = run.group().split("\n")
        ended = lines[-1] == ""
        lines = lines[:-1] if ended else lines
        widths = [len(line.rstrip("\r")) for line in lines]
        openssh = any(line.startswith(_OPENSSH_BODY) for line in lines)
        if not (openssh or _key_shaped(widths)) or _public(text, run.start(), run.end()):
            continue
        out += (text[done : run.start()], MASK + ("\n" if ended else ""))
        done = run.end()
    if not out:
        return text
    out.append(text[done:])
    return "".join(out)


_NETRC = re.compile(
    r"(?m)(^[ \t]*(?:machine[ \t]+\S+|default)(?:[ \t]+\S+)*[ \t]*\r?\n"
    r"(?:[ \t]*(?:login|account|port)[ \t]+\S+(?:[ \t]+\S+)*[ \t]*\r?\n){0,4}"
    r"[ \t]*password[ \t]+)(?!\[REDACTED\])\S+"
)


def mask_netrc_entries(text: str) -> str:
    """The password of a .netrc entry written over several lines."""
    if "password" not in text or ("machine" not in text and "default" not in text):
        return text
    return _NETRC.sub(lambda m: f"{m.group(1)}{MASK}", text)


# A key with nothing after its colon but, maybe, a block scalar's indicator and a comment.
_YAML_KEY = re.compile(
    r"(?m)^([ \t]*(?:- )?)([\"']?)([\w.-]+)\2[ \t]*:[ \t]*([|>][-+0-9]*)?[ \t]*(?:#[^\n]*)?\r?$"
)
_YAML_ENTRY = re.compile(r"[ \t]*(?:- |[\"']?[\w.-]+[\"']?[ \t]*:(?:[ \t]|\r?$))")


def mask_yaml_values(text: str) -> str:
    """Values of secret-named YAML keys that stand on the lines below their key."""
    if ":\n" not in text and ": |" not in text and ": >" not in text and ":\r\n" not in text:
        return text
    lines = text.split("\n")
    keys = {text.count("\n", 0, m.start()): m for m in _YAML_KEY.finditer(text)}
    skip_to = -1
    for i in sorted(keys):
        key = keys[i]
        if i < skip_to or not SECRET_KEY.fullmatch(key.group(3)):
            continue
        indent = len(key.group(1).replace("- ", "  "))
        block = key.group(4) is not None
        j = i + 1
        while j < len(lines):
            below = lines[j]
            stripped = below.strip()
            depth = len(below) - len(below.lstrip(" \t"))
            if stripped and depth <= indent:
                break
            if not block and stripped and _YAML_ENTRY.match(below):
                break  # a mapping under the key: its own keys are judged on their own
            if stripped and stripped != MASK:
                lines[j] = below[:depth] + MASK + ("\r" if below.endswith("\r") else "")
            j += 1
        skip_to = j
    return "\n".join(lines)


# A .pgpass field: anything but blanks and colons, a backslash escaping one (unrolled: one pass
# over the characters, no backtracking between alternatives).
_FIELD = r"[^\s:\\]++(?:\\.[^\s:\\]*+)*+"
_DES = r"[./0-9A-Za-z]{13}"
_LINE_END = r"(?=\r?(?:\n|\Z))"
# Each starts with the line feed before its line: the regex engine finds those at the speed
# of a search for one character, and tries the shapes only there.
_COLON_LINE = re.compile(
    r"\n(?:"
    rf"(?P<pgpass>{_FIELD}:(?:\d{{1,5}}|\*):{_FIELD}:{_FIELD}:)"
    rf"[^:\n\\]*(?:\\.[^:\n\\]*)*(?<=[^:\s]){_LINE_END}"
    rf"|(?P<shadow>[^\s:]++:!?){_DES}(?=(?::\d*){{5}}:\d*:[^:\n]*{_LINE_END})"
    rf"|(?P<htpasswd>[\w.@-]++:)(?=[./0-9A-Za-z]{{0,12}}[0-9./])(?=[./0-9A-Za-z]{{0,12}}[a-z])"
    rf"(?=[./0-9A-Za-z]{{0,12}}[A-Z]){_DES}{_LINE_END}"
    r")"
)


def _colon_label(m: re.Match[str]) -> str:
    return f"\n{m.group('pgpass') or m.group('shadow') or m.group('htpasswd')}{MASK}"


def mask_colon_lines(text: str) -> str:
    """.pgpass lines, and DES hashes in shadow and htpasswd lines."""
    if ":" not in text:
        return text
    return _COLON_LINE.sub(_colon_label, "\n" + text)[1:]
