"""The chat core's seams answered by the TUI: its texts go to the conversation, its skills run
in a run view there, on the TUI's host, with the TUI's approvals."""

from __future__ import annotations

from collections.abc import Callable

from textual.message_pump import MessagePump

from kosmos.chat.agent import Kind, SkillOutcome
from kosmos.skills.model import Skill
from kosmos.tui.operator import TuiOperator
from kosmos.tui.parts import TuiParts
from kosmos.tui.runs import RunController, RunSpec
from kosmos.tui.widgets.chat_conversation import ChatSaid, ChatShow
from kosmos.tui.widgets.run_view import RunView


class ConversationOutput:
    """The agent's `Output`: each text becomes a line of the conversation (via a message)."""

    def __init__(self, conversation: MessagePump) -> None:
        self.conversation = conversation

    def say(self, text: str, kind: Kind = "progress") -> None:
        self.conversation.post_message(ChatSaid(text, kind))


class TuiSkillRunner:
    """The agent's `SkillRunner`: a run view in the conversation, driven as a run tab is."""

    def __init__(self, parts: TuiParts, conversation: MessagePump, host: Callable[[], str]) -> None:
        self.parts = parts
        self.conversation = conversation
        self.host = host
        self.current: RunController | None = None
        self.views: list[RunView] = []

    @property
    def command_running(self) -> bool:
        return self.current is not None and self.current.command_running

    @property
    def waiting(self) -> bool:
        """The run waits for the operator (an approval, an answer, a retry)."""
        return self.current is not None and self.current.operator.waiting

    def stop_command(self) -> bool:
        return self.current is not None and self.current.stop_command()

    async def run_skill(self, skill: Skill, params: dict[str, str]) -> SkillOutcome:
        """Run the skill to its end; the operator approves its steps in the view."""
        config = self.parts.config
        host = self.host()
        view = RunView(f"{skill.name} @ {host}", id=f"chat-run-{len(self.views) + 1}")
        view.add_class("chat-run")
        redactor = self.parts.new_redactor()
        operator = TuiOperator(view, self.parts.prompter, redactor)
        controller = RunController(
            spec=RunSpec(skill, params, host),
            settings=config.settings,
            prompts=config.prompts,
            pool=self.parts.pool,
            view=view,
            operator=operator,
            redactor=redactor,
        )
        view.controller = controller
        view.operator = operator
        self.views.append(view)
        self.conversation.post_message(ChatShow(view))
        self.current = controller
        try:
            result = await controller.run()
        finally:
            self.current = None
        if result is None:
            return SkillOutcome("error", "the run ended before it started")
        path = controller.transcript_path
        return SkillOutcome(result.status, result.message, str(path) if path else None)
