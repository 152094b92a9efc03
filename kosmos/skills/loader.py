"""Reading SKILL.md: the `---` frontmatter (YAML, or kosmos-panel's looser lines) and the body."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

import yaml

from kosmos.errors import MISSING, SkillError
from kosmos.skills.model import (
    FRONTMATTER_KEYS,
    Skill,
    SkillRuleError,
    SkillTypeError,
    check_skill,
)

Loc = tuple[str | int, ...]

# kosmos-panel read frontmatter with regexes, so files exist whose values hold ': ' unquoted
# (`description: Check disk: what fills it`), which YAML rejects. Such a file is accepted when
# every line is a top-level `key: value` line or a comment.
_FLAT_LINE = re.compile(r"^([A-Za-z_][\w-]*):(?:[ \t](.*))?$")
# A top-level line of frontmatter: a key, a comment, or a list item under the key above.
_KEY_LIKE = re.compile(r"^(?:[A-Za-z_][\w-]*:(?:[ \t].*)?|#.*|- .*)$")

# Where a raw YAML scalar is kept as written: `default: 0755` is the text "0755", not 493.
_TEXT_FIELDS = ("name", "description", "default")

_ALLOWED = {
    "name": "one line of text",
    "description": "text",
    "params": (
        "a list of parameters, each like '- name: path' with optional description, "
        "required, default, max_length and choices"
    ),
    "history_mode": "full, last_n or system_only",
    "history_max": "a whole number of at least 1",
    "timeout": "seconds, a number more than 0",
    "protocol": "tags, json, tools or auto",
    "triggers": "a list of phrases that ask for this skill",
    "required": "true or false",
    "default": "one value (text or a number)",
    "max_length": "a whole number of at least 1",
    "choices": "a non-empty list of values",
}


_KEY_LINE = re.compile(r"^(name|description)\s*:")


def opens_with_frontmatter(data: bytes) -> bool:
    """Whether a file's text opens with a `---` frontmatter block naming a skill (`name:` or
    `description:`): what makes a Markdown file other than SKILL.md a skill."""
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError:
        return False
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    start = next((i for i, line in enumerate(lines) if line.strip()), None)
    if start is None or lines[start] != "---":
        return False
    end = next((i for i in range(start + 1, len(lines)) if lines[i] == "---"), None)
    return end is not None and any(_KEY_LINE.match(line) for line in lines[start + 1 : end])


def load_skill_file(
    path: Path, source: str, *, ref: str = "", fallback_name: str | None = None
) -> Skill:
    """Load one SKILL.md; without a frontmatter `name` the skill is named after its folder."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise SkillError(
            f"{path}:1: cannot read the file: {e.strerror}; check that it is readable"
        ) from e
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise SkillError(f"{path}:{line}: not UTF-8 text; save the file as UTF-8") from None
    if fallback_name is None:
        fallback_name = path.parent.name if path.name == "SKILL.md" else path.stem
    return parse_skill(text, path=str(path), fallback_name=fallback_name, source=source, ref=ref)


def parse_skill(text: str, *, path: str, fallback_name: str, source: str, ref: str = "") -> Skill:
    """Parse the text of a SKILL.md. Errors are SkillError `path:line: what is wrong`."""
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    start = next((i for i, line in enumerate(lines) if line.strip()), None)
    if start is None:
        raise SkillError(
            f"{path}:1: the file is empty; write the skill's steps in Markdown, optionally "
            "after a frontmatter block (---, name: ..., description: ..., ---)"
        )
    data: dict[Any, Any] = {}
    where: dict[Loc, int] = {}
    warnings: list[str] = []
    first_line = 1
    headless = None
    if lines[start].rstrip() != "---":
        headless = _frontmatter_without_opening(lines, start, path)
    if headless is not None:
        # Found in the wild: a file whose opening `---` was lost (often behind a BOM).
        end, data, where, warnings = headless
        first_line = start + 1
        body = "\n".join(lines[end + 1 :]).strip()
        body_line = min(end + 2, len(lines))
    elif lines[start].rstrip() != "---":
        # No frontmatter: kosmos-panel runs such a file with the folder name as its name.
        body, body_line = text.strip(), start + 1
    else:
        closing = next(
            (i for i in range(start + 1, len(lines)) if lines[i].rstrip() == "---"), None
        )
        if closing is None:
            raise SkillError(
                f"{path}:{start + 1}: the frontmatter opened by '---' is never closed; "
                "add a line '---' after its last key"
            )
        first_line = start + 2
        data, where, warnings = _read_frontmatter(
            "\n".join(lines[start + 1 : closing]), path, first_line
        )
        body = "\n".join(lines[closing + 1 :]).strip()
        body_line = min(closing + 2, len(lines))
    if not body:
        raise SkillError(
            f"{path}:{body_line}: the skill has no instructions; write the steps for the LLM "
            "in Markdown below the frontmatter"
        )
    known = {k: v for k, v in data.items() if k in FRONTMATTER_KEYS}
    extra = {str(k): v for k, v in data.items() if k not in FRONTMATTER_KEYS}
    if known.get("name") in (None, ""):
        known["name"] = fallback_name
    fields = {
        **known,
        "body": body,
        "path": path,
        "source": source,
        "ref": ref,
        "extra": extra,
        "warnings": tuple(warnings),
        "sha256": hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(),
    }
    try:
        return check_skill(fields)
    except (SkillTypeError, SkillRuleError) as e:
        raise _explain(e, data, where, path, first_line) from None


def _frontmatter_without_opening(
    lines: list[str], start: int, path: str
) -> tuple[int, dict[Any, Any], dict[Loc, int], list[str]] | None:
    """(closing line, data, lines, warnings) when the file starts with frontmatter key lines and
    a closing `---` but no opening one; None when it starts with anything else.

    Only a block that reads as a mapping naming the skill (`name` or `description`) counts:
    a body that starts with `Note: ...` and has a `---` rule further down is still a body.
    """
    if not _FLAT_LINE.match(lines[start].rstrip()):
        return None
    end = next((i for i in range(start + 1, len(lines)) if lines[i].rstrip() == "---"), None)
    if end is None:
        return None
    block = lines[start:end]
    if any(line.strip() and not line[0].isspace() and not _KEY_LIKE.match(line) for line in block):
        return None
    try:
        data, where, warnings = _read_frontmatter("\n".join(block), path, start + 1)
    except SkillError:
        return None
    if not ({"name", "description"} & set(data)):
        return None
    return end, data, where, warnings


# libyaml's reader where PyYAML was built with it: the same nodes, marks and values as the
# pure-Python one, in a tenth of the time (a run reads every skill's frontmatter to find one).
_FAST_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _read_frontmatter(
    text: str, path: str, first_line: int
) -> tuple[dict[Any, Any], dict[Loc, int], list[str]]:
    """The frontmatter as a mapping, the file line of each key and list item in it, and what
    the reader should know about how it was read."""
    try:
        try:
            node = yaml.compose(text, Loader=_FAST_LOADER)
        except yaml.YAMLError:
            # What is wrong, worded and placed by the one reader everywhere (libyaml words
            # its errors its own way).
            node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as e:
        flat = _read_flat(text, first_line)
        if flat is not None:
            return (*flat, _flat_warnings(text, path, first_line))
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        line = first_line + mark.line if mark is not None else first_line
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise SkillError(
            f"{path}:{line}: the frontmatter is not valid YAML ({problem}); check the "
            "indentation, and quote values that contain ': ' or start with a special character"
        ) from None
    if node is None:
        return {}, {}, []
    data = yaml.SafeLoader("").construct_document(node)
    if not isinstance(data, dict):
        kind = "a list" if isinstance(data, list) else "plain text"
        raise SkillError(
            f"{path}:{first_line}: the frontmatter is {kind}, not a mapping; "
            "write it as 'key: value' lines (name: ..., description: ...)"
        )
    where: dict[Loc, int] = {}
    raw: dict[Loc, str] = {}
    _walk(node, (), first_line, where, raw)
    _keep_raw_text(data, raw)
    return data, where, []


def _walk(
    node: yaml.Node, loc: Loc, first_line: int, where: dict[Loc, int], raw: dict[Loc, str]
) -> None:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if not isinstance(key, yaml.ScalarNode):
                continue
            where[(*loc, key.value)] = first_line + key.start_mark.line
            _walk(value, (*loc, key.value), first_line, where, raw)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            where[(*loc, i)] = first_line + item.start_mark.line
            _walk(item, (*loc, i), first_line, where, raw)
    elif isinstance(node, yaml.ScalarNode) and not node.style:  # plain: None, or "" (libyaml)
        raw[loc] = node.value


def _keep_raw_text(data: dict[Any, Any], raw: dict[Loc, str]) -> None:
    """Put back, as written, text fields that YAML turned into numbers, booleans or dates."""

    def fix(container: dict[Any, Any] | list[Any], key: Any, loc: Loc) -> None:
        value = container[key]
        if value is not None and not isinstance(value, str | dict | list) and loc in raw:
            container[key] = raw[loc]

    for key in ("name", "description"):
        if key in data:
            fix(data, key, (key,))
    params = data.get("params")
    if not isinstance(params, list):
        return
    for i, param in enumerate(params):
        if not isinstance(param, dict):
            continue
        for key in _TEXT_FIELDS:
            if key in param:
                fix(param, key, ("params", i, key))
        choices = param.get("choices")
        if isinstance(choices, list):
            for j in range(len(choices)):
                fix(choices, j, ("params", i, "choices", j))


def _read_flat(text: str, first_line: int) -> tuple[dict[Any, Any], dict[Loc, int]] | None:
    """kosmos-panel's reading: each line `key: value`, the value taken raw; None if it isn't."""
    data: dict[Any, Any] = {}
    where: dict[Loc, int] = {}
    for offset, line in enumerate(text.split("\n")):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _FLAT_LINE.match(line)
        if match is None:
            return None
        key, value = match.group(1), (match.group(2) or "").strip()
        if key not in data:  # kosmos-panel's regexes took the first occurrence
            data[key] = value or None
            where[(key,)] = first_line + offset
    return data, where


def _flat_warnings(text: str, path: str, first_line: int) -> list[str]:
    """One warning for frontmatter read as kosmos-panel's `key: value` lines: the first line
    whose value YAML would not have taken, what kosmos made of it and how to make it YAML."""
    for offset, line in enumerate(text.split("\n")):
        match = _FLAT_LINE.match(line)
        if match is None:
            continue
        try:
            yaml.safe_load(line)
        except yaml.YAMLError as e:
            problem = getattr(e, "problem", None) or str(e).splitlines()[0]
            key, value = match.group(1), (match.group(2) or "").strip()
            return [
                f"{path}:{first_line + offset}: the frontmatter is not valid YAML ({problem}); "
                f"it was read as plain 'key: value' lines as kosmos-panel does, so {key} is "
                f"{value!r}; quote the value (or fix its quotes) to make it YAML"
            ]
    return []


def _explain(
    err: SkillTypeError | SkillRuleError,
    data: dict[Any, Any],
    where: dict[Loc, int],
    path: str,
    line: int,
) -> SkillError:
    """The error as one line, pointing at the offending key's line."""
    loc: Loc = err.loc
    for n in range(len(loc), 0, -1):
        if loc[:n] in where:
            line = where[loc[:n]]
            break
    return SkillError(f"{path}:{line}: {_what(err, data)}")


def _at(data: Any, loc: Loc) -> Any:
    """The value at `loc` in the frontmatter as written (None where there is none)."""
    for part in loc:
        if isinstance(data, list):
            inside = isinstance(part, int) and part < len(data)
            data = data[part] if isinstance(part, int) and inside else None
        else:
            data = data.get(part) if isinstance(data, dict) else None
    return data


def _what(error: SkillTypeError | SkillRuleError, data: dict[Any, Any]) -> str:
    if isinstance(error, SkillRuleError):
        return str(error)
    loc = error.loc
    if loc[:1] == ("params",) and len(loc) >= 2 and isinstance(loc[1], int):
        index = loc[1]
        param = _at(data, loc[:2])
        if len(loc) == 2:
            return f"params item {index + 1} must be a mapping like '- name: path'"
        if str(error) == MISSING and loc[2] == "name":
            return f"params item {index + 1} has no 'name'; every param needs one (- name: path)"
        name = param.get("name") if isinstance(param, dict) else None
        label = (
            f"param '{name}' {loc[2]}" if name is not None else f"params item {index + 1} {loc[2]}"
        )
        field = str(loc[2])
    else:
        field = str(loc[0]) if loc else "frontmatter"
        label = field
    allowed = _ALLOWED.get(field, "see the Skill format in the README")
    value = _at(data, loc) if loc else None
    if isinstance(value, dict | list) or value is None:
        return f"{label} must be {allowed}"
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
    return f"{label}: {shown} is not allowed; use {allowed}"
