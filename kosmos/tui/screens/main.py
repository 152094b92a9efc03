"""The main screen: sidebar, the Skill tab and one tab per run, the System Context panel."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.markup import escape
from textual.screen import Screen
from textual.widgets import Input, Static, TabbedContent, TabPane
from textual.worker import Worker, WorkerState

from kosmos.engine.guard import visible
from kosmos.errors import KosmosError, SkillNotFound
from kosmos.events import CommandFinished, CommandStarted, Event, KnowledgeLoaded, LLMRequest
from kosmos.runs.params import dialogue_wanted
from kosmos.runs.skills import find_host_skill, host_skills
from kosmos.skills.model import Skill
from kosmos.tui.messages import (
    EngineEvent,
    HostChosen,
    HostState,
    RemoteSkills,
    RunStateChanged,
    SkillChosen,
)
from kosmos.tui.operator import TuiOperator
from kosmos.tui.parts import TuiParts
from kosmos.tui.runs import RunController, RunSpec
from kosmos.tui.screens.fleet import fleet_screen
from kosmos.tui.widgets.context_panel import ContextPanel
from kosmos.tui.widgets.keys import Keys
from kosmos.tui.widgets.params_talk import ParamsTalk
from kosmos.tui.widgets.run_view import RunView
from kosmos.tui.widgets.sidebar import Sidebar
from kosmos.tui.widgets.skill_form import NO_SKILL, SkillPanel
from kosmos.tui.widgets.steps import Note

SKILL_TAB = "skill-tab"


class MainScreen(Screen[None]):
    """Chooses skills and hosts, starts runs in tabs, routes keys to the run in front."""

    BINDINGS = [
        Binding("ctrl+r", "start", "Run skill"),
        Binding("ctrl+c", "stop_command", "Stop command", priority=True),
        Binding("ctrl+o", "toggle_context", "Context"),
        Binding("ctrl+n", "next_tab", "Next tab"),
        Binding("ctrl+w", "close_tab", "Close tab"),
        Binding("ctrl+f", "focus_filter", "Filter"),
    ]

    def __init__(self, parts: TuiParts) -> None:
        super().__init__()
        self.parts = parts
        self.runs: dict[str, RunController] = {}
        self._count = 0
        # ctrl+r pressed while the host was connecting: the host it waits for.
        self._pending_start: str | None = None

    def compose(self) -> ComposeResult:
        config = self.parts.config
        with Horizontal(id="body"):
            yield Sidebar(config.hosts, config.host)
            with TabbedContent(id="tabs"), TabPane("Skill", id=SKILL_TAB):
                yield SkillPanel(None, config.host)
            yield ContextPanel(id="context")
        yield Keys()

    @property
    def sidebar(self) -> Sidebar:
        return self.query_one("#sidebar", Sidebar)

    @property
    def tabs(self) -> TabbedContent:
        return self.query_one("#tabs", TabbedContent)

    async def on_mount(self) -> None:
        config = self.parts.config
        library = config.library
        self.sidebar.set_skills(library.list(), [])
        for problem in library.errors:
            self.notify(problem, severity="warning", timeout=8)
        self.sidebar.mark([h.name for h in config.fleet])
        if config.skill:
            await self._preselect(config.skill)
        self._load_remote(config.host)

    async def _preselect(self, name: str) -> None:
        try:
            skill = self.parts.config.library.find(name)
        except SkillNotFound:
            self._find_remote(name)
            return
        except KosmosError as e:
            self.notify(str(e), severity="error", timeout=10)
            return
        self.sidebar.select_skill(skill)

    def on_screen_suspend(self) -> None:
        # A screen on top (a fleet's): a focused input here would blink unseen, waking the app
        # twice a second for nothing.
        for field in self.query(Input):
            field.cursor_blink = False

    def on_screen_resume(self) -> None:
        for field in self.query(Input):
            field.cursor_blink = True

    # -- hosts and skills ---------------------------------------------------------------

    def _load_remote(self, target: str) -> None:
        self.run_worker(self._remote_skills(target), group="skills", exclusive=True)

    async def _remote_skills(self, target: str) -> None:
        settings = self.parts.config.settings
        try:
            runner = await self.parts.pool.get(target)
            found = await host_skills(runner, timeout=settings.remote_skill_timeout)
        except KosmosError as e:
            self.post_message(RemoteSkills(target, [], str(e)))
            return
        note = found.problems[0] if len(found.problems) == 1 else ""
        if len(found.problems) > 1:
            note = f"{len(found.problems)} skill files on {target} could not be read"
        self.post_message(RemoteSkills(target, found.skills, note))

    def _find_remote(self, name: str) -> None:
        async def find() -> None:
            try:
                runner = await self.parts.pool.get(self.sidebar.selected_host)
                skill = await find_host_skill(
                    runner, name, timeout=self.parts.config.settings.remote_skill_timeout
                )
            except KosmosError as e:
                problem = f"--skill {name}: {e}"
                self.notify(problem, severity="error", timeout=10)
                # It stays where the skill would have been, once the notice has gone.
                for hint in self.query("#no-skill").results(Static):
                    hint.update(f"{problem}\n\n{NO_SKILL}")
                return
            self.sidebar.select_skill(skill)

        self.run_worker(find(), group="find-skill")

    @on(RemoteSkills)
    def _remote_listed(self, message: RemoteSkills) -> None:
        if message.target == self.sidebar.selected_host:
            self.sidebar.set_skills(self.sidebar.local_skills, message.skills, message.problem)

    @on(HostState)
    async def _host_state(self, message: HostState) -> None:
        self.sidebar.set_state(message.target, message.state, message.detail)
        if message.state == "failed":
            self.notify(message.detail, severity="error", timeout=10)
        if message.target == self._pending_start and message.state != "connecting":
            self._pending_start = None
            if message.state == "connected":
                await self.action_start()
            else:
                self.notify(f"the run did not start: {message.target} is not connected")

    def start_when_connected(self) -> None:
        """ctrl+r while the selected host is being connected (its key or passphrase asked)."""
        host = self.sidebar.selected_host
        if self.parts.pool.connected(host) or self.sidebar.marked:
            return  # nothing waits on this host's connection
        self._pending_start = host
        self.notify(f"ctrl+r: the run starts once {host} is connected")

    @on(HostChosen)
    def _host_chosen(self, message: HostChosen) -> None:
        self.query_one(SkillPanel).set_host(self._run_target())
        self._load_remote(message.target)

    @on(Sidebar.Marked)
    def _hosts_marked(self) -> None:
        self.query_one(SkillPanel).set_host(self._run_target())

    def _run_target(self) -> str:
        """Where ctrl+r runs the skill: the selected host, or the hosts marked for a fleet."""
        marked = self.sidebar.marked
        return f"{len(marked)} marked hosts" if marked else self.sidebar.selected_host

    @on(SkillChosen)
    async def _skill_chosen(self, message: SkillChosen) -> None:
        await self._show_skill(message.skill, focus=message.by_operator)

    async def _show_skill(self, skill: Skill, *, focus: bool = False) -> None:
        pane = self.query_one(f"#{SKILL_TAB}", TabPane)
        old = self.query_one(SkillPanel)
        config = self.parts.config
        given = config.params if skill.name == config.skill or skill.ref == config.skill else None
        await old.remove()
        talk = None
        if dialogue_wanted(skill, given or {}, config.settings, non_interactive=False):
            talk = ParamsTalk(skill, config.settings, config.prompts)
        panel = SkillPanel(skill, self._run_target(), given, talk)
        await pane.mount(panel)
        self.tabs.active = SKILL_TAB
        # Chosen in the sidebar to be filled in: its first field takes the keys.
        if focus and panel.form is not None:
            panel.form.focus_first()

    # -- runs ---------------------------------------------------------------------------

    async def action_start(self, early: tuple[Event, ...] = ()) -> None:
        panel = self.query_one(SkillPanel)
        form = panel.form
        if panel.skill is None or form is None:
            self.notify("choose a skill in the sidebar first (enter selects)", severity="warning")
            return
        params = form.validate()
        if params is None:
            self.tabs.active = SKILL_TAB
            return
        if self.sidebar.marked:
            self.app.push_screen(fleet_screen(self.parts, panel.skill, params, self.sidebar))
            return
        transcript = self.parts.config.transcript
        self.parts.config.transcript = None  # --transcript is the first run's
        host = self.sidebar.selected_host
        spec = RunSpec(panel.skill, params, host, transcript=transcript, early=early)
        await self.start_run(spec)

    @on(ParamsTalk.Confirmed)
    async def _talk_confirmed(self, message: ParamsTalk.Confirmed) -> None:
        """The values said in the dialogue fill the form, and the skill runs with them."""
        panel = self.query_one(SkillPanel)
        if panel.form is None:
            return
        panel.form.fill(message.values)
        await self.action_start(tuple(message.events))

    async def start_run(self, spec: RunSpec) -> RunController:
        """Open a tab for a run and start it in a worker; it goes on when another tab is shown."""
        self._count += 1
        n = self._count
        title = f"{spec.skill.name} @ {spec.host}"
        view = RunView(title, id=f"run-{n}")
        redactor = self.parts.new_redactor()
        operator = TuiOperator(view, self.parts.prompter, redactor)
        controller = RunController(
            spec=spec,
            settings=self.parts.config.settings,
            prompts=self.parts.config.prompts,
            pool=self.parts.pool,
            view=view,
            operator=operator,
            redactor=redactor,
        )
        view.controller = controller
        view.operator = operator
        self.runs[view.id or ""] = controller
        pane = TabPane(self._tab_label(n, spec, "…"), view, id=f"tab-{n}")
        await self.tabs.add_pane(pane)
        self.tabs.active = pane.id or ""
        # Focus leaves the Skill tab, else the tabs would switch back to where the focus is.
        view.focus()
        self.run_worker(controller.run(), group="runs", name=view.id or "", exit_on_error=False)
        return controller

    @staticmethod
    def _tab_label(n: int, spec: RunSpec, mark: str) -> str:
        # A tab's label is markup: a name from a file is escaped, its controls shown.
        name = visible(f"{spec.skill.name}@{spec.host}", one_line=True)
        return f"{mark} {n}: {escape(name)}"

    def _views(self) -> list[RunView]:
        return list(self.query(RunView))

    def front_view(self) -> RunView | None:
        active = self.tabs.active
        if not active or active == SKILL_TAB:
            return None
        views = self.query(f"#{active} RunView")
        return views.first(RunView) if views else None

    @on(RunStateChanged)
    def _run_state(self, message: RunStateChanged) -> None:
        view = self.query_one(f"#{message.run_id}", RunView)
        controller = self.runs.get(message.run_id)
        if controller is None:
            return
        n = int(message.run_id.split("-")[1])
        if view.result is not None:
            mark = "✓" if view.result.status == "done" else "✗"
        elif view.waiting:
            mark = "●"
        else:
            mark = "…"
        self.tabs.get_tab(f"tab-{n}").label = self._tab_label(n, controller.spec, mark)
        if view.waiting and view is not self.front_view():
            self.notify(
                f"run {n} ({controller.spec.skill.name}@{controller.spec.host}) waits for you"
            )
        self.refresh_bindings()

    @on(EngineEvent)
    def _engine_event(self, message: EngineEvent) -> None:
        event = message.event
        if isinstance(event, CommandStarted | CommandFinished):
            self.refresh_bindings()
        elif isinstance(event, KnowledgeLoaded | LLMRequest):
            self._update_context()

    @on(Worker.StateChanged)
    def _worker_state(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if worker.state != WorkerState.ERROR:
            return
        error = self.parts.redactor(f"{worker.error!r}")
        if worker.group == "runs":
            view = self.query_one(f"#{worker.name}", RunView)
            view.mount(Note(f"the run stopped on an internal error: {error}", "warn"))
        else:
            self.notify(error, severity="error")

    @on(TabbedContent.TabActivated)
    def _tab_activated(self) -> None:
        view = self.front_view()
        if view is not None:
            view.call_after_refresh(view.focus_pending)
        self._update_context()
        self.refresh_bindings()

    # -- keys ---------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "stop_command":
            view = self.front_view()
            return bool(view and view.controller and view.controller.command_running)
        if action == "close_tab":
            view = self.front_view()
            return view is not None and view.result is not None
        if action == "next_tab":
            return len(self.runs) > 0
        return True

    def action_stop_command(self) -> None:
        view = self.front_view()
        if view is not None and view.controller is not None and view.controller.stop_command():
            self.notify("stopping the command (its whole process tree)")

    def action_toggle_context(self) -> None:
        panel = self.query_one(ContextPanel)
        panel.set_class(not panel.has_class("shown"), "shown")
        self._update_context()

    def _update_context(self) -> None:
        panel = self.query_one(ContextPanel)
        view = self.front_view()
        if view is None:
            shown = [v for v in self._views() if v.system_prompt]
            view = shown[-1] if shown else None
        panel.show(view.knowledge if view else None, view.system_prompt if view else None)

    def action_next_tab(self) -> None:
        panes = [SKILL_TAB, *(f"tab-{v.id.split('-')[1]}" for v in self._views() if v.id)]
        current = self.tabs.active
        index = panes.index(current) if current in panes else 0
        self.tabs.active = panes[(index + 1) % len(panes)]

    async def action_close_tab(self) -> None:
        view = self.front_view()
        if view is None or view.result is None or not view.id:
            return
        self.runs.pop(view.id, None)
        await self.tabs.remove_pane(f"tab-{view.id.split('-')[1]}")
        self.tabs.active = SKILL_TAB

    def action_focus_filter(self) -> None:
        self.query_one("#filter").focus()

    def running_commands(self) -> int:
        return sum(1 for c in self.runs.values() if c.command_running)
