"""The chat's detailed log file: one line per record, each with its level and step prefix.

Every step has a prefix (`[main]`, `[cls]`, `[select]`, `[valid]`, `[exec]`) that
starts each log message of that step. Everything written passes the redactor first.
"""

from __future__ import annotations

import json
import time
import traceback
import uuid
from pathlib import Path
from typing import Any, Literal, TextIO

from kosmos.config import state_dir
from kosmos.errors import ConfigError
from kosmos.safety.redact import Redactor

Level = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
Step = Literal["main", "cls", "select", "valid", "exec"]


def default_log_path(env: dict[str, str], home: Path) -> Path:
    """A new conversation's log: under the state directory, named by the time it began."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return state_dir(env, home) / "chat" / f"{stamp}-{uuid.uuid4().hex[:6]}.log"


class ChatLog:
    """Appends records to one file; `step` is the prefix the next records carry."""

    def __init__(
        self,
        path: Path | None,
        *,
        redactor: Redactor | None = None,
        verbose: bool = False,
    ) -> None:
        self.path = path
        self.redact = redactor or Redactor()
        self.verbose = verbose
        self.step: Step = "main"
        self._file: TextIO | None = None
        if path is not None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                self._file = path.open("a", encoding="utf-8")
            except OSError as e:
                raise ConfigError(
                    f"{path}: cannot write the chat log ({e.strerror}); pass --log FILE"
                ) from e

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
        self._file = None

    def write(self, level: Level, message: str) -> None:
        if self._file is None:
            return
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        head = f"{stamp} {level:<8} [{self.step}] "
        # Every line carries the prefix, continuation lines of a traceback or a list too.
        lines = self.redact(message).splitlines() or [""]
        self._file.write("".join(f"{head}{line}\n" for line in lines))
        self._file.flush()

    def debug(self, message: str) -> None:
        self.write("DEBUG", message)

    def info(self, message: str) -> None:
        self.write("INFO", message)

    def warning(self, message: str) -> None:
        self.write("WARNING", message)

    def error(self, message: str) -> None:
        self.write("ERROR", message)

    def critical(self, message: str, exc: BaseException | None = None) -> None:
        """A critical line; with `exc`, its traceback follows."""
        if exc is not None:
            trace = "".join(traceback.format_exception(exc)).rstrip()
            message = f"{message}\n{trace}"
        self.write("CRITICAL", message)

    def payload(self, label: str, data: Any) -> None:
        """`--verbose`: a request or response body at debug level, secrets masked."""
        if not self.verbose:
            return
        shown = json.dumps(self.redact.redact_obj(data), ensure_ascii=False)
        self.debug(f"{label}: {shown}")
