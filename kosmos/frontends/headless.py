"""The non-interactive operator: never reads the terminal; --yes and --answer decide."""

from __future__ import annotations

from collections.abc import Sequence

from kosmos.engine.operator import Approval, CommandProposal, Question
from kosmos.errors import InputNeeded, KosmosError


class HeadlessOperator:
    """Approves nothing (the policy, `auto` under --yes, decides what runs unasked); answers
    [ASK]s from --answer values, in order."""

    def __init__(self, *, answers: Sequence[str] = ()) -> None:
        self.answers = list(answers)

    async def approve(self, proposal: CommandProposal) -> Approval:
        if proposal.inferred:
            # The engine sends a correction instead in non-interactive mode; never run these.
            return Approval.skip()
        raise InputNeeded(
            f"the skill wants to {proposal.what} and --non-interactive has no one to "
            "approve it; pass --yes to run commands without asking"
        )

    async def answer(self, question: Question) -> str | None:
        if self.answers:
            return self.answers.pop(0)
        if question.required:
            raise InputNeeded(
                f"the skill asks {question.text!r} and no --answer is left; "
                "pass one more --answer TEXT"
            )
        return None

    async def retry(self, error: KosmosError) -> bool:
        return False

    async def ask_secret(self, prompt: str) -> str | None:
        return None
