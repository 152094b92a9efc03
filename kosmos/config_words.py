"""How a settings problem is worded: one line naming the file, the key and what it allows.

Used for kosmos's own settings (msgspec records) and for the chat's section (pydantic
models) alike, each walked through its own `Fields`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, get_args, get_origin

import msgspec
from msgspec import Struct

from kosmos.errors import ConfigError

# What each setting may be, for the line that says a value is wrong.
ALLOWED = {
    "provider": "openai or gemini",
    "protocol": "tags, json, tools or auto",
    "providers": "a mapping of openai/gemini to base_url, api_key, model, capabilities, models",
    "base_url": "an http(s) URL such as http://localhost:11434/v1",
    "base_url_from": "nothing: kosmos sets it",
    "model": "a model name the server knows",
    "api_key": "a string (better: api_key_file or api_key_command)",
    "api_key_file": "a file holding the API key (read once at start)",
    "api_key_command": "a shell command that prints the API key (run once at start)",
    "api_key_from": "nothing: kosmos sets it",
    "temperature": "a number from 0 to 2",
    "max_tokens": "a whole number of at least 1",
    "llm_timeout": "seconds, more than 0",
    "llm_connect_timeout": "seconds, more than 0",
    "llm_retries": "a whole number from 0 to 10",
    "knowledge_timeout": "seconds, more than 0",
    "remote_skill_timeout": "seconds, more than 0",
    "connect_timeout": "seconds, more than 0",
    "max_steps": "a whole number from 1 to 10000",
    "command_timeout": "seconds, more than 0",
    "skills_dirs": "a list of directories",
    "transcript_dir": "a directory",
    "prompts_file": "a JSON file of prompt texts",
    "hosts": (
        "a mapping of host name to settings (policy: ask, read-only, auto or locked; "
        "lock: required or optional; lock_ports: a list of TCP ports)"
    ),
    "chat": "kosmos chat settings: exit_commands, help_commands, tools, ... (see the README)",
    "memory": "true or false: the memory prompt (Target OS block, memory notes) in every run",
    "memory_dir": "a directory for the memory notes (default ./.kosmos-panel/memory)",
    "seal_key": "nothing: set the KOSMOS_SEAL_KEY environment variable, or seal_key_file",
    "seal_key_file": "a file holding the key that signs transcripts and fleet.json",
}


# A section's fields (name: annotation), or None for what is not a section: settings are
# msgspec records, the chat's are pydantic models.
Fields = Callable[[Any], dict[str, Any] | None]


def struct_fields(kind: Any) -> dict[str, Any] | None:
    if not (isinstance(kind, type) and issubclass(kind, Struct)):
        return None
    return {f.name: f.type for f in msgspec.structs.fields(kind)}


def section_in(annotation: Any, fields: Fields) -> Any:
    """The section an annotation holds: itself, or inside a dict, list, tuple or union."""
    if fields(annotation) is not None:
        return annotation
    args = get_args(annotation)
    if get_origin(annotation) is dict:
        args = args[1:]
    return next((m for m in (section_in(a, fields) for a in args) if m is not None), None)


def unknown_key(
    source: str, loc: tuple[Any, ...], at: int, model: Any, fields: Fields
) -> ConfigError:
    """One line for the unknown key `loc` (its parts from `at` on a path into `model`),
    with the keys allowed beside it."""
    section = model
    for part in loc[at:-1]:
        types = fields(section) or {}
        if not isinstance(part, str) or part not in types:
            continue  # a dict key or a list index: the section stays the same
        inner = section_in(types[part], fields)
        if inner is None:
            break
        section = inner
    keys = ", ".join(fields(section) or {})
    return ConfigError(f"{source}: unknown key '{dotted(loc)}'; allowed keys: {keys}")


def dotted(loc: tuple[Any, ...]) -> str:
    return ".".join(str(part) for part in loc)


def invalid(source: str, loc: tuple[Any, ...], message: str) -> ConfigError:
    """One line: where, what is wrong and (for a known key) what is allowed."""
    field = str(loc[0]) if loc else ""
    last = str(loc[-1]) if loc else ""
    if last in ALLOWED:
        field = last  # providers.openai.base_url: what a base_url may be
    allowed = f"; allowed: {ALLOWED[field]}" if field in ALLOWED else ""
    return ConfigError(f"{source}: {dotted(loc)}: {message}{allowed}")
