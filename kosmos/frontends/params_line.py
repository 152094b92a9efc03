"""Line mode's side of the parameter dialogue: prompts, then `[Y/n]` to confirm."""

from __future__ import annotations

import sys
from collections.abc import Callable

from kosmos.config import Settings
from kosmos.engine.params_dialog import DialogReply, DialogState
from kosmos.events import Emit
from kosmos.frontends.console import Console, EndOfInput, inline_markdown
from kosmos.prompts import Prompts
from kosmos.runs.params import dialogue_wanted, run_dialogue
from kosmos.skills.model import Param, Skill
from kosmos.skills.params import validate_value

__all__ = ["LineParamDialog", "ask_param_in_terminal", "collect_in_dialogue", "dialogue_wanted"]


class LineParamDialog:
    """Shows the LLM's words; once all params are in, Enter or `y` is the Confirm button and
    anything else typed goes to the LLM (a typed "yes" too: the LLM then confirms)."""

    def __init__(self, console: Console) -> None:
        self.c = console

    async def _ask(self, prompt: str) -> str | None:
        try:
            return await self.c.ask(prompt)
        except EndOfInput:
            return None

    async def turn(self, text: str, state: DialogState) -> DialogReply:
        c = self.c
        if text:
            c.say(c.style("AI: ", "35") + inline_markdown(text, c))
        for name, why in state.rejected.items():
            c.say(c.style(f"  not taken: {name} = {why}", "33"))
        if not state.complete:
            return DialogReply(text=await self._ask("> "))
        values = ", ".join(f"{k}={v}" for k, v in state.values.items())
        c.say(c.style(f"  parameters: {values}", "2"))
        reply = await self._ask(c.style("Run with these parameters? [Y/n] ", "1"))
        if reply is None:
            return DialogReply(text=None)
        if reply.strip().lower() in ("", "y"):
            return DialogReply(confirmed=True)
        if reply.strip().lower() in ("n", "no"):
            return DialogReply(text=await self._ask("What should change? "))
        return DialogReply(text=reply)


async def collect_in_dialogue(
    skill: Skill,
    given: dict[str, str],
    settings: Settings,
    prompts: Prompts,
    console: Console,
    *,
    emit: Emit,
) -> dict[str, str]:
    """The params collected by dialogue; with an LLM that does not call tools, `given` as it
    was, so that the plain prompts ask for the rest."""

    def fallback(message: str) -> None:
        console.say(console.style(f"  ! {message}", "33"), stream=console.err)

    dialog = LineParamDialog(console)
    values = await run_dialogue(
        skill, given, settings, prompts, dialog, emit=emit, on_fallback=fallback
    )
    return given if values is None else values


def ask_param_in_terminal(console: Console) -> Callable[[Param], str | None]:
    """Line mode asks for a missing required parameter, re-asking until its rules are met."""

    def ask(param: Param) -> str | None:
        about = f" ({param.description})" if param.description else ""
        choices = f" [{'/'.join(param.choices)}]" if param.choices else ""
        while True:
            console.err.write(f"{param.name}{about}{choices}: ")
            console.err.flush()
            line = sys.stdin.readline()
            if not line:
                return None
            value = line.strip()
            problem = validate_value(param, value) if value else "a value is required"
            if problem is None:
                return value
            console.say(f"  {problem}", stream=console.err)

    return ask
