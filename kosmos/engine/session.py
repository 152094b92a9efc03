"""The skill session: seed 001's state machine (idle -> waiting_cmd / waiting_user -> done)."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Literal

from kosmos.clean import cap, clean
from kosmos.engine import history
from kosmos.engine.envelope import app_command, target_os
from kosmos.engine.operator import CommandProposal, Operator, Question
from kosmos.engine.parser import Parsed
from kosmos.engine.protocols import ProtocolSwitched, StepProtocol, Turn, make_protocol
from kosmos.errors import (
    EXIT_DONE,
    EXIT_INTERRUPTED,
    InputNeeded,
    KosmosError,
    LLMError,
    RunFailed,
    StepLimitReached,
)
from kosmos.events import (
    Answer,
    CommandDecision,
    CommandFinished,
    CommandOutput,
    CommandStarted,
    Directive,
    Emit,
    Event,
    FormatError,
    KnowledgeLoaded,
    LLMReply,
    LLMRequest,
    LLMRetry,
    Message,
    Notice,
    RunFinished,
    RunStarted,
)
from kosmos.hosts.knowledge import KnowledgeTimeout, load_knowledge
from kosmos.hosts.runner import CommandResult, Runner
from kosmos.llm.provider import Provider, Reply
from kosmos.prompts import Prompts
from kosmos.skills.model import Skill

# What goes to the LLM of one command's output.
LLM_MAX_BYTES = 10 * 1024
LLM_MAX_LINES = 256

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
    # The step protocol: tags (seed 001), json, tools or auto.
    protocol: str = "tags"


def _preview(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


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
        self.step = 0
        self.state: State = "idle"
        self.commands_run = 0
        self.result: RunFinished | None = None
        self._sent_upto = 0
        self._stop: asyncio.Event | None = None
        self._started = 0.0
        self._knowledge: str | None = None
        self._os: str | None = None
        self._turn = Turn(Reply(), None)  # the reply being acted on
        self.protocol = protocol or make_protocol(
            self.options.protocol, provider, prompts, emit=self.emit
        )

    # -- what front ends call ------------------------------------------------------------

    def stop_command(self) -> bool:
        """Stop the command that is running now (its whole process tree); False if none is."""
        if self._stop is None or self._stop.is_set():
            return False
        self._stop.set()
        return True

    @property
    def command_running(self) -> bool:
        return self._stop is not None and not self._stop.is_set()

    async def run(self) -> RunFinished:
        """Run the skill to its end and return the final result (also emitted as an event)."""
        self._started = time.monotonic()
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
            )
        )
        try:
            await self._start()
            return await self._loop()
        except KosmosError as e:
            return self._finish(e.status, str(e), e.exit_code)
        except asyncio.CancelledError:
            self._finish("aborted", "interrupted by the operator", EXIT_INTERRUPTED)
            raise

    # -- the loop ------------------------------------------------------------------------

    def emit(self, event: Event) -> None:
        if event.host is None:
            event = event.model_copy(update={"host": self.runner.name})
        self._emit(event)

    async def _start(self) -> None:
        knowledge_text = None
        try:
            knowledge = await load_knowledge(self.runner, timeout=self.options.knowledge_timeout)
        except KnowledgeTimeout as e:
            self.emit(Notice(message=f"knowledge file skipped: {e}"))
            knowledge = None
        if knowledge is not None:
            knowledge_text = knowledge.text
            self.emit(KnowledgeLoaded(path=knowledge.path, text=knowledge.text))
        self.step = 1
        self._knowledge = knowledge_text
        first = self.prompts.initial(
            self.skill.name, self.params, self.options.prompt, self.step, self.options.max_steps
        )
        self.messages = [
            self._system(),
            Message(role="user", content=first),
        ]

    async def _loop(self) -> RunFinished:
        format_errors = 0
        while True:
            self.state = "idle"
            reply = await self._complete()
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
                        f"{_preview(reply.text)!r}; try a larger model or a lower temperature"
                    )
                if parsed is None or self.options.non_interactive:
                    self._next_step()
                    self.messages.extend(
                        self.protocol.correction(turn, self.step, self.options.max_steps)
                    )
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
                )
            )
            self._turn = turn
            self.messages.append(self.protocol.assistant_message(turn))
            if parsed.kind == "done":
                self.state = "done"
                return self._finish("done", parsed.text, EXIT_DONE)
            self._next_step()
            if parsed.kind == "cmd":
                self.state = "waiting_cmd"
                content = await self._command(parsed, step)
            elif parsed.kind == "ask":
                self.state = "waiting_user"
                content = await self._ask(parsed, step)
            else:
                content = self.prompts.continue_after_message(self.step, self.options.max_steps)
            self.messages.append(self.protocol.result_message(turn, content))

    def _system(self) -> Message:
        text = self.protocol.system_prompt(self.skill.name, self.skill.body, self._knowledge)
        return Message(role="system", content=text)

    async def _app_command(self, parsed: Parsed) -> str:
        """The OS command an envelope action (seed 000) becomes on this host."""
        if self._os is None:
            self._os = await target_os(self.runner, timeout=self.options.knowledge_timeout)
        return app_command(parsed.action or "", parsed.args, self._os)

    def _next_step(self) -> None:
        if self.step + 1 > self.options.max_steps:
            raise StepLimitReached(
                f"reached the step limit ({self.options.max_steps} steps) before the skill "
                "finished; raise it with --max-steps"
            )
        self.step += 1

    async def _complete(self) -> Reply:
        step = self.step
        sent = history.view(self.messages, self.options.history_mode, self.options.history_max)
        new = self.messages[self._sent_upto :]
        self._sent_upto = len(self.messages)
        size = len(json.dumps([m.model_dump() for m in sent], ensure_ascii=False).encode())
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

    async def _command(self, parsed: Parsed, step: int) -> str:
        proposal = CommandProposal(
            step=step, command=parsed.text, host=self.runner.name, inferred=parsed.inferred
        )
        approval = await self.operator.approve(proposal)
        command = (
            approval.command if approval.action == "edit" and approval.command else parsed.text
        )
        self.emit(
            CommandDecision(
                step=step, decision=approval.action, command=command, proposed=parsed.text
            )
        )
        if approval.action == "skip":
            return self.prompts.skipped(self.step, self.options.max_steps)
        if command != parsed.text:
            # The LLM sees the command that really ran as its own proposal.
            self.messages[-1] = self.protocol.assistant_message(self._turn, command)
        self.emit(CommandStarted(step=step, command=command))
        self._stop = asyncio.Event()
        try:
            result = await self.runner.run(
                command,
                timeout=self.options.command_timeout,
                on_output=lambda text: self.emit(CommandOutput(step=step, text=text)),
                stop=self._stop,
            )
        finally:
            self._stop = None
        self.commands_run += 1
        for_llm = self.output_for_llm(result)
        kept = result.output.text(marker=self._omitted_bytes)
        self.emit(
            CommandFinished(
                step=step,
                command=command,
                exit_code=result.exit_code,
                duration_s=result.duration_s,
                bytes=result.bytes,
                timed_out=result.timed_out,
                cancelled=result.cancelled,
                connection_lost=result.connection_lost,
                output=kept,
                output_truncated=result.output.omitted > 0,
                sent_to_llm=for_llm,
            )
        )
        return self.prompts.command_output(for_llm, self.step, self.options.max_steps)

    @staticmethod
    def _omitted_bytes(count: int) -> str:
        return f"[... {count} bytes of output not kept ...]"

    def output_for_llm(self, result: CommandResult) -> str:
        """Cleaned, capped output plus one status line when the command did not simply succeed."""
        p = self.prompts
        status = ""
        if result.timed_out:
            status = p["SKILL_TIMED_OUT"].format(timeout=f"{self.options.command_timeout:g}")
        elif result.cancelled:
            status = p["SKILL_STOPPED"].format(elapsed=f"{result.duration_s:.1f}")
        elif result.connection_lost:
            status = p["SKILL_CONNECTION_LOST"]
        elif result.exit_code not in (0, None):
            status = p["SKILL_EXIT_CODE"].format(exit_code=result.exit_code)
        text = clean(result.output.data(marker=self._omitted_bytes)) or p["SKILL_NO_OUTPUT"]
        reserve_bytes = len(status.encode()) + 1 if status else 0
        text, _ = cap(
            text,
            max_bytes=LLM_MAX_BYTES - reserve_bytes,
            max_lines=LLM_MAX_LINES - (1 if status else 0),
            marker=lambda lines, size: p["SKILL_OUTPUT_OMITTED"].format(lines=lines, bytes=size),
        )
        return f"{text}\n{status}" if status else text

    async def _ask(self, parsed: Parsed, step: int) -> str:
        answer = await self.operator.answer(
            Question(step=step, text=parsed.text, required=parsed.required)
        )
        if parsed.required and not (answer or "").strip():
            raise InputNeeded(f"the skill needs an answer to: {_preview(parsed.text)}")
        self.emit(Answer(step=step, question=parsed.text, answer=answer, required=parsed.required))
        return self.prompts.user_response(answer or "", self.step, self.options.max_steps)

    def _finish(self, status: str, message: str, exit_code: int) -> RunFinished:
        self.state = "done"
        result = RunFinished(
            status=status,  # type: ignore[arg-type]
            steps=self.step,
            message=message,
            exit_code=exit_code,
            duration_s=time.monotonic() - self._started,
            commands_run=self.commands_run,
            transcript=self.transcript,
        )
        self.result = result
        self.emit(result)
        return result
