"""Line mode's side of the parameter dialogue (seed 003): prompts, then `[Y/n]` to confirm."""

from __future__ import annotations

from kosmos.config import Settings
from kosmos.engine.params_dialog import DialogReply, DialogStalled, DialogState, ParamCollector
from kosmos.events import Emit, Notice
from kosmos.frontends.console import Console, EndOfInput
from kosmos.llm.factory import make_provider
from kosmos.llm.provider import CapabilityRejected
from kosmos.prompts import Prompts
from kosmos.skills.model import Skill


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
            c.say(c.style("AI: ", "35") + text)
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


def dialogue_wanted(
    skill: Skill, given: dict[str, str], settings: Settings, *, non_interactive: bool
) -> bool:
    """seed 003: missing required params, a person at the terminal, a tool-calling LLM."""
    if non_interactive or not settings.capabilities()["tools"]:
        return False
    if any(skill.param(name) is None for name in given):
        return False  # resolve_params names the unknown param
    return any(p.required and not (given.get(p.name) or p.default) for p in skill.params)


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
    provider = make_provider(settings)
    dialog = LineParamDialog(console)
    collector = ParamCollector(skill, provider, prompts, dialog, emit=emit, given=given)
    try:
        return {**given, **await collector.collect()}
    except (CapabilityRejected, DialogStalled) as e:
        if isinstance(e, CapabilityRejected) and e.capability != "tools":
            raise
        notice = Notice(message=f"the LLM does not take tool calls; asking plainly ({e})")
        emit(notice)
        console.say(console.style(f"  ! {notice.message}", "33"), stream=console.err)
        return given
    finally:
        await provider.aclose()
