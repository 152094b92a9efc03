"""Parse one LLM reply into one directive, tolerant as small models need (docs/protocol.md).

Besides the five tags, kosmos-panel's skills use six more, always understood:
`[GET-FILE] PATH` and the memory tags `[STORE]`, `[APPEND_MEMORY]` (a note's name, then its
text), `[RETRIEVE]`, `[DELETE_MEMORY]` (a name) and `[LIST_MEMORY]`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

# The kinds beyond the five: a file read and the memory actions.
ActionKind = Literal[
    "get_file", "store", "append_memory", "retrieve", "list_memory", "delete_memory"
]
ACTION_KINDS: tuple[ActionKind, ...] = get_args(ActionKind)
Kind = Literal["cmd", "ask", "message", "done"] | ActionKind

# The tag of each kind beyond the five, as kosmos-panel spells it.
ACTION_TAGS: dict[str, str] = {
    "get_file": "[GET-FILE]",
    "store": "[STORE]",
    "append_memory": "[APPEND_MEMORY]",
    "retrieve": "[RETRIEVE]",
    "list_memory": "[LIST_MEMORY]",
    "delete_memory": "[DELETE_MEMORY]",
}
# Kinds whose text is a memory note's name and that carry content too.
CONTENT_KINDS = ("store", "append_memory")

# A tag at the start of a line, allowing Markdown emphasis or backticks around it
# (`**[CMD]**`, `` `[CMD]` ``), any case, spaces inside `[ASK : optional]`, and `-`, `_` or a
# space between the words of the newer tags (`[GET_FILE]`, `[list-memory]`).
_TAG_RE = re.compile(
    r"^[ \t>*_`]*\[\s*(CMD|ASK\s*:\s*optional|ASK|MESSAGE|DONE|GET[-_ ]?FILE|STORE|"
    r"APPEND[-_ ]?MEMORY|RETRIEVE|LIST[-_ ]?MEMORY|DELETE[-_ ]?MEMORY)\s*\][*_`]*[ \t]*:?",
    re.IGNORECASE | re.MULTILINE,
)
_FENCE_RE = re.compile(r"^\s*(```|~~~)")

DEFAULT_DONE = "Skill completed"


@dataclass(frozen=True)
class Parsed:
    """One directive. `canonical` is the reply as kept in history."""

    kind: Kind
    text: str
    required: bool = True
    inferred: bool = False
    canonical: str = ""
    # A built-in action of the JSON envelope that becomes the command on the target.
    action: str | None = None
    args: dict[str, Any] = field(default_factory=dict)
    # [STORE] / [APPEND_MEMORY]: the note's text (`text` is its name).
    content: str = ""


def action_kind(word: str) -> ActionKind | None:
    """`word` as the kind of an action beyond the five, else None."""
    return next((kind for kind in ACTION_KINDS if kind == word), None)


class NoDirective(Exception):
    """The reply holds nothing kosmos can act on, not even a first line to infer a command from."""


def _tag_kind(tag: str) -> tuple[Kind, bool]:
    tag = re.sub(r"\s+", "", tag).upper()
    word = re.sub(r"[-_ ]", "", tag)
    for kind in ACTION_KINDS:
        if word == re.sub(r"[-_\[\]]", "", ACTION_TAGS[kind]):
            return kind, True
    if tag == "CMD":
        return "cmd", True
    if tag == "ASK:OPTIONAL":
        return "ask", False
    if tag == "ASK":
        return "ask", True
    if tag == "MESSAGE":
        return "message", True
    return "done", True


def _strip_inline_code(line: str) -> str:
    line = line.strip()
    if len(line) >= 2 and line.startswith("`") and line.endswith("`") and "`" not in line[1:-1]:
        return line[1:-1].strip()
    return line


def _command_from(body: str) -> str:
    """The command after [CMD]: a fenced block, else the first line (joining `\\` ends)."""
    lines = body.strip("\n").splitlines()
    while lines and not lines[0].strip():
        lines.pop(0)
    if not lines:
        return ""
    first = lines[0]
    fence = _FENCE_RE.match(first)
    if fence:
        marker = fence.group(1)
        inner = first.strip()[len(marker) :]
        block: list[str] = []
        # ```bash ls -la ``` on one line
        if inner.rstrip().endswith(marker) and len(inner.strip()) > len(marker):
            inline = inner.rstrip()[: -len(marker)]
            parts = inline.split(None, 1)
            known_lang = parts and parts[0].lower() in {"bash", "sh", "shell", "console", "zsh"}
            return (parts[1] if known_lang and len(parts) > 1 else inline).strip()
        for line in lines[1:]:
            if line.strip().startswith(marker):
                break
            block.append(line)
        command = "\n".join(block).strip()
        return "\n".join(ln[2:] if ln.startswith("$ ") else ln for ln in command.splitlines())
    command = first
    rest = iter(lines[1:])
    while command.rstrip().endswith("\\"):
        nxt = next(rest, None)
        if nxt is None:
            break
        command = command.rstrip()[:-1].rstrip() + " " + nxt.strip()
    command = _strip_inline_code(command)
    if command.startswith("$ "):
        command = command[2:]
    return command.strip()


def canonical(kind: Kind, text: str, required: bool = True, content: str = "") -> str:
    tag = {"cmd": "[CMD]", "message": "[MESSAGE]", "done": "[DONE]", **ACTION_TAGS}.get(kind)
    if tag is None:
        tag = "[ASK]" if required else "[ASK:optional]"
    head = f"{tag} {text}".rstrip()
    return f"{head}\n{content}" if content else head


def _word(text: str) -> str:
    """A path or name as the LLM wrote it: backticks, quotes and a trailing colon dropped."""
    word = text.strip().strip("`").strip()
    if len(word) >= 2 and word[0] == word[-1] and word[0] in "'\"":
        word = word[1:-1]
    return word


def _action(kind: Kind, body: str) -> Parsed:
    """A [GET-FILE] or memory directive. Its name is judged later: a bad one is a memory error
    the LLM is told about, not a reply without a tag."""
    lines = body.strip("\n").split("\n")
    first = lines[0].strip() if lines else ""
    if kind == "get_file":
        path = _word(first)
        if not path:
            raise NoDirective("[GET-FILE] without a path")
        return Parsed(kind, path, canonical=canonical(kind, path))
    if kind == "list_memory":
        return Parsed(kind, "", canonical=canonical(kind, ""))
    name, _, rest = first.partition(" ")
    name = _word(name)
    content = ""
    if kind in CONTENT_KINDS:
        content = "\n".join([rest.strip(), *lines[1:]] if rest.strip() else lines[1:]).strip("\n")
        content = content.rstrip()
    return Parsed(kind, name, canonical=canonical(kind, name, content=content), content=content)


def parse_reply(reply: str) -> Parsed:
    """The first directive in `reply`; a reply with no known tag becomes an inferred command."""
    content = reply.strip()
    match = _TAG_RE.search(content)
    if match:
        kind, required = _tag_kind(match.group(1))
        body = content[match.end() :]
        # Only the first directive counts: its content ends where another tag line starts.
        nxt = _TAG_RE.search(body)
        if nxt and (nxt.start() == 0 or body[nxt.start() - 1] == "\n"):
            body = body[: nxt.start()]
        if kind in ACTION_TAGS:
            return _action(kind, body)
        if kind == "cmd":
            text = _command_from(body)
            if not text:
                raise NoDirective("[CMD] without a command")
        else:
            text = body.strip()
            if not text:
                if kind == "done":
                    text = DEFAULT_DONE
                else:
                    raise NoDirective(f"{match.group(0).strip()} without any text")
        return Parsed(kind, text, required, False, canonical(kind, text, required))
    # No known format: the first line is a command (an inferred one).
    command = _command_from(content)
    if not command:
        raise NoDirective("empty reply")
    return Parsed("cmd", command, True, True, canonical("cmd", command))
