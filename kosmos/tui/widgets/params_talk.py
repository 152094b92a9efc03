"""The Skill tab's parameter dialogue: say the values in your own words, see them
collected, then Run or say what to change. The LLM work runs in a worker."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Button, Input, Static

from kosmos.config import Settings
from kosmos.engine.params_dialog import DialogReply, DialogState
from kosmos.errors import InputNeeded, KosmosError
from kosmos.events import Event, ParamsUpdate
from kosmos.prompts import Prompts
from kosmos.runs.params import run_dialogue
from kosmos.skills.model import Skill

INTRO = (
    "Or say the values in your own words: the LLM fills in the form and shows what it "
    "understood; then Run, or say what to change. Escape leaves the conversation."
)


def summary(skill: Skill, state: DialogState) -> str:
    """The values so far in the skill's order, and what is still needed or what comes next."""
    shown = [(p.name, state.values[p.name]) for p in skill.params if p.name in state.values]
    values = " · ".join(f"{k} = {v}" for k, v in shown) or "nothing yet"
    if state.complete:
        return f"{values}\nall there: Run (or enter) starts the skill, or say what to change"
    return f"{values}\nstill needed: {', '.join(state.missing)}"


def placeholder(skill: Skill) -> str:
    """What the talk box asks for before the conversation starts: this skill's params."""
    wanted = [p.name for p in skill.params if p.required] or [p.name for p in skill.params]
    return f"{', '.join(wanted)}: say them in your own words (enter sends)"


class TalkDialog:
    """The engine's ParamDialog over the widget: each turn waits for the operator there."""

    def __init__(self, talk: ParamsTalk) -> None:
        self.talk = talk

    async def turn(self, text: str, state: DialogState) -> DialogReply:
        return await self.talk.wait_turn(text, state)


class ParamsTalk(Vertical):
    """A conversation beside the params form, for a skill whose required params are missing."""

    BINDINGS = [Binding("escape", "leave", "Leave the conversation")]

    @dataclass
    class Filled(Message):
        """The LLM collected these values: the form shows them."""

        values: dict[str, str]

    @dataclass
    class Confirmed(Message):
        """The operator confirmed: run the skill with these params (the events go to its
        transcript)."""

        values: dict[str, str]
        events: list[Event] = field(default_factory=list)

    def __init__(
        self,
        skill: Skill,
        settings: Settings,
        prompts: Prompts,
        given: Callable[[], dict[str, str]] = dict,
    ) -> None:
        super().__init__(id="params-talk")
        self.skill = skill
        self.settings = settings
        self.prompts = prompts
        # What the form holds when the conversation starts; the SkillPanel sets it.
        self.given = given
        self.talking = False
        self._queued: str | None = None
        self._pending: asyncio.Future[DialogReply] | None = None

    def compose(self) -> ComposeResult:
        yield Static(INTRO, classes="hint", markup=False)
        yield Vertical(id="talk-log")
        yield Static("", id="talk-summary", markup=False)
        yield Input(placeholder=placeholder(self.skill), id="talk-input")
        with Horizontal(classes="talk-buttons"):
            yield Button("Talk", id="talk-start", compact=True)
            yield Button("Run", id="talk-run", variant="success", disabled=True, compact=True)

    # -- the conversation ----------------------------------------------------------------

    def start(self, first: str | None = None) -> None:
        """Begin the conversation (`first`: what the operator already typed)."""
        if self.talking:
            return
        self.talking = True
        self._queued = first
        self.query_one("#talk-start", Button).disabled = True
        self._note("asking the LLM…")
        self.run_worker(self._talk(), group="params-talk", exclusive=True, exit_on_error=False)

    async def _talk(self) -> None:
        events: list[Event] = []

        def emit(event: Event) -> None:
            events.append(event)
            if isinstance(event, ParamsUpdate) and event.kind == "update":
                self.post_message(self.Filled(dict(event.values)))

        said: str | None = None  # why it ended without values, said once Talk can be pressed
        try:
            values = await run_dialogue(
                self.skill,
                self.given(),
                self.settings,
                self.prompts,
                TalkDialog(self),
                emit=emit,
                on_fallback=lambda message: self._note(f"{message}: fill in the form"),
            )
        except InputNeeded:
            said = "conversation left; fill in the form, or Talk to start again"
            values = None
        except KosmosError as e:
            said = f"the LLM failed: {e}; Talk tries again"
            values = None
        finally:
            # Also when cancelled: another skill was chosen and this widget is going away.
            self.talking = False
            self._pending = None
        self.query_one("#talk-run", Button).disabled = True
        if values is None:
            self.query_one("#talk-start", Button).disabled = False
            if said is not None:
                self._note(said)
            return
        self._note("confirmed: starting the run")
        self.post_message(self.Confirmed(values, events))

    async def wait_turn(self, text: str, state: DialogState) -> DialogReply:
        """Show the LLM's words and the values so far; wait for what the operator types or
        presses."""
        if text:
            self._say("AI", text)
        for name, why in state.rejected.items():
            self._line(f"not taken: {name} = {why}", "talk-rejected")
        self.query_one("#talk-summary", Static).update(summary(self.skill, state))
        self.query_one("#talk-run", Button).disabled = not state.complete
        field = self.query_one("#talk-input", Input)
        field.placeholder = (
            "say what to change, or enter to Run" if state.complete else "your answer (enter sends)"
        )
        if self._queued:
            typed, self._queued = self._queued, None
            self._say("you", typed)
            return DialogReply(text=typed)
        self._pending = asyncio.get_running_loop().create_future()
        field.focus()
        try:
            return await self._pending
        finally:
            self._pending = None

    def _reply(self, reply: DialogReply) -> None:
        if self._pending is not None and not self._pending.done():
            self._pending.set_result(reply)

    # -- what the operator does ----------------------------------------------------------

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "talk-input":
            return
        event.stop()
        typed = event.value.strip()
        event.input.value = ""
        if not self.talking:
            self.start(typed or None)
            return
        if self._pending is None:
            return  # the LLM is still answering the last words
        if not typed and not self.query_one("#talk-run", Button).disabled:
            self._reply(DialogReply(confirmed=True))  # as in line mode: enter is Run
            return
        if typed:
            self._say("you", typed)
        self._reply(DialogReply(text=typed))

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "talk-start":
            self.start()
        elif event.button.id == "talk-run":
            self._reply(DialogReply(confirmed=True))

    def action_leave(self) -> None:
        self._reply(DialogReply(text=None))

    # -- the log -------------------------------------------------------------------------

    def _say(self, who: str, text: str) -> None:
        self._line(f"{who}: {text}", f"talk-{who.lower()}")

    def _line(self, text: str, kind: str) -> None:
        line = Static(text, classes=f"talk-line {kind}", markup=False)
        self.query_one("#talk-log", Vertical).mount(line)
        line.scroll_visible()

    def _note(self, text: str) -> None:
        self.query_one("#talk-summary", Static).update(text)
