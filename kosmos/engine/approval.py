"""The approval gate: the policy decides first, then, only where it must, the operator.

Policies (issue: safety and recovery):

* `ask`: every command waits for the operator.
* `read-only`: commands the safety policy finds read-only run unasked, and so does a skill's
  own script, inside the kernel lock (engine/skill_script.py); the rest are asked for, and
  refused with the LLM told why when nobody can be asked (non-interactive).
* `auto` (`--yes`): commands run unasked.
* `locked`: commands run unasked inside the kernel lock (engine/locking.py); what it cannot
  hold (dangerous commands, reads through a local service's socket, sudo) needs a person.

A command that runs unasked because the policy, a replay or a standing approval let it carries
the kernel `Lock` (`Decision.lock`); one a person said yes to, or `auto`, runs without.

Whatever the policy, a dangerous command needs the operator to type the host's name: the
front end passes what was typed (`Approval.typed`) and the gate compares it, so an operator
that answers a plain "run" gets the command refused. A non-interactive run refuses it unless
`allow_dangerous` is set. An untagged reply's inferred command always needs a person. The
operator may answer `auto_read_only`, after which read-only commands run unasked for the
rest of the run.

Every decision names who took it (`by`) and whether the command runs `asked` (a person said
yes to exactly these bytes) or unasked.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal

from kosmos.engine import locking
from kosmos.engine.operator import Approval, CommandProposal, Operator
from kosmos.engine.skill_script import SkillFiles
from kosmos.events import CommandDecision, DecidedBy
from kosmos.hosts.lock import HostLock
from kosmos.hosts.runner import Lock
from kosmos.prompts import Prompts
from kosmos.safety import Dialect, Verdict, assess

Policy = Literal["ask", "read-only", "auto", "locked"]
ProposalKind = Literal["command", "file", "memory"]

# An operator who keeps editing a command into something else is asked again about the
# edited one; past this many rounds the command is skipped.
MAX_EDIT_ROUNDS = 5


def unasked_line(event: CommandDecision) -> str:
    """Why a command ran (or was skipped) with no person's key on its step, as the front ends
    show it under the command; "" where a person decided it there, or it was refused."""
    if event.decision == "refused":
        return ""
    if event.by == "policy":
        return f"runs without asking ({event.reason})" if event.reason else "runs without asking"
    if event.by == "replay":
        return f"{event.decision} (as recorded)"
    if event.by == "canary":
        return f"{event.decision} (as on the canary)"
    if event.by == "standing" and event.decision == "run":
        return "runs without asking (A: run on every host that proposes it)"
    return ""


@dataclass(frozen=True)
class Decision:
    """What becomes of one proposed command.

    `reason` is the safety policy's one-line verdict; for `refused` it is the text the LLM
    is told instead of an output. `asked`: a person said yes to exactly this command in this
    run; False for everything that runs unasked (the policy, a replay, a standing approval).
    """

    action: Literal["run", "skip", "edit", "refused"]
    command: str
    by: DecidedBy
    risk: Verdict
    reason: str
    asked: bool = False
    # The kernel lock it runs in: set when it runs without a person's yes.
    lock: Lock | None = None
    # A person said it for every host of the fleet ("all hosts"), not only this one.
    all_hosts: bool = False

    def event(self, step: int, proposed: str) -> CommandDecision:
        return CommandDecision(
            step=step,
            decision=self.action,
            command=self.command,
            proposed=proposed,
            by=self.by,
            risk=self.risk,
            reason=self.reason,
            asked=self.asked,
            all_hosts=self.all_hosts,
        )


class ApprovalGate:
    """Decides, for each command the LLM proposes, whether it runs."""

    def __init__(
        self,
        operator: Operator,
        prompts: Prompts,
        *,
        host: str,
        policy: Policy = "ask",
        non_interactive: bool = False,
        allow_dangerous: bool = False,
        shell: Callable[[], Dialect | None] = lambda: None,
        host_lock: Callable[[], HostLock | None] = lambda: None,
    ) -> None:
        self.operator = operator
        self.prompts = prompts
        self.host = host
        self.policy = policy
        self.non_interactive = non_interactive
        self.allow_dangerous = allow_dangerous
        # The dialect of the shell the host runs commands under (None: not known yet, and
        # then a command must pass as bash and as sh).
        self.shell = shell
        # The host's kernel lock: its config and what the host offers.
        self.host_lock = host_lock
        # Set by the operator's `a` answer (line mode) or the TUI toggle.
        self.auto_read_only = False
        # The skill's files on the host, once the run has put them there (engine/context.py).
        self.skill_files: SkillFiles | None = None

    async def decide(
        self, step: int, command: str, *, inferred: bool = False, rerun: bool = False
    ) -> Decision:
        """The decision on `command`. `rerun`: it was started before and its result was lost."""
        verdict = assess(command, self.shell())
        return await self.judge(
            step,
            command,
            verdict.verdict,
            verdict.reason,
            inferred=inferred,
            rerun=rerun,
            service=verdict.service,
            secret=verdict.secret,
        )

    async def judge(
        self,
        step: int,
        command: str,
        risk: Verdict,
        reason: str,
        *,
        inferred: bool = False,
        rerun: bool = False,
        kind: ProposalKind = "command",
        service: bool = False,
        secret: bool = False,
    ) -> Decision:
        """The policy's decision on something already judged `risk`, asking where it must.

        `kind` other than `command`: a [GET-FILE] or a memory write, shown as `command`; the
        operator may allow or skip it, never edit it. `service`: a read through a local
        service's socket (the kernel lock then leaves unix and netlink sockets open).
        `secret`: it reads secret material, which no lock keeps from the LLM: asked for.
        """
        p = self.prompts
        if risk == "dangerous" and self.non_interactive and not self.allow_dangerous:
            told = p["SKILL_REFUSED_DANGEROUS"].format(reason=reason)
            return Decision("refused", command, "policy", risk, told)
        if rerun and self.non_interactive:
            return Decision("refused", command, "policy", risk, p["SKILL_REFUSED_UNKNOWN_RESULT"])
        needs_person = inferred or rerun or (risk == "dangerous" and not self.non_interactive)
        if not needs_person:
            if self.policy == "auto":
                return Decision("run", command, "policy", risk, reason)
            reads = self.policy in ("read-only", "locked") or self.auto_read_only
            locked = self.policy == "locked" and kind == "command" and not secret
            if kind == "command" and (locked or (risk == "read_only" and reads)):
                held = self._held(command, risk, service, locked=locked)
                if held.why is None:
                    return Decision("run", command, "policy", risk, reason, lock=held.lock)
                if self.non_interactive:
                    told = p["SKILL_REFUSED_LOCK"].format(reason=held.why)
                    return Decision("refused", command, "policy", risk, told)
            elif risk == "read_only" and reads:
                return Decision("run", command, "policy", risk, reason)
            elif not secret and (script := self._skill_script(command, risk, kind)) is not None:
                return script
            elif self.policy in ("read-only", "locked") and self.non_interactive:
                key = (
                    "SKILL_REFUSED_READ_ONLY_MEMORY"
                    if kind == "memory"
                    else "SKILL_REFUSED_SECRET"
                    if secret
                    else "SKILL_REFUSED_READ_ONLY"
                )
                told = p[key].format(reason=reason)
                return Decision("refused", command, "policy", risk, told)
        return await self._ask(step, command, risk, reason, inferred, kind, service)

    def _skill_script(self, command: str, risk: Verdict, kind: ProposalKind) -> Decision | None:
        """Under `read-only`, a line that runs one of the skill's own files runs unasked inside
        the kernel lock, as under `locked`: what the file does is unknown, so the kernel decides
        what it may do. None for any other line, or where the lock cannot hold it (then it is
        asked for, or refused, as any write)."""
        files = self.skill_files
        if self.policy != "read-only" or kind != "command" or risk != "write" or files is None:
            return None
        name = files.script(command)
        if name is None:
            return None
        held = self._held(command, risk, False, locked=True)
        if held.why is not None or held.lock is None:
            return None
        why = f"the skill's own script {name}, inside the kernel lock"
        return Decision("run", command, "policy", risk, why, lock=held.lock)

    def _held(
        self, command: str, risk: Verdict, service: bool, *, locked: bool, approved: bool = False
    ) -> locking.Held:
        """The kernel lock `command` runs in unasked, or why it needs a person."""
        return locking.unasked(
            self.host_lock(),
            command,
            risk,
            service=service,
            locked_policy=locked,
            approved=approved,
        )

    async def decide_as(self, step: int, shown: str, judged: str, kind: ProposalKind) -> Decision:
        """The decision on `shown` (a [GET-FILE]), judged as the command `judged` would be."""
        verdict = assess(judged, self.shell())
        return await self.judge(step, shown, verdict.verdict, verdict.reason, kind=kind)

    async def _ask(
        self,
        step: int,
        command: str,
        risk: Verdict,
        reason: str,
        inferred: bool,
        kind: ProposalKind = "command",
        service: bool = False,
    ) -> Decision:
        proposed = command
        for _ in range(MAX_EDIT_ROUNDS):
            approval: Approval = await self.operator.approve(
                CommandProposal(
                    step=step,
                    command=command,
                    host=self.host,
                    inferred=inferred,
                    risk=risk,
                    reason=reason,
                    kind=kind,
                )
            )
            if approval.auto_read_only:
                self.auto_read_only = True
            by, asked = approval.by, approval.by == "operator"
            if approval.action == "skip" or (kind != "command" and approval.action == "edit"):
                # A file read or a memory write has nothing to edit: an edit does not allow it.
                return Decision("skip", command, by, risk, reason)
            if risk == "dangerous" and not self._confirmed(approval):
                return self._unconfirmed(command, risk, reason, approval.typed)
            if approval.action == "run" or not approval.command or approval.command == command:
                action: Literal["run", "edit"] = "run" if command == proposed else "edit"
                decided = self._answered(action, command, by, risk, reason, kind, service, asked)
                return _for_all(decided, approval)
            # The operator typed a different command: judge that one, and ask again only
            # when it needs more than the approval just given (it became dangerous).
            command = approval.command
            edited = assess(command, self.shell())
            if edited.verdict == "dangerous" and risk != "dangerous":
                risk, reason, inferred = edited.verdict, edited.reason, False
                continue
            decided = self._answered(
                "edit", command, by, edited.verdict, edited.reason, kind, edited.service, asked
            )
            return _for_all(decided, approval)
        return Decision("skip", command, "operator", risk, reason)

    def _confirmed(self, approval: Approval) -> bool:
        """The host's name, typed: what a dangerous command takes to run."""
        return (approval.typed or "").strip() == self.host

    def _unconfirmed(self, command: str, risk: Verdict, reason: str, typed: str | None) -> Decision:
        """A dangerous command allowed without the host's name typed: the gate refuses it."""
        shown = f"{typed.strip()!r} was typed" if typed and typed.strip() else "nothing was typed"
        told = self.prompts["SKILL_REFUSED_UNCONFIRMED"].format(
            reason=reason, host=self.host, typed=shown
        )
        return Decision("refused", command, "policy", risk, told)

    def _answered(
        self,
        action: Literal["run", "edit"],
        command: str,
        by: DecidedBy,
        risk: Verdict,
        reason: str,
        kind: ProposalKind,
        service: bool,
        asked: bool,
    ) -> Decision:
        """An approval's decision: a person's yes runs without the lock; a replay's or a
        standing approval's (nobody said yes to it in this run) runs a read inside it, or not
        at all where the host requires a lock it cannot have."""
        if by == "operator" or kind != "command":
            return Decision(action, command, by, risk, reason, asked)
        held = self._held(command, risk, service, locked=self.policy == "locked", approved=True)
        if held.why is not None:
            told = self.prompts["SKILL_REFUSED_LOCK"].format(reason=held.why)
            return Decision("refused", command, "policy", risk, told)
        return Decision(action, command, by, risk, reason, asked, lock=held.lock)


def _for_all(decision: Decision, approval: Approval) -> Decision:
    """A decision that runs, marked as said for every host where the approval was."""
    if approval.all_hosts and decision.action in ("run", "edit"):
        return replace(decision, all_hosts=True)
    return decision
