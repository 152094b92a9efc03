"""What a command's environment may hold: nothing of the keys kosmos itself was given.

A command runs for the LLM, and what it prints goes back to the LLM. If the environment
carried kosmos's API key, `printenv KOSMOS_API_KEY | rev` (read-only, so it may run unasked)
would hand the key over in a form no redactor recognises. So the local runner's environment
and the variables ssh_config's `SendEnv` forwards leave out:

* the variables kosmos reads its own keys from (KOSMOS_API_KEY, OPENAI_API_KEY,
  GEMINI_API_KEY, `kosmos mcp --http`'s bearer token KOSMOS_MCP_TOKEN, the seal key
  KOSMOS_SEAL_KEY) and any other `*_API_KEY`;
* any variable whose value is a secret kosmos holds (a provider's key or an HTTP tool's
  secret from the config file), under whatever name.

A command on `local` could still read kosmos's own first environment, which the kernel shows
every process of the same user in /proc/PID/environ (the kernel lock included): `hide_keys`
blanks those variables' values there, in kosmos's own memory, when kosmos starts and when it
opens `local`. kosmos keeps them in `os.environ`; what it starts gets them only as given.

They also leave out bash's options (SHELLOPTS, BASHOPTS), which bash takes from the
environment: `SHELLOPTS=xtrace` would trace kosmos's own wrapper into every command's output
and into the answer of the kernel lock's probe (which then finds no lock), and an option such
as `extglob` would have bash read a command other than the approval policy did. kosmos's
shells start with bash's defaults.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable, Mapping, Sequence

# The variables kosmos reads its API keys from (kosmos.config.ENV_API_KEYS), the MCP
# server's bearer token (kosmos.mcp.http.TOKEN_ENV) and the seal key (kosmos.seal).
KOSMOS_KEYS = frozenset(
    {"KOSMOS_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "KOSMOS_MCP_TOKEN", "KOSMOS_SEAL_KEY"}
)
# bash's options, which it reads from the environment at start.
SHELL_OPTIONS = frozenset({"SHELLOPTS", "BASHOPTS"})


def withheld(name: str, value: str, secrets: Iterable[str] = ()) -> bool:
    """Whether the variable `name=value` stays out of a command's environment."""
    if name.upper() in KOSMOS_KEYS or name.upper().endswith("_API_KEY") or name in SHELL_OPTIONS:
        return True
    value = value.strip()
    return bool(value) and value in set(secrets)


def _key(name: str, value: str, known: set[str]) -> bool:
    """The variable holds a key: by its name, or a secret kosmos holds as its value."""
    upper = name.upper()
    return upper in KOSMOS_KEYS or upper.endswith("_API_KEY") or value.strip() in known


def hide_keys(secrets: Iterable[str] = ()) -> int:
    """Blank the value of every variable that holds a key in this process's first environment,
    the bytes /proc/PID/environ shows (zeros in their place, in this process's own memory,
    written through /proc/self/mem). `os.environ` keeps them. Returns how many were blanked;
    0 where there is no /proc to read or write (not Linux)."""
    known = {s.strip() for s in secrets if s.strip()}
    try:
        with open("/proc/self/environ", "rb") as f:
            data = f.read()
        with open("/proc/self/stat", "rb") as f:
            # Fields 50 and 51 (env_start, env_end), counted after the command's name.
            fields = f.read().rsplit(b")", 1)[1].split()
        start, end = int(fields[47]), int(fields[48])
    except (OSError, ValueError, IndexError):
        return 0
    spans = []
    offset = 0
    for entry in data[: end - start].split(b"\0"):
        name, sep, value = entry.partition(b"=")
        text = value.decode(errors="replace")
        if sep and value.strip(b"\0") and _key(name.decode(errors="replace"), text, known):
            spans.append((start + offset + len(name) + 1, len(value)))
        offset += len(entry) + 1
    if not spans:
        return 0
    try:
        fd = os.open("/proc/self/mem", os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return 0
    try:
        for address, size in spans:
            os.pwrite(fd, bytes(size), address)
    except OSError:
        return 0
    finally:
        os.close(fd)
    return len(spans)


def command_env(env: Mapping[str, str], secrets: Iterable[str] = ()) -> dict[str, str]:
    """`env` without the variables that hold a key kosmos knows."""
    known = {s.strip() for s in secrets if s.strip()}
    return {name: value for name, value in env.items() if not withheld(name, value, known)}


def forwarded(
    patterns: Sequence[str], env: Mapping[str, str], secrets: Iterable[str] = ()
) -> list[str]:
    """The names ssh_config's `SendEnv` patterns pick from `env`, those holding a key left out.

    Given to asyncssh as exact names, so that a `SendEnv *` can no longer take a key along.
    """
    if not patterns:
        return []
    # One expression for all the patterns, tried first: a fleet asks this once per host.
    picks = re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns))
    known = {s.strip() for s in secrets if s.strip()}
    return [
        name
        for name, value in env.items()
        if picks.match(name)
        and not any(c in name for c in "*?[")
        and not withheld(name, value, known)
    ]
