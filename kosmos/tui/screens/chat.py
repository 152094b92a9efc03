"""The chat screen: the chat's agent router in the TUI, on the same core as `kosmos chat`.

The conversation scrolls above an input. Each request runs in a worker; a chosen skill runs in
a run view inside the conversation, on the host selected in the sidebar, with the TUI's
approvals. The screen stays installed, so leaving it (escape) keeps the conversation.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Input, Label, Static
from textual.worker import Worker, WorkerState

from kosmos.chat.agent import ChatAgent
from kosmos.chat.build import open_chat
from kosmos.chat.catalog import Catalog, pick_lang
from kosmos.chat.host_skills import offer
from kosmos.chat.log import default_log_path
from kosmos.errors import EXIT_DONE, KosmosError
from kosmos.runs.skills import HostSkills, host_skills
from kosmos.skills.model import Skill
from kosmos.tui.chat_bridge import ConversationOutput, TuiSkillRunner
from kosmos.tui.messages import EngineEvent, OutputReady, RunStateChanged
from kosmos.tui.parts import CHAT_SCREEN, TuiParts
from kosmos.tui.widgets.chat_conversation import ChatSaid, Conversation
from kosmos.tui.widgets.keys import Keys

IDLE = "say what you need; /help lists the tools"
BUSY = "working on it… (escape: back to runs; the chat goes on)"


class ChatScreen(Screen[None]):
    """One conversation at a time; a new one starts when the last ended and the operator types."""

    BINDINGS = [
        Binding("escape", "back", "Back to runs"),
        # The app's ctrl+t opens the chat; here it goes back, so the key toggles.
        Binding("ctrl+t", "back", "Back to runs", show=False),
        Binding("ctrl+c", "stop_command", "Stop command", priority=True),
    ]

    def __init__(self, parts: TuiParts, selected_host: Callable[[], str]) -> None:
        """`selected_host`: the host chosen in the main screen's sidebar, where skills run."""
        super().__init__()
        self.parts = parts
        self._selected_host = selected_host
        self.agent: ChatAgent | None = None
        self.host: str | None = None
        self.log_path: Path | None = None
        self.busy = False
        self.ended: int | None = None
        self._close: contextlib.AsyncExitStack | None = None
        self.skills: TuiSkillRunner | None = None

    def compose(self) -> ComposeResult:
        yield Static("◆ kosmos chat", id="chat-title")
        yield Conversation(id="conversation")
        with Horizontal(id="chat-bar"):
            yield Label("", id="chat-host")
            yield Input(placeholder=IDLE, id="chat-input")
        yield Keys()

    @property
    def conversation(self) -> Conversation:
        return self.query_one("#conversation", Conversation)

    @property
    def input(self) -> Input:
        return self.query_one("#chat-input", Input)

    def on_mount(self) -> None:
        self.skills = TuiSkillRunner(self.parts, self.conversation, self._selected_host)

    def on_screen_resume(self) -> None:
        """Shown (first time, or back from the main screen): start or follow the host."""
        if self.skills is not None and self.skills.waiting:
            view = self.skills.views[-1]
            view.call_after_refresh(view.focus_pending)  # the run waits on one of its steps
        else:
            self.input.focus()
        if self.busy:
            return
        if self.agent is None and self.ended in (None, EXIT_DONE):
            self._work(self._start())
        elif self.agent is not None and self.host != self._selected_host():
            self._work(self._follow_host())

    def _work(self, job: Coroutine[Any, Any, None]) -> None:
        self._set_busy(True)
        self.run_worker(job, group="chat", exit_on_error=False)

    def _set_busy(self, busy: bool) -> None:
        # The input keeps the focus while the agent works (lines typed then are refused): moving
        # the focus or disabling the input restyles the whole conversation, turn after turn.
        self.busy = busy
        self.input.placeholder = BUSY if busy else IDLE
        if not busy and self.is_current and not self.input.has_focus:
            self.input.focus()

    def _say(self, text: str, kind: str) -> None:
        self.conversation.post_message(ChatSaid(text, kind))

    # -- a conversation ------------------------------------------------------------------

    async def _open(self) -> bool:
        """A new agent (its own log file); False, with the reason shown, if it cannot start."""
        config = self.parts.config
        home = config.home or Path.home()
        self.log_path = config.chat_log or default_log_path(config.env, home)
        assert self.skills is not None
        stack = contextlib.AsyncExitStack()
        try:
            self.agent = await stack.enter_async_context(
                open_chat(
                    config.settings,
                    lang=pick_lang(config.chat_lang, config.env),
                    output=ConversationOutput(self.conversation),
                    log_path=self.log_path,
                    env=config.env,
                    skills=self._local_skills(),
                    skill_runner=self.skills,
                )
            )
        except KosmosError as e:
            await stack.aclose()
            self._say(str(e), "error")
            return False
        self._close = stack
        self.ended = None
        return True

    def _local_skills(self) -> list[Skill]:
        config = self.parts.config
        return config.library.list() if config.settings.chat_settings.skills else []

    async def _start(self) -> None:
        """Open the agent, offer the selected host's skills, greet."""
        try:
            if not await self._open():
                return
            await self._use_host(self._selected_host())
            assert self.agent is not None
            self.agent.begin()
        finally:
            self._set_busy(False)

    async def _follow_host(self) -> None:
        """The operator chose another host on the main screen: its skills replace the last's."""
        try:
            await self._use_host(self._selected_host())
            assert self.agent is not None
            self._say(self.agent.t("host_changed", host=self.host), "note")
        finally:
            self._set_busy(False)

    async def _use_host(self, host: str) -> None:
        agent = self.agent
        assert agent is not None
        self.host = host
        self.query_one("#chat-host", Label).update(f"◆ {host}")
        found = HostSkills(host)
        if self.parts.config.settings.chat_settings.skills:
            if host != "local":  # this machine's folder answers at once
                self._say(agent.t("host_looking", host=host), "progress")
            found = await self._list(host)
        offer(agent, self._local_skills(), found)

    async def _list(self, host: str) -> HostSkills:
        settings = self.parts.config.settings
        try:
            runner = await self.parts.pool.get(host)
            found = await host_skills(runner, timeout=settings.remote_skill_timeout)
        except KosmosError as e:
            self._say(f"{e}; only the local skills are offered", "reason")
            return HostSkills(host)
        for problem in found.problems:
            self._say(problem, "reason")
        return found

    async def _handle(self, line: str) -> None:
        """One line through the agent; a conversation that ended starts anew first."""
        try:
            if self.agent is None:
                if not await self._open():
                    return
                await self._use_host(self._selected_host())
                assert self.agent is not None
                self.agent.begin()
            elif self.host != self._selected_host():
                await self._use_host(self._selected_host())
                self._say(self.agent.t("host_changed", host=self.host), "note")
            self._say(f"› {line}", "operator")
            code = await self.agent.handle(line)
            if code is not None:
                await self._end(code)
        finally:
            self._set_busy(False)

    async def _end(self, code: int) -> None:
        """The agent ended (an exit command, or an LLM error or parse error that ends it)."""
        self.agent = None
        self.ended = code
        if self._close is not None:
            await self._close.aclose()
            self._close = None
        if code == EXIT_DONE:
            self._say(f"log: {self.log_path}", "note")
            if self.is_current:
                self.app.pop_screen()
            self.app.notify(f"chat ended; log: {self.log_path}")
            return
        config = self.parts.config
        catalog = Catalog(
            pick_lang(config.chat_lang, config.env), config.settings.chat_settings.messages
        )
        self._say(f"{catalog('chat_ended')} (log: {self.log_path})", "note")

    # -- events --------------------------------------------------------------------------

    @on(Input.Submitted, "#chat-input")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        line = event.value
        if not line.strip():
            return
        if self.busy:
            self.app.bell()  # the line stays in the input until the last request is done
            return
        self.input.value = ""
        self._work(self._handle(line))

    @on(EngineEvent)
    @on(OutputReady)
    @on(RunStateChanged)
    def _run_changed(self, message: EngineEvent | OutputReady | RunStateChanged) -> None:
        # A skill's run view grew: keep it in view (its own widgets handled the message).
        message.stop()
        self.conversation.follow()
        self.refresh_bindings()
        waiting = self.skills is not None and self.skills.waiting
        if isinstance(message, RunStateChanged) and waiting and not self.is_current:
            self.app.notify("a skill the chat started waits for you (ctrl+t shows the chat)")

    @on(Worker.StateChanged)
    def _worker_state(self, event: Worker.StateChanged) -> None:
        if event.worker.group == "chat" and event.worker.state == WorkerState.ERROR:
            self._say(f"internal error: {event.worker.error!r}", "error")
            self._set_busy(False)

    # -- keys ----------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "stop_command":
            return self.skills is not None and self.skills.command_running
        return True

    def action_back(self) -> None:
        self.app.pop_screen()

    def action_stop_command(self) -> None:
        if self.skills is not None and self.skills.stop_command():
            self.notify("stopping the command (its whole process tree)")

    async def on_unmount(self) -> None:
        if self._close is not None:
            await self._close.aclose()
            self._close = None


def _chat(app: App[Any]) -> ChatScreen | None:
    if not app.is_screen_installed(CHAT_SCREEN):
        return None
    screen = app.get_screen(CHAT_SCREEN)
    return screen if isinstance(screen, ChatScreen) else None


def chat_running_commands(app: App[Any]) -> int:
    """1 while a skill the chat started runs a command (quitting asks first), else 0."""
    chat = _chat(app)
    return int(chat is not None and chat.skills is not None and chat.skills.command_running)


def chat_stop_command(app: App[Any]) -> None:
    chat = _chat(app)
    if chat is not None and chat.skills is not None:
        chat.skills.stop_command()
