"""The skill session: idle -> waiting_cmd / waiting_user -> done (docs/protocol.md)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from kosmos.engine import context, history
from kosmos.engine.actions import Actions
from kosmos.engine.approval import ApprovalGate, Policy
from kosmos.engine.commands import CommandStep
from kosmos.engine.envelope import app_command
from kosmos.engine.fault import preview, unexpected_line
from kosmos.engine.guard import outgoing, redact_message
from kosmos.engine.operator import Operator, Question
from kosmos.engine.output import LLM_MAX_BYTES, LLM_MAX_LINES
from kosmos.engine.parser import ACTION_TAGS, Parsed
from kosmos.engine.protocols import ProtocolSwitched, StepProtocol, Turn, make_protocol
from kosmos.engine.shortfall import Shortfall
from kosmos.engine.sudo import SudoHelper
from kosmos.errors import (
    EXIT_DONE,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    InputNeeded,
    KosmosError,
    LLMError,
    RunFailed,
    RunStatus,
    StepLimitReached,
)
from kosmos.events import (
    Answer,
    Directive,
    Emit,
    Event,
    FormatError,
    LLMReply,
    LLMRequest,
    LLMRetry,
    Message,
    Notice,
    RunFinished,
    RunStarted,
)
from kosmos.hosts.lock import host_lock
from kosmos.hosts.runner import Runner
from kosmos.llm.provider import Provider, Reply
from kosmos.memory import DEFAULT_FOLDER, MemoryStore
from kosmos.prompts import Prompts, SystemParts
from kosmos.safety import Redactor
from kosmos.skills.model import Skill

if TYPE_CHECKING:
    # Only a resumed run has one (kosmos.runs.replay reads it); a fresh run never loads it.
    from kosmos.engine.resume import Resumed

__all__ = ["LLM_MAX_BYTES", "LLM_MAX_LINES", "Session", "SessionOptions"]

State = Literal["idle", "waiting_cmd", "waiting_user", "done"]


@dataclass(frozen=True)
class SessionOptions:
    """How one run behaves; the front end resolves these from flags, config and the skill."""

    max_steps: int = 100
    command_timeout: float = 60.0
    knowledge_timeout: float = 5.0
    history_mode: str = "full"
    history_max: int | None = None
    prompt: str | None = None
    # Headless: a reply without a tag gets a correction instead of an approval request.
    non_interactive: bool = False
    max_format_errors: int = 3
    # The step protocol: tags, json, tools or auto.
    protocol: str = "tags"
    # Approval (engine/approval.py): ask | read-only | auto; dangerous commands headless.
    policy: Policy = "ask"
    allow_dangerous: bool = False
    # --memory: the memory prompt (Target OS block, the memory directives, the index).
    memory: bool = False
    # Where memory notes live; kosmos-panel's ./.kosmos-panel/memory when not given.
    memory_dir: Path | None = None


class Session:
    """Drives one skill on one host until [DONE], an error, the step limit or an abort."""

    def __init__(
        self,
        skill: Skill,
        *,
        params: Mapping[str, str],
        runner: Runner,
        provider: Provider,
        operator: Operator,
        prompts: Prompts,
        emit: Emit,
        options: SessionOptions | None = None,
        run_id: str | None = None,
        transcript: str | None = None,
        protocol: StepProtocol | None = None,
        redactor: Redactor | None = None,
        synced: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.skill = skill
        self.params = dict(params)
        self.runner = runner
        self.provider = provider
        self.operator = operator
        self.prompts = prompts
        self._emit = emit
        self.options = options or SessionOptions()
        self.run_id = run_id or uuid.uuid4().hex
        self.transcript = transcript
        self.messages: list[Message] = []
        self.step = 0  # the step the next message to the LLM is for ([Step N of M])
        self.reached = 0  # the last step the run got to: what RunFinished.steps reports
        self.state: State = "idle"
        self.result: RunFinished | None = None
        self._task: asyncio.Task[RunFinished] | None = None
        self._stopped: KosmosError | None = None
        self._sent_upto = 0
        self._sizes = history.Sizes()
        self._started = 0.0
        # What the system prompt is built from; `_start` fills it in.
        self._parts = SystemParts(skill.name, skill.body)
        # The host's `uname -s` and the OS it names; learnt once, when the run starts.
        self._kernel: str | None = None
        self.os_name: str | None = None
        self._turn = Turn(Reply(), None)  # the reply being acted on
        self.shortfall = Shortfall(
            policy=self.options.policy,
            non_interactive=self.options.non_interactive,
            scripts=lambda: self.gate.skill_files,
        )
        self.protocol = protocol or make_protocol(
            self.options.protocol, provider, prompts, emit=self.emit, memory=self.options.memory
        )
        # Everything leaving the engine (events, messages for the LLM) passes through it.
        self.redactor = redactor or Redactor()
        self.gate = ApprovalGate(
            operator,
            prompts,
            host=runner.name,
            policy=self.options.policy,
            non_interactive=self.options.non_interactive,
            allow_dangerous=self.options.allow_dangerous,
            shell=lambda: getattr(runner, "dialect", None),
            host_lock=lambda: host_lock(runner),
        )
        self.sudo = SudoHelper(
            runner,
            operator,
            self.redactor,
            prompts,
            non_interactive=self.options.non_interactive,
        )
        self.commands = CommandStep(
            runner=runner,
            gate=lambda: self.gate,
            sudo=self.sudo,
            operator=operator,
            redactor=self.redactor,
            prompts=prompts,
            emit=self.emit,
            command_timeout=self.options.command_timeout,
            synced=synced,
        )
        self.memory = MemoryStore(self.options.memory_dir or DEFAULT_FOLDER)
        self.actions = Actions(
            runner=runner,
            gate=lambda: self.gate,
            operator=operator,
            memory=self.memory,
            redactor=self.redactor,
            prompts=prompts,
            emit=self.emit,
            read_timeout=self.options.command_timeout,
        )
        self._pending: Resumed | None = None
        self.replay_of: str | None = None

    # -- what front ends call ------------------------------------------------------------

    def stop_command(self) -> bool:
        """Stop the command that is running now (its whole process tree); False if none is."""
        stop = self.commands.stop
        if stop is None or stop.is_set():
            return False
        stop.set()
        return True

    def stop(self, error: KosmosError) -> None:
        """End the run now with `error` (its output or transcript cannot be written)."""
        if self._stopped is None and self._task is not None and self.state != "done":
            self._stopped = error
            self._task.cancel()

    @property
    def command_running(self) -> bool:
        stop = self.commands.stop
        return stop is not None and not stop.is_set()

    async def run(self, resume: Resumed | None = None) -> RunFinished:
        """Run the skill to its end and return the final result (also emitted as an event).

        `resume`: continue the conversation a transcript recorded instead of starting anew.
        """
        self._started = time.monotonic()
        self._task = asyncio.current_task()
        learnt = await context.learn(
            self.runner,
            fresh=resume is None,
            timeout=self.options.knowledge_timeout,
            redactor=self.redactor,
            locking=self.options.policy in ("read-only", "locked"),
        )
        self._kernel, self.os_name = learnt.kernel, learnt.os_name
        self.emit(
            RunStarted(
                run_id=self.run_id,
                skill=self.skill.name,
                skill_path=self.skill.path,
                params=self.params,
                prompt=self.options.prompt,
                model=self.provider.model,
                base_url=self.provider.base_url,
                max_steps=self.options.max_steps,
                history_mode=self.options.history_mode,
                protocol=self.protocol.name,
                transcript=self.transcript,
                policy=self.options.policy,
                resumed_from=resume.source if resume else None,
                replay_of=self.replay_of,
                os=self.os_name,
                memory=self.options.memory,
                lock=learnt.lock.describe() if learnt.lock else None,
                memory_dir=str(self.memory.folder) if self.options.memory else None,
                skill_sha256=self.skill.sha256 or None,
            )
        )
        for notice in context.lock_notices(self.runner, learnt.lock, self.options.policy):
            self.emit(notice)
        try:
            if learnt.failed is not None:
                raise learnt.failed
            body, self.gate.skill_files = await context.skill_body(
                self.skill,
                self.runner,
                self.prompts,
                timeout=self.options.command_timeout,
                emit=self.emit,
            )
            self._parts = SystemParts(self.skill.name, body, target_os=self.os_name)
            if resume is None:
                await self._start(learnt)
            else:
                self.shortfall.seed(resume.earlier)
                self._restore(resume)
            return await self._loop()
        except KosmosError as e:
            return self._finish(e.status, str(e), e.exit_code)
        except asyncio.CancelledError:
            if (why := self._stopped) is not None and self._task and self._task.uncancel() == 0:
                return self._finish(why.status, str(why), why.exit_code)
            self._finish("aborted", "interrupted by the operator", EXIT_INTERRUPTED)
            raise
        except Exception as e:  # whatever the fault, the run ends with its result
            line = unexpected_line(
                e,
                step=self.reached,
                starting=self.step == 0,
                state=self.state,
                transcript=self.transcript,
            )
            return self._finish("error", line, EXIT_FAILED)

    # -- the loop ------------------------------------------------------------------------

    def emit(self, event: Event) -> None:
        event = outgoing(event, self.runner.name, self.redactor)
        self.shortfall.observe(event)
        self._emit(event)

    def _keep(self, *messages: Message) -> None:
        """Add to the history, redacted: what the LLM is sent never holds a known secret."""
        self.messages.extend(redact_message(m, self.redactor) for m in messages)

    def _restore(self, resume: Resumed) -> None:
        self.messages = list(resume.messages)
        self._sent_upto = len(self.messages) if resume.same_transcript else 0
        self.step = resume.step
        if resume.result is not None and resume.reply is not None:
            # The last step finished but its result never reached the LLM: add it now.
            turn = self.protocol.parse(resume.reply)
            self._keep(self.protocol.assistant_message(turn, resume.command))
            self._keep(self.protocol.result_message(turn, resume.result))
            self.step += 1
        else:
            self._pending = resume
        self.emit(Notice(message=resume.describe()))

    async def _start(self, learnt: context.Learnt) -> None:
        for warning in self.skill.warnings:
            self.emit(Notice(message=f"skill file: {warning}"))
        for event in learnt.events:
            self.emit(event)
        found = learnt.knowledge
        index = None
        if self.options.memory:
            index = await context.memory_index(self.memory, self.prompts, self.redactor, self.emit)
        self._parts = replace(self._parts, knowledge=found, memory_index=index)
        self.step = 1
        first = self.prompts.initial(
            self.skill.name, self.params, self.options.prompt, self.step, self.options.max_steps
        )
        self.messages = []
        self._keep(self._system(), Message(role="user", content=first))

    async def _loop(self) -> RunFinished:
        format_errors = 0
        while True:
            self.state = "idle"
            self.reached = self.step
            pending, self._pending = self._pending, None
            if pending is not None and pending.reply is not None:
                reply = pending.reply  # resumed: act on the recorded reply first
            else:
                reply = await self._complete()
            rerun = pending is not None and pending.rerun
            step = self.step
            turn = self.protocol.parse(reply)
            parsed = turn.parsed
            if turn.problem and parsed is not None:
                self.emit(Notice(message=f"step {step}: {turn.problem}"))
            if parsed is None or parsed.inferred:
                format_errors += 1
                self.emit(FormatError(step=step, reply=reply.text, count=format_errors))
                if format_errors >= self.options.max_format_errors:
                    raise RunFailed(
                        f"the LLM answered {format_errors} times in a row without one of the tags "
                        f"[CMD], [ASK], [ASK:optional], [MESSAGE], [DONE]; last reply: "
                        f"{preview(reply.text)!r}; try a larger model or a lower temperature"
                    )
                if parsed is None or self.options.non_interactive:
                    self._next_step()
                    self._keep(*self.protocol.correction(turn, self.step, self.options.max_steps))
                    continue
            else:
                format_errors = 0
            if parsed.action is not None:
                parsed = replace(parsed, text=await self._app_command(parsed))
                turn = replace(turn, parsed=parsed)
            self.emit(
                Directive(
                    step=step,
                    kind=parsed.kind,
                    text=parsed.text,
                    required=parsed.required,
                    inferred=parsed.inferred,
                    said=turn.said,
                    action=parsed.action,
                    content=parsed.content,
                )
            )
            self._turn = turn
            self._keep(self.protocol.assistant_message(turn))
            if parsed.kind == "done":
                if (unmet := self.shortfall.ending()) is not None:
                    raise unmet
                self.state = "done"
                return self._finish("done", parsed.text, EXIT_DONE)
            self._next_step(parsed)
            if parsed.kind == "cmd":
                self.state = "waiting_cmd"
                content = await self._command(parsed, step, rerun=rerun)
            elif parsed.kind == "ask":
                self.state = "waiting_user"
                content = await self._ask(parsed, step)
            elif parsed.kind in ACTION_TAGS:
                result = await self.actions.act(parsed, step)
                content = self.prompts.action_result(result, self.step, self.options.max_steps)
            else:
                content = self.prompts.continue_after_message(self.step, self.options.max_steps)
            self._keep(self.protocol.result_message(turn, content))

    def _system(self) -> Message:
        text = self.protocol.system_prompt(self._parts)
        return Message(role="system", content=self.redactor(text))

    async def _app_command(self, parsed: Parsed) -> str:
        """The OS command an envelope action becomes on this host."""
        return app_command(parsed.action or "", parsed.args, self._kernel or "Linux")

    def _next_step(self, pending: Parsed | None = None) -> None:
        if self.step + 1 > self.options.max_steps:
            # The last directive is on screen; say that it was not acted on.
            left = ""
            if pending is not None and pending.kind == "cmd":
                left = f"; its last command was not run ({preview(pending.text)})"
            elif pending is not None and pending.kind == "ask":
                left = "; its last question was not asked"
            elif pending is not None and pending.kind in ACTION_TAGS:
                left = f"; its last {ACTION_TAGS[pending.kind]} was not carried out"
            raise StepLimitReached(
                f"reached the step limit ({self.options.max_steps} steps) before the skill "
                f"finished{left}; raise it with --max-steps"
            )
        self.step += 1

    async def _complete(self) -> Reply:
        step = self.step
        sent = history.view(self.messages, self.options.history_mode, self.options.history_max)
        new = self.messages[self._sent_upto :]
        self._sent_upto = len(self.messages)
        size = self._sizes.of(sent)
        self.emit(LLMRequest(step=step, new_messages=new, sent_messages=len(sent), sent_bytes=size))

        def on_retry(attempt: int, reason: str, delay: float) -> None:
            self.emit(LLMRetry(step=step, attempt=attempt, reason=reason, delay_s=delay))

        while True:
            started = time.monotonic()
            try:
                reply = await self.protocol.complete(sent, step=step, on_retry=on_retry)
                break
            except ProtocolSwitched:
                # auto fell back to tags: the system prompt changes with the protocol.
                self.messages[0] = self._system()
                sent = history.view(
                    self.messages, self.options.history_mode, self.options.history_max
                )
                continue
            except LLMError as e:
                if not await self.operator.retry(e):
                    raise
                self.emit(Notice(message=f"retrying the LLM request after: {e}"))
        self.emit(
            LLMReply(
                step=step,
                content=reply.text,
                duration_s=time.monotonic() - started,
                finish_reason=reply.finish_reason,
                usage=reply.usage,
                tool_calls=reply.tool_calls,
            )
        )
        return reply

    async def _command(self, parsed: Parsed, step: int, *, rerun: bool = False) -> str:
        def edited(command: str) -> None:
            # The LLM sees the command that really ran as its own proposal.
            self.messages.pop()
            self._keep(self.protocol.assistant_message(self._turn, command))

        outcome = await self.commands.run(
            parsed.text, step, inferred=parsed.inferred, rerun=rerun, edited=edited
        )
        step_now, most = self.step, self.options.max_steps
        if outcome.decision.action == "refused":
            told = outcome.decision.reason
            return self.prompts["SKILL_COMMAND_REFUSED"].format(
                reason=told, step=step_now, max_steps=most
            )
        if outcome.decision.action == "skip":
            return self.prompts["SKILL_COMMAND_SKIPPED"].format(step=step_now, max_steps=most)
        if outcome.sudo_declined:
            return self.prompts["SKILL_SUDO_DECLINED"].format(step=step_now, max_steps=most)
        return self.prompts.command_output(outcome.output, step_now, most)

    async def _ask(self, parsed: Parsed, step: int) -> str:
        answer = await self.operator.answer(
            Question(step=step, text=parsed.text, required=parsed.required)
        )
        if parsed.required and not (answer or "").strip():
            raise InputNeeded(f"the skill needs an answer to: {preview(parsed.text)}")
        self.emit(Answer(step=step, question=parsed.text, answer=answer, required=parsed.required))
        return self.prompts.user_response(answer or "", self.step, self.options.max_steps)

    def _finish(self, status: RunStatus, message: str, exit_code: int) -> RunFinished:
        self.state = "done"
        result = RunFinished(
            status=status,
            steps=self.reached,
            message=message,
            exit_code=exit_code,
            duration_s=time.monotonic() - self._started,
            commands_run=self.commands.count,
            transcript=self.transcript,
        )
        self.result = result
        self.emit(result)
        return result
