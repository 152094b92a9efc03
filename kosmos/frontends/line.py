"""Line mode: a person at a terminal approves commands and answers questions."""

from __future__ import annotations

from collections.abc import Sequence

from kosmos.engine.guard import visible
from kosmos.engine.operator import Approval, CommandProposal, Question
from kosmos.errors import InputNeeded, KosmosError
from kosmos.frontends.console import Console, EndOfInput


class LineOperator:
    """Asks `Run? [y/N/e/a]` for the commands the policy leaves to a person.

    `--yes` is the `auto` policy, applied by the engine: this operator is asked only about what
    the policy leaves to a person. A dangerous command needs the host's name typed.
    """

    def __init__(
        self, console: Console, *, answers: Sequence[str] = (), show_directives: bool = False
    ) -> None:
        self.c = console
        self.answers = list(answers)
        # With --json the directives go to stdout as JSON: each question shows its own.
        self.show_directives = show_directives

    async def _ask(self, prompt: str, *, prefill: str | None = None) -> str:
        try:
            return await self.c.ask(prompt, prefill=prefill)
        except EndOfInput as e:
            raise InputNeeded(
                "standard input closed while kosmos waited for an answer; "
                "use --non-interactive with --yes/--answer to run unattended"
            ) from e

    async def approve(self, proposal: CommandProposal) -> Approval:
        if self.show_directives:
            c = self.c
            c.say(c.style(f"[{proposal.step}] $ ", "36") + c.style(visible(proposal.command), "1"))
        if proposal.risk == "dangerous":
            return await self._confirm_dangerous(proposal)
        if proposal.kind != "command":
            return await self._allow(proposal)
        if proposal.reason and proposal.risk == "write":
            self.c.say(self.c.style(f"  may change the host: {visible(proposal.reason)}", "2"))
        while True:
            reply = (await self._ask(self.c.style("Run? [y/N/e/a] ", "1"))).strip().lower()
            if reply in ("y", "yes"):
                return Approval.run()
            if reply in ("a", "all"):
                self.c.say(self.c.style("  read-only commands now run without asking", "2"))
                return Approval("run", auto_read_only=True)
            if reply in ("", "n", "no", "s", "skip"):
                return Approval.skip()
            if reply in ("e", "edit"):
                edited = (await self._ask("Edit: ", prefill=proposal.command)).strip()
                if not edited or edited == proposal.command:
                    return Approval.run() if edited else Approval.skip()
                return Approval.edit(edited)
            self.c.say(
                "  answer y (run), n (skip), e (edit) or a (run, and run read-only commands "
                "without asking from now on)"
            )

    async def _allow(self, proposal: CommandProposal) -> Approval:
        """A file read or a memory write: allowed or not; there is nothing to edit."""
        reading = proposal.risk == "read_only"
        if proposal.reason and not reading:
            self.c.say(self.c.style(f"  {visible(proposal.reason)}", "2"))
        keys = "y/N/a" if reading else "y/N"
        while True:
            reply = (await self._ask(self.c.style(f"Allow? [{keys}] ", "1"))).strip().lower()
            if reply in ("y", "yes"):
                return Approval.run()
            if reading and reply in ("a", "all"):
                self.c.say(self.c.style("  reads now happen without asking", "2"))
                return Approval("run", auto_read_only=True)
            if reply in ("", "n", "no", "s", "skip"):
                return Approval.skip()
            more = ", or a (allow, and allow reads without asking from now on)" if reading else ""
            self.c.say(f"  answer y (allow) or n (do not){more}")

    async def _confirm_dangerous(self, proposal: CommandProposal) -> Approval:
        """Even under --yes: the operator types the host's name, or the command is skipped.

        What was typed goes to the gate, which runs the command only if it is the host's name
        (and otherwise refuses it, saying why).
        """
        c = self.c
        c.say(c.style(f"  DANGEROUS: {visible(proposal.reason)}", "1;31"))
        typed = await self._ask(
            c.style(f"Type the host name ({proposal.host}) to run it, Enter to skip: ", "1")
        )
        return Approval.run(typed=typed.strip()) if typed.strip() else Approval.skip()

    async def answer(self, question: Question) -> str | None:
        if self.show_directives:
            tag = "ASK" if question.required else "ASK:optional"
            self.c.say(self.c.style(f"[{question.step}] {tag} ", "35") + visible(question.text))
        if self.answers:
            value = self.answers.pop(0)
            self.c.say(f"> {visible(value)}")
            return value
        prompt = "> " if question.required else self.c.style("(Enter to skip) ", "2") + "> "
        while True:
            value = (await self._ask(prompt)).strip()
            if value or not question.required:
                return value or None
            self.c.say("  an answer is required")

    async def retry(self, error: KosmosError) -> bool:
        self.c.error(f"kosmos: {error}")
        try:
            reply = (await self.c.ask("Retry? [Y/n] ")).strip().lower()
        except EndOfInput:
            self.c.say("", stream=self.c.err)
            return False
        return reply in ("", "y", "yes")

    async def ask_secret(self, prompt: str) -> str | None:
        try:
            return await self.c.ask_secret(prompt)
        except EndOfInput:
            return None


class LinePrompter:
    """Asks at the terminal while connecting: trust a new host key (y/N), type a passphrase."""

    def __init__(self, console: Console) -> None:
        self.c = console

    async def confirm_host_key(self, host: str, key_type: str, fingerprint: str) -> bool:
        err = self.c.err
        host = visible(host, one_line=True)
        self.c.say(f"The authenticity of host '{host}' can't be established.", stream=err)
        key_type = visible(key_type, one_line=True)
        self.c.say(f"{key_type} key fingerprint is {fingerprint}.", stream=err)
        try:
            reply = await self.c.ask("Trust this key and add it to known_hosts? [y/N] ")
        except EndOfInput:
            return False
        return reply.strip().lower() in ("y", "yes")

    async def ask_secret(self, prompt: str) -> str | None:
        try:
            return await self.c.ask_secret(prompt)
        except EndOfInput:
            return None
