"""The LLM API key from a file or a command, as git's credential helpers and `llm keys` give
theirs: `api_key_file` (read once, stripped) and `api_key_command` (run once through the
shell at start, its standard output stripped), top level or per provider as `api_key` is.

A key kept in an environment variable sits in the environment of every process kosmos's
parent started it from (`timeout`, a CI step, `sudo`), which /proc/PID/environ shows to any
process of that user; a key read from a file or a command sits in no environment. Where the
key did come from a variable, `key_notice` says so, once, for the front end to print.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path

from kosmos.errors import ConfigError

__all__ = [
    "COMMAND_TIMEOUT",
    "KEY_SOURCES",
    "key_from",
    "key_notice",
    "read_key_file",
    "run_key_command",
]

# The settings a key may come from, one at a time.
KEY_SOURCES = ("api_key", "api_key_file", "api_key_command")
# How long a key command may take: a password manager may wait for its passphrase.
COMMAND_TIMEOUT = 120.0


def key_from(
    file: Path | None,
    command: str | None,
    prefix: str,
    source: Path | None,
    *,
    env: Mapping[str, str],
    cwd: Path,
) -> str | None:
    """The key from `file` (relative: to the config file `source` that names it) or printed
    by `command`; None when neither is set. Errors name the setting (`prefix` + its name)."""
    where = f" (in {source})" if source else ""
    if file is not None:
        path = file.expanduser()
        if not path.is_absolute():
            path = (source.parent if source else cwd) / path
        return read_key_file(path, f"{prefix}api_key_file{where}")
    if command is not None:
        return run_key_command(command, f"{prefix}api_key_command{where}", env, cwd)
    return None


def read_key_file(path: Path, setting: str, what: str = "the API key") -> str:
    """The key in `path`, stripped; ConfigError naming the setting and the file otherwise."""
    try:
        key = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as e:
        why = e.strerror if isinstance(e, OSError) else "not UTF-8 text"
        raise ConfigError(f"{setting} {path}: cannot read it ({why}); check the path") from None
    if not key:
        raise ConfigError(f"{setting} {path}: empty; put {what} in it")
    return key


def run_key_command(command: str, setting: str, env: Mapping[str, str], cwd: Path) -> str:
    """What `command` prints, stripped, run once through /bin/sh; ConfigError naming the
    setting when it fails, times out or prints nothing."""
    try:
        done = subprocess.run(
            command,
            shell=True,
            env=dict(env),
            cwd=cwd,
            capture_output=True,
            timeout=COMMAND_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ConfigError(
            f"{setting}: the command did not finish in {COMMAND_TIMEOUT:.0f}s; "
            "make it print the API key and exit"
        ) from None
    except OSError as e:
        raise ConfigError(f"{setting}: cannot run it ({e.strerror}); check the command") from None
    if done.returncode != 0:
        said = [line for line in done.stderr.decode(errors="replace").splitlines() if line.strip()]
        last = f": {said[-1].strip()[:200]}" if said else ""
        raise ConfigError(
            f"{setting}: the command failed (exit {done.returncode}{last}); "
            "fix it so that it prints the API key"
        )
    key = done.stdout.decode(errors="replace").strip()
    if not key:
        raise ConfigError(f"{setting}: the command printed nothing; make it print the API key")
    return key


def key_notice(variable: str | None) -> str | None:
    """One line for stderr when the key came from the environment variable `variable`."""
    if variable is None:
        return None
    return (
        f"kosmos: the API key came from the environment ({variable}), which every process "
        "started from the same parent shows in /proc/PID/environ; prefer api_key_file or "
        "api_key_command in the config file"
    )
