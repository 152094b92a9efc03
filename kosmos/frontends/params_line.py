"""Line mode's side of the parameter dialogue (seed 003): prompts, then `[Y/n]` to confirm."""

from __future__ import annotations

from kosmos.engine.params_dialog import DialogReply, DialogState
from kosmos.frontends.console import Console, EndOfInput


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
