"""The terminal a line-mode front end talks to: prompts, colour, a thinking spinner."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

try:
    import termios
except ImportError:  # pragma: no cover - platforms without termios
    termios = None  # type: ignore[assignment]

from kosmos.engine.guard import visible

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
# What `Console.style` wraps a text in: taken off again on its way to a file or a pipe.
STYLE = re.compile(r"\x1b\[[0-9;]*m")


class EndOfInput(Exception):
    """Standard input closed while kosmos was waiting for an answer."""


_STRONG = re.compile(r"\*\*(.+?)\*\*|__(.+?)__")
_HEADING = re.compile(r"^#{1,6}\s+(.*)$", re.M)


def inline_markdown(text: str, console: Console) -> str:
    """An LLM's Markdown for a terminal line: `**strong**` and headings in bold (plain without
    colour), the markers gone; the rest (`code`, lists) reads well as it is."""
    text = _HEADING.sub(lambda m: console.style(m.group(1), "1"), text)
    return _STRONG.sub(lambda m: console.style(m.group(1) or m.group(2), "1"), text)


def silence(stream: TextIO) -> None:
    """Point a stream whose reader went away at /dev/null, so that later writes and the
    flush at exit go nowhere instead of raising (or printing "Exception ignored")."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, stream.fileno())
        finally:
            os.close(devnull)


class Console:
    """Writes for people (stdout, or stderr when stdout carries --json) and reads their answers."""

    def __init__(
        self,
        *,
        out: TextIO | None = None,
        err: TextIO | None = None,
        stdin: TextIO | None = None,
        color: bool | None = None,
    ) -> None:
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.stdin = stdin or sys.stdin
        # Colour for a person at a terminal: not with NO_COLOR set (no-color.org), and a line
        # bound for a file or a pipe loses its colour on the way (`kosmos run … > run.log`).
        if color is None:
            color = self.err.isatty() and not os.environ.get("NO_COLOR")
        self.color = color
        self._ttys: dict[int, bool] = {}
        self._spinner: asyncio.Task[None] | None = None
        self.last_error: str | None = None
        # Called once when a stream's reader went away (`| head`): the front end stops.
        self.on_closed: Callable[[], None] | None = None
        self.closed = False
        # Lines `say_soon` holds until the event loop's current pass ends, and their stream.
        self._soon: list[str] = []
        self._soon_stream: TextIO | None = None
        self._soon_scheduled = False

    # -- writing -----------------------------------------------------------------------

    def style(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color else text

    def say(self, text: str = "", *, stream: TextIO | None = None) -> None:
        self.stop_spinner()
        self.put(stream or self.out, text + "\n")

    def say_soon(self, text: str, *, stream: TextIO | None = None) -> None:
        """`say`, written and flushed once the event loop's current pass ends, together with
        the other lines said meanwhile: a fleet's event log, where a hundred hosts report at
        once, costs one write a pass instead of one a line. Any other output (a prompt, an
        error, a line for another stream) first writes out the lines held."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.say(text, stream=stream)
            return
        self.stop_spinner()
        target = stream or self.out
        if self._soon and self._soon_stream is not target:
            self.drain()
        self._soon.append(text + "\n")
        self._soon_stream = target
        if not self._soon_scheduled:
            self._soon_scheduled = True
            loop.call_soon(self._drain_soon)

    def _drain_soon(self) -> None:
        self._soon_scheduled = False
        self.drain()

    def drain(self) -> None:
        """Write out the lines `say_soon` holds, if any."""
        if self._soon and self._soon_stream is not None:
            text = "".join(self._soon)
            self._soon.clear()
            self.put(self._soon_stream, text)

    def write(self, text: str) -> None:
        self.stop_spinner()
        self.put(self.out, text)

    def put(self, stream: TextIO, text: str) -> None:
        """Write and flush (after the lines `say_soon` holds). A pipe whose reader went away is
        silenced and reported once to `on_closed`; with none set, BrokenPipeError is raised."""
        self.drain()
        if self.color and "\x1b[" in text and not self._tty(stream):
            text = STYLE.sub("", text)
        try:
            stream.write(text)
            stream.flush()
        except BrokenPipeError:
            silence(stream)
            if self.on_closed is None:
                raise  # no run to stop: the command ends (kosmos.cli: exit 141)
            if not self.closed:
                self.closed = True
                self.on_closed()

    def is_tty(self, stream: TextIO) -> bool:
        """Whether `stream` is a terminal: a person's screen."""
        return self._tty(stream)

    def _tty(self, stream: TextIO) -> bool:
        key = id(stream)
        if key not in self._ttys:
            try:
                self._ttys[key] = stream.isatty()
            except (ValueError, AttributeError):
                self._ttys[key] = False
        return self._ttys[key]

    def error(self, text: str) -> None:
        """One error line on stderr, unless it is the very line shown last."""
        if text == self.last_error:
            return
        self.last_error = text
        self.say(self.style(visible(text), "31"), stream=self.err)

    # -- the thinking indicator -----------------------------------------------------------

    def start_spinner(self, label: str) -> None:
        if not self.err.isatty() or self._spinner is not None:
            return
        with contextlib.suppress(RuntimeError):
            self._spinner = asyncio.get_running_loop().create_task(self._spin(label))

    def stop_spinner(self) -> None:
        if self._spinner is not None:
            self._spinner.cancel()
            self._spinner = None
            self.put(self.err, "\r\x1b[K")

    async def _spin(self, label: str) -> None:
        started = time.monotonic()
        i = 0
        while True:
            elapsed = time.monotonic() - started
            self.put(self.err, f"\r\x1b[K{SPINNER[i % len(SPINNER)]} {label} {elapsed:4.1f}s")
            i += 1
            await asyncio.sleep(0.1)

    # -- reading -----------------------------------------------------------------------

    async def ask(
        self,
        prompt: str,
        *,
        prefill: str | None = None,
        secret: bool = False,
        fresh: bool = True,
    ) -> str:
        """One line from the operator, read in a daemon thread so Ctrl-C can still end the run.
        `fresh`: a question (approval, [ASK], a host key, a password) forgets the keys typed
        before it was shown; the chat's own line (`fresh=False`) keeps what was typed ahead."""
        self.stop_spinner()
        self.drain()
        loop = asyncio.get_running_loop()
        future: asyncio.Future[str] = loop.create_future()

        def deliver(value: str | BaseException) -> None:
            if future.done():
                return
            if isinstance(value, BaseException):
                future.set_exception(value)
            else:
                future.set_result(value)

        def read() -> None:
            if fresh:
                self._discard_typed_ahead()
            try:
                value: str | BaseException = (
                    self._read_secret(prompt) if secret else self._read_line(prompt, prefill)
                )
            except EOFError:
                value = EndOfInput("standard input closed")
            except BaseException as e:  # handed to the waiting task
                value = e
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(deliver, value)

        # readline and getpass switch echo off while they read; a read cut short by Ctrl-C
        # never switches it back, so the terminal is put back here.
        saved = self._terminal_state()
        threading.Thread(target=read, daemon=True, name="kosmos-input").start()
        try:
            return await future
        except BrokenPipeError as e:
            # The prompt could not be shown: no one is there to answer it.
            self.put(self.err, "")
            self.put(self.out, "")
            if self.on_closed is not None:
                await asyncio.sleep(0)  # the front end's stop arrives here
            raise EndOfInput("output closed") from e
        except asyncio.CancelledError:
            self._restore_terminal(saved)
            # Ctrl-C at a prompt: end the prompt's line so that what follows starts its own.
            self.put(self.err, "\n")
            raise

    def _discard_typed_ahead(self) -> None:
        """Forget the keys typed at the terminal before this prompt was shown, as sudo and ssh
        do: a `y` and Enter typed while the LLM was thinking must not answer a question nobody
        has read yet. Piped answers are never touched: a script's are meant for the prompts."""
        if termios is None:
            return
        with contextlib.suppress(termios.error, OSError, ValueError, AttributeError):
            fd = self.stdin.fileno()
            if os.isatty(fd):
                termios.tcflush(fd, termios.TCIFLUSH)

    def _terminal_state(self) -> list[Any] | None:
        if termios is None or self.stdin is not sys.stdin:
            return None
        try:
            return termios.tcgetattr(sys.stdin.fileno())
        except (termios.error, OSError, ValueError):
            return None  # not a terminal

    def _restore_terminal(self, saved: list[Any] | None) -> None:
        if saved is None or termios is None:
            return
        with contextlib.suppress(termios.error, OSError, ValueError):
            termios.tcsetattr(sys.stdin.fileno(), termios.TCSADRAIN, saved)

    async def ask_secret(self, prompt: str) -> str:
        """A line typed without echo (a password); never kept by the console."""
        return await self.ask(prompt, secret=True)

    def _interactive(self) -> bool:
        # input() shows its prompt on stdout: at a terminal that is the screen, --json or not.
        return self.stdin is sys.stdin and sys.stdin.isatty() and sys.stdout.isatty()

    def _read_secret(self, prompt: str) -> str:
        if self.stdin is sys.stdin and sys.stdin.isatty():
            import getpass

            return getpass.getpass(prompt, stream=self.err)
        self.err.write(prompt)
        self.err.flush()
        line = self.stdin.readline()
        if not line:
            raise EOFError
        self.err.write("\n")
        return line.rstrip("\r\n")

    def _read_line(self, prompt: str, prefill: str | None) -> str:
        if self._interactive():
            try:
                import readline
            except ImportError:  # pragma: no cover - platforms without readline
                readline = None  # type: ignore[assignment]
            if readline is not None and prefill:
                readline.set_startup_hook(lambda: readline.insert_text(prefill))
            try:
                return input(prompt)
            finally:
                if readline is not None:
                    readline.set_startup_hook(None)
        self.err.write(prompt)
        self.err.flush()
        line = self.stdin.readline()
        if not line:
            raise EOFError
        if not self.stdin.isatty():
            # Piped answers are not echoed by a terminal: show each after its prompt, as typed.
            self.err.write(line.rstrip("\r\n") + "\n")
            self.err.flush()
        return line.rstrip("\r\n")
