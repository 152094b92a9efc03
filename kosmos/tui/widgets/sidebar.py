"""The sidebar: a filter box, the hosts with their connection state, the skills."""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Input, Label, OptionList
from textual.widgets.option_list import Option

from kosmos.engine.guard import visible
from kosmos.skills.model import Skill
from kosmos.tui.messages import HostChosen, SkillChosen

STATE_MARKS = {
    "idle": ("○", "dim"),
    "connecting": ("◌", "yellow"),
    "connected": ("●", "green"),
    "failed": ("✗", "red"),
}


class _Picker(OptionList):
    """A list whose enter the footer shows: it opens the highlighted host or skill."""

    BINDINGS = [Binding("enter", "select", "Open")]


class _Filter(Input):
    """The filter box; enter opens its only match (else moves to the matches)."""

    BINDINGS = [Binding("enter", "submit", "Open match")]


class Sidebar(Vertical):
    """Hosts and skills, narrowed by the filter; choosing one posts HostChosen / SkillChosen.

    Marked hosts (space, or ctrl+g for every host the filter shows; a filter with * ? [ is a
    glob) make ctrl+r start a fleet run on all of them."""

    BINDINGS = [
        Binding("space", "mark_host", "Mark host"),
        # Not in the footer: the filter has the focus most of the time (README documents it).
        Binding("ctrl+g", "mark_shown", "Mark shown hosts", show=False),
    ]

    def __init__(self, hosts: list[str], selected_host: str) -> None:
        super().__init__(id="sidebar")
        self.hosts = hosts
        self.selected_host = selected_host
        self.states: dict[str, tuple[str, str]] = {}
        self.local_skills: list[Skill] = []
        self.remote_skills: list[Skill] = []
        self.remote_note = ""
        self.selected_skill: Skill | None = None
        self._shown_skills: list[Skill] = []
        self.marked: list[str] = []

    def compose(self) -> ComposeResult:
        yield Label("◆ kosmos", id="brand")
        yield _Filter(placeholder="filter hosts and skills", id="filter")
        yield Label("Hosts", classes="section")
        yield _Picker(id="hosts")
        yield Label("Skills", classes="section")
        yield _Picker(id="skills")
        yield Label("", id="remote-note", classes="note", markup=False)

    def on_mount(self) -> None:
        self.refresh_lists()

    @property
    def filter_text(self) -> str:
        return self.query_one("#filter", Input).value.strip().lower()

    # -- content ------------------------------------------------------------------------

    def set_state(self, target: str, state: str, detail: str) -> None:
        self.states[target] = (state, detail)
        self._fill_hosts()

    def set_skills(self, local: list[Skill], remote: list[Skill], note: str = "") -> None:
        self.local_skills = local
        self.remote_skills = remote
        self.remote_note = note
        self._fill_skills()

    def refresh_lists(self) -> None:
        self._fill_hosts()
        self._fill_skills()

    def _fill_hosts(self) -> None:
        hosts = self.query_one("#hosts", OptionList)
        wanted = self.filter_text
        options = []
        for target in self.hosts:
            if not self._shows(target, wanted) and target != self.selected_host:
                continue
            state, detail = self.states.get(target, ("idle", ""))
            mark, style = STATE_MARKS.get(state, ("○", "dim"))
            prompt = Text.assemble((f"{mark} ", style), visible(target, one_line=True))
            if target in self.marked:
                prompt = Text.assemble(("☑ ", "bold"), prompt)
            if state not in ("idle",):
                prompt.append(f"  {state}", style="dim")
            options.append(Option(prompt, id=f"host:{target}"))
        highlighted = f"host:{self.selected_host}"
        hosts.set_options(options)
        for index, option in enumerate(options):
            if option.id == highlighted:
                hosts.highlighted = index

    @staticmethod
    def _shows(target: str, wanted: str) -> bool:
        if not wanted:
            return True
        if any(c in wanted for c in "*?["):
            return fnmatchcase(target.lower(), wanted)
        return wanted in target.lower()

    def _fill_skills(self) -> None:
        skills = self.query_one("#skills", OptionList)
        wanted = self.filter_text
        shown: list[Skill] = []
        options: list[Option] = []
        groups = (("local", self.local_skills), (f"on {self.selected_host}", self.remote_skills))
        for label, group in groups:
            for skill in group:
                text = " ".join((skill.name, skill.summary, *skill.triggers)).lower()
                if wanted and wanted not in text:
                    continue
                prompt = Text(visible(skill.name, one_line=True))
                if label != "local":
                    prompt.append(f"  {label}", style="dim")
                options.append(Option(prompt, id=f"skill:{len(shown)}"))
                shown.append(skill)
        self._shown_skills = shown
        skills.set_options(options)
        if self.selected_skill in shown:
            skills.highlighted = shown.index(self.selected_skill)
        elif shown:
            skills.highlighted = 0
        self.query_one("#remote-note", Label).update(self.remote_note)

    # -- choosing -----------------------------------------------------------------------

    @on(Input.Changed, "#filter")
    def _filtered(self) -> None:
        self.refresh_lists()

    @on(Input.Submitted, "#filter")
    def _filter_done(self) -> None:
        """The only skill the filter shows is opened; the only host, chosen; else the focus
        goes to the matches."""
        hosts = [t for t in self.hosts if self._shows(t, self.filter_text)]
        if len(self._shown_skills) == 1:
            self.select_skill(self._shown_skills[0], by_operator=True)
        elif not self._shown_skills and len(hosts) == 1:
            self.choose_host(hosts[0])
        elif self._shown_skills:
            self.query_one("#skills", OptionList).focus()
        else:
            self.query_one("#hosts", OptionList).focus()

    @on(OptionList.OptionSelected, "#hosts")
    def _host_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.choose_host((event.option.id or "").removeprefix("host:"))

    def choose_host(self, target: str) -> None:
        if target and target != self.selected_host:
            self.selected_host = target
            self.remote_skills = []
            self.refresh_lists()
        self.post_message(HostChosen(target))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Marking keys belong to the host list and the filter (the footer shows them there).
        if action == "mark_host":
            return self.query_one("#hosts", OptionList).has_focus
        return True

    def action_mark_host(self) -> None:
        hosts = self.query_one("#hosts", OptionList)
        if not hosts.has_focus or hosts.highlighted is None:
            return
        target = (hosts.get_option_at_index(hosts.highlighted).id or "").removeprefix("host:")
        index = hosts.highlighted
        self.mark([target], target not in self.marked)
        hosts.highlighted = index

    def action_mark_shown(self) -> None:
        shown = [t for t in self.hosts if self._shows(t, self.filter_text)]
        self.mark(shown, not all(t in self.marked for t in shown))

    def mark(self, targets: list[str], on: bool = True) -> None:
        """Mark (or unmark) hosts for a fleet run, in the host list's order."""
        chosen = set(self.marked) | set(targets) if on else set(self.marked) - set(targets)
        self.marked = [t for t in self.hosts if t in chosen]
        self._fill_hosts()
        self.post_message(self.Marked(list(self.marked)))

    @dataclass
    class Marked(Message):
        """The hosts marked for a fleet run changed."""

        hosts: list[str]

    @on(OptionList.OptionSelected, "#skills")
    def _skill_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        index = int((event.option.id or "skill:-1").split(":")[1])
        if 0 <= index < len(self._shown_skills):
            self.select_skill(self._shown_skills[index], by_operator=True)

    def select_skill(self, skill: Skill, *, by_operator: bool = False) -> None:
        self.selected_skill = skill
        self._fill_skills()
        self.post_message(SkillChosen(skill, by_operator))
