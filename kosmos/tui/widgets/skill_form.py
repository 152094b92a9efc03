"""The selected skill: its description and a parameters form built from its frontmatter."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Input, Label, Markdown, Select, Static

from kosmos.engine.guard import visible
from kosmos.errors import ParamError
from kosmos.skills.model import Param, Skill
from kosmos.skills.params import resolve_params, validate_value
from kosmos.tui.paths import shown_path
from kosmos.tui.widgets.params_talk import ParamsTalk

NO_SKILL = (
    "Choose a skill in the sidebar (enter), fill in its parameters, "
    "then press ctrl+r to run it on the selected host."
)


def _run_hint(skill: str, host: str) -> Text:
    shown = visible(skill, one_line=True)
    return Text.assemble("ctrl+r runs ", shown, " on ", (visible(host, one_line=True), "bold"))


def _field_id(param: Param) -> str:
    return f"param-{param.name}"


class ParamsForm(Vertical):
    """One field per declared param: required marked, defaults filled, choices as a select,
    max_length enforced by the input, problems shown under the field."""

    def __init__(self, skill: Skill, given: dict[str, str] | None = None) -> None:
        super().__init__(id="params-form")
        self.skill = skill
        self.given = given or {}

    def compose(self) -> ComposeResult:
        if not self.skill.params:
            yield Static("This skill takes no parameters.", classes="hint")
        for param in self.skill.params:
            mark = " *" if param.required else ""
            yield Label(f"{param.name}{mark}", classes="param-label", markup=False)
            if param.description:
                yield Static(visible(param.description), classes="hint", markup=False)
            value = self.given.get(param.name) or param.default
            if param.choices:
                yield Select(
                    [(choice, choice) for choice in param.choices],
                    value=value if value in param.choices else Select.NULL,
                    allow_blank=value not in param.choices,
                    prompt="choose one",
                    id=_field_id(param),
                    compact=True,
                )
            else:
                rules = []
                if param.max_length:
                    rules.append(f"at most {param.max_length} characters")
                placeholder = "required" if param.required else "optional"
                yield Input(
                    value=value or "",
                    placeholder=f"{placeholder}{' · ' + ', '.join(rules) if rules else ''}",
                    max_length=param.max_length or 0,
                    id=_field_id(param),
                )
            yield Static("", classes="field-error", id=f"error-{param.name}", markup=False)

    def values(self) -> dict[str, str]:
        """What the form holds now, empty fields left out."""
        values: dict[str, str] = {}
        for param in self.skill.params:
            widget = self.query_one(f"#{_field_id(param)}")
            if isinstance(widget, Select):
                value = "" if widget.value is Select.NULL else str(widget.value)
            else:
                assert isinstance(widget, Input)
                value = widget.value
            if value:
                values[param.name] = value
        extra = {k: v for k, v in self.given.items() if not self.skill.param(k)}
        return {**extra, **values} if not self.skill.params else values

    def validate(self) -> dict[str, str] | None:
        """The params to start with, or None with every problem shown beside its field."""
        values = self.values()
        problems: dict[str, str] = {}
        for param in self.skill.params:
            value = values.get(param.name)
            if value is None:
                if param.required and param.default is None:
                    problems[param.name] = "required: fill this in"
                continue
            problem = validate_value(param, value)
            if problem:
                problems[param.name] = problem
        for param in self.skill.params:
            error = self.query_one(f"#error-{param.name}", Static)
            error.update(problems.get(param.name, ""))
        if problems:
            first = next(p for p in self.skill.params if p.name in problems)
            self.query_one(f"#{_field_id(first)}").focus()
            return None
        try:
            return resolve_params(self.skill, values)
        except ParamError as e:
            self.notify(str(e), severity="error")
            return None

    def focus_first(self) -> None:
        """Focus the first required field left empty, else the first field (if any)."""
        values = self.values()
        empty = [p for p in self.skill.params if p.required and p.name not in values]
        first = next(iter(empty or self.skill.params), None)
        if first is not None:
            # At once, not deferred as focus() is: a run started right after takes it away.
            self.screen.set_focus(self.query_one(f"#{_field_id(first)}"))

    def fill(self, values: dict[str, str]) -> None:
        """Put these values in their fields (what the parameter dialogue collected)."""
        for name, value in values.items():
            param = self.skill.param(name)
            if param is None:
                continue
            widget = self.query_one(f"#{_field_id(param)}")
            if isinstance(widget, Select):
                if value in (param.choices or ()):
                    widget.value = value
            else:
                assert isinstance(widget, Input)
                widget.value = value
            self.query_one(f"#error-{name}", Static).update("")

    def on_input_changed(self, event: Input.Changed) -> None:
        name = (event.input.id or "").removeprefix("param-")
        if self.skill.param(name) is not None:
            self.query_one(f"#error-{name}", Static).update("")

    def on_select_changed(self, event: Select.Changed) -> None:
        name = (event.select.id or "").removeprefix("param-")
        if self.skill.param(name) is not None:
            self.query_one(f"#error-{name}", Static).update("")


class SkillPanel(VerticalScroll):
    """The Skill tab: name, where it came from, description, the params form, how to start."""

    def __init__(
        self,
        skill: Skill | None,
        host: str,
        given: dict[str, str] | None = None,
        talk: ParamsTalk | None = None,
    ) -> None:
        super().__init__(id="skill-panel")
        self.skill = skill
        self.host = host
        self.given = given
        # The parameter dialogue, offered when required params are missing (docs/protocol.md).
        self.talk = talk

    def compose(self) -> ComposeResult:
        skill = self.skill
        if skill is None:
            yield Static(NO_SKILL, classes="hint", id="no-skill", markup=False)
            return
        yield Label(visible(skill.name, one_line=True), classes="skill-name", markup=False)
        yield Static(
            f"{skill.source} · {shown_path(skill.path)}",
            classes="hint",
            id="skill-source",
            markup=False,
        )
        if skill.description:
            yield Markdown(visible(skill.description), id="skill-description")
        for problem in skill.warnings:
            yield Static(f"warning: {visible(problem)}", classes="hint warn", markup=False)
        yield Label("Parameters", classes="section")
        form = ParamsForm(skill, self.given)
        yield form
        yield Static(_run_hint(skill.name, self.host), classes="hint", id="run-hint")
        if self.talk is not None:
            self.talk.given = form.values
            yield self.talk

    @on(ParamsTalk.Filled)
    def _filled(self, message: ParamsTalk.Filled) -> None:
        message.stop()
        if self.form is not None:
            self.form.fill(message.values)

    def set_host(self, host: str) -> None:
        self.host = host
        if self.skill is not None:
            self.query_one("#run-hint", Static).update(_run_hint(self.skill.name, host))

    @property
    def form(self) -> ParamsForm | None:
        forms = self.query(ParamsForm)
        return forms.first() if forms else None
