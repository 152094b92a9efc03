"""`kosmos tui`: the Textual app, its configuration, and the entry point the CLI calls."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from textual.binding import Binding

from kosmos.config import Settings
from kosmos.fleet.orchestrator import DEFAULT_FORKS
from kosmos.fleet.targets import HostSpec
from kosmos.prompts import Prompts
from kosmos.runs.redactor import run_redactor
from kosmos.runs.skills import skill_library
from kosmos.safety import Redactor
from kosmos.skills.params import parse_param_flags
from kosmos.tui.focus import KeyRoutingApp
from kosmos.tui.hostlist import host_choices
from kosmos.tui.messages import HostState
from kosmos.tui.parts import CHAT_SCREEN, TuiConfig
from kosmos.tui.pool import HostPool
from kosmos.tui.prompter import ModalPrompter
from kosmos.tui.screens.fleet import FleetScreen
from kosmos.tui.screens.main import MainScreen
from kosmos.tui.screens.modals import HostKeyModal, QuitModal, SecretModal

__all__ = ["KosmosApp", "TuiConfig", "run_tui"]


class KosmosApp(KeyRoutingApp):
    """The operator's cockpit: choose a host and a skill, run it, approve its steps.

    It is the `TuiParts` its screens are given (config, pool, prompter, redactors)."""

    CSS_PATH = Path(__file__).parent / "kosmos.tcss"
    TITLE = "kosmos"
    BINDINGS = [
        Binding("ctrl+t", "chat", "Chat"),
        # Textual's own, shown: every screen's footer says how to leave.
        Binding("ctrl+q", "quit", "Quit", priority=True),
        # While a host key or passphrase is asked (the host is connecting), the main screen's
        # ctrl+r cannot be reached: it is kept and acted on once the host is connected.
        Binding("ctrl+r", "run_when_connected", "Run once connected", priority=True),
    ]

    def __init__(self, config: TuiConfig) -> None:
        super().__init__()
        self.config = config
        self.prompter = ModalPrompter(self)
        self.pool = HostPool(config.settings, self.prompter, self._host_state, self._host_news)
        self.redactor = self.new_redactor()

    def new_redactor(self) -> Redactor:
        """Every secret kosmos knows of is masked in what it shows, stores or sends; each run
        has its own, fed as secrets appear (a sudo password typed in one run)."""
        return run_redactor(self.config.settings, self.config.env)

    def get_default_screen(self) -> MainScreen:
        return MainScreen(self)

    def on_mount(self) -> None:
        if self.config.chat:
            self.action_chat()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "run_when_connected":
            below = self.screen_stack[-2] if len(self.screen_stack) > 1 else None
            return isinstance(self.screen, HostKeyModal | SecretModal) and below is self.main
        return True

    def action_run_when_connected(self) -> None:
        self.main.start_when_connected()

    def action_help_quit(self) -> None:
        """ctrl+c where no command runs (where one does, the screen's binding stops it)."""
        self.notify("ctrl+c stops a running command, and none is running here; ctrl+q quits")

    def action_chat(self) -> None:
        """Show the chat, made once and kept for the app's life (its conversation survives);
        its skills run on the host selected in the main screen's sidebar."""
        if not self.is_screen_installed(CHAT_SCREEN):
            # kosmos.chat (its agent, tools and catalog) is imported when the chat is first
            # opened, not with the screen.
            from kosmos.tui.screens.chat import ChatScreen

            self.install_screen(
                ChatScreen(self, lambda: self.main.sidebar.selected_host), CHAT_SCREEN
            )
        if self.screen is not self.get_screen(CHAT_SCREEN):
            self.push_screen(CHAT_SCREEN)

    def _host_state(self, target: str, state: str, detail: str) -> None:
        if self.screen_stack:
            self.screen_stack[0].post_message(HostState(target, state, detail))

    def _host_news(self, message: str) -> None:
        """A host's news (a reconnect) as a notification."""
        self.notify(self.redactor(message), severity="warning", timeout=8)

    @property
    def main(self) -> MainScreen:
        screen = self.screen_stack[0]
        assert isinstance(screen, MainScreen)
        return screen

    async def action_quit(self) -> None:
        # Fleet screens sit above the main one; their hosts' commands count too.
        fleets = [s for s in self.screen_stack if isinstance(s, FleetScreen)]
        running = self.main.running_commands() + self._chat_running()
        running += sum(s.running_commands() for s in fleets)
        if not running:
            self.exit(0)
            return

        def answered(quit_now: bool | None) -> None:
            if quit_now:
                for controller in self.main.runs.values():
                    controller.stop_command()
                for feed in (f for s in fleets for f in s.feeds.values()):
                    feed.stop_command()
                if self.is_screen_installed(CHAT_SCREEN):
                    from kosmos.tui.screens.chat import chat_stop_command

                    chat_stop_command(self)
                self.exit(0)

        self.push_screen(QuitModal(running), callback=answered)

    def _chat_running(self) -> int:
        """1 while a skill the chat started runs a command, else 0."""
        if not self.is_screen_installed(CHAT_SCREEN):
            return 0
        from kosmos.tui.screens.chat import chat_running_commands

        return chat_running_commands(self)

    async def on_unmount(self) -> None:
        await self.pool.close()


def run_tui(
    settings: Settings,
    *,
    host: str,
    skill: str | None,
    params: Sequence[str],
    transcript: Path | None,
    skills_dirs: Sequence[Path],
    env: dict[str, str],
    home: Path,
    fleet: Sequence[HostSpec] = (),
    forks: int = DEFAULT_FORKS,
    llm_concurrency: int | None = None,
    canary: str | None = None,
    chat: bool = False,
    chat_lang: str | None = None,
    chat_log: Path | None = None,
) -> int:
    """Start the app in this terminal; returns its exit code when the operator quits.
    `fleet`: hosts marked at start, so that ctrl+r runs the skill on all of them."""
    hosts = host_choices(home, host)
    hosts += [h.name for h in fleet if h.name not in hosts]
    config = TuiConfig(
        settings=settings,
        library=skill_library(settings, skills_dirs, env, home),
        prompts=Prompts.load(settings.prompts_file),
        hosts=hosts,
        fleet=list(fleet),
        forks=forks,
        llm_concurrency=llm_concurrency,
        canary=canary,
        host=host,
        skill=skill,
        params=parse_param_flags(params),
        transcript=transcript,
        env=env,
        home=home,
        chat=chat,
        chat_lang=chat_lang,
        chat_log=chat_log,
    )
    return KosmosApp(config).run() or 0
