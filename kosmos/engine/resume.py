"""Rebuild a run's conversation from its transcript, to continue it (`kosmos run --resume`).

The history is what the LLM was sent: the `new_messages` of every `llm_request`, in order
(also across earlier resumes appended to the same transcript). After the last request:

* no reply recorded: the request is sent again;
* a reply whose step finished (command output, answer, skip, refusal, message): the result
  the LLM never got is rebuilt from that step's events and the run goes on with the next
  request;
* a reply whose step did not finish: the reply is acted on again. When its command had
  started but its result was never recorded, the command is not re-run without asking
  (`rerun`): the operator is asked whatever the policy, and headless the LLM is told its
  result is unknown.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kosmos.errors import UsageError
from kosmos.events import (
    Answer,
    CommandDecision,
    CommandFinished,
    CommandStarted,
    Directive,
    Event,
    FileRead,
    LLMReply,
    LLMRequest,
    MemoryAction,
    Message,
    RunFinished,
    RunPlanned,
    RunStarted,
)
from kosmos.llm.provider import Reply
from kosmos.prompts import Prompts


@dataclass(frozen=True)
class Resumed:
    """Where a recorded run stopped: its history and what is left to do at its last step."""

    source: str
    started: RunStarted
    messages: list[Message]  # everything the LLM was sent
    step: int
    reply: Reply | None = None  # the last recorded reply
    # When the reply's step finished: the result text the LLM is owed (and the command as
    # it ran, if edited). Otherwise the reply is acted on again.
    result: str | None = None
    command: str | None = None
    rerun: bool = False  # its command started and its result was lost
    # False when the new events go to another file: its first request then carries the
    # whole history, so that file alone can be resumed or replayed in turn.
    same_transcript: bool = True
    # The recorded events: what was refused before, for the resumed run's end (shortfall.py).
    earlier: tuple[Event, ...] = ()

    def describe(self) -> str:
        if self.rerun:
            what = (
                "its command was interrupted and ended on the host when kosmos stopped; "
                "it will not run again without asking"
            )
        elif self.result is not None:
            what = "sending the last step's result"
        elif self.reply is not None:
            what = "acting on the last recorded reply"
        else:
            what = "sending the last request again"
        return f"resuming {self.source} at step {self.step}: {what}"


def _segment_start(events: Sequence[Event], source: str) -> RunStarted:
    """The latest start: an earlier resume may have raised the step limit."""
    starts = [e for e in events if isinstance(e, RunStarted)]
    if not starts:
        raise UsageError(f"{source}: no run_started event; is it a kosmos transcript?")
    return starts[-1]


def never_started(events: Sequence[Event], source: str) -> tuple[RunPlanned, str] | None:
    """A fleet host's transcript whose run never started (unreachable, not started): the run
    as planned, and the line that says it is started anew; None for any other transcript."""
    plans = [e for e in events if isinstance(e, RunPlanned)]
    if not plans or any(isinstance(e, RunStarted) for e in events):
        return None
    plan = plans[-1]
    ended = [e.status for e in events if isinstance(e, RunFinished)]
    how = f" ({ended[-1]})" if ended else ""
    return plan, (
        f"{source}: {plan.host} never started in its fleet run{how}; running {plan.skill} "
        "on it anew"
    )


def same_skill(resume: Resumed, name: str, given: str | None) -> None:
    """A resumed run keeps its skill: the one named beside --resume must be it."""
    if name != resume.started.skill:
        raise UsageError(
            f"{resume.source} is a run of {resume.started.skill}, not {name}: a resumed run "
            f"keeps its skill; drop {given or name}, or start a new run"
        )


def resume_state(events: Sequence[Event], prompts: Prompts, *, source: str) -> Resumed:
    """The state to continue from; UsageError when the run finished or never reached the LLM."""
    started = _segment_start(events, source)
    finished = [e for e in events if isinstance(e, RunFinished)]
    if finished and finished[-1].status == "done":
        raise UsageError(f"{source}: this run already finished (done); nothing to resume")
    requests = [i for i, e in enumerate(events) if isinstance(e, LLMRequest)]
    if not requests:
        raise UsageError(f"{source}: the run stopped before its first LLM request; start it anew")
    messages: list[Message] = []
    for i in requests:
        req = events[i]
        assert isinstance(req, LLMRequest)
        messages.extend(req.new_messages)
    last = events[requests[-1]]
    assert isinstance(last, LLMRequest)
    step = last.step
    after = [e for e in events[requests[-1] + 1 :] if getattr(e, "step", step) == step]
    recorded = next((e for e in after if isinstance(e, LLMReply)), None)
    if recorded is None:
        return Resumed(source, started, messages, step)
    reply = Reply(
        text=recorded.content,
        tool_calls=list(recorded.tool_calls or []),
        finish_reason=recorded.finish_reason,
    )
    directive = next((e for e in after if isinstance(e, Directive)), None)
    done = _finished_step(after, directive, prompts, step + 1, started.max_steps)
    if done is not None:
        result, command = done
        return Resumed(source, started, messages, step, reply, result, command)
    rerun = any(isinstance(e, CommandStarted) for e in after)
    return Resumed(source, started, messages, step, reply, rerun=rerun)


def _finished_step(
    after: Sequence[Event],
    directive: Directive | None,
    prompts: Prompts,
    next_step: int,
    max_steps: int,
) -> tuple[str, str | None] | None:
    """The result text of a step that completed (and its command if edited), from its events."""
    if directive is None:
        return None
    if directive.kind == "message":
        return prompts.continue_after_message(next_step, max_steps), None
    for e in after:
        # A [GET-FILE] or memory step holds its whole result, refusals and skips included.
        if isinstance(e, FileRead | MemoryAction):
            return prompts.action_result(e.sent_to_llm, next_step, max_steps), None
    for e in after:
        if isinstance(e, CommandFinished):
            edited = e.command if e.command != directive.text else None
            return prompts.command_output(e.sent_to_llm, next_step, max_steps), edited
        if isinstance(e, CommandDecision) and e.decision == "skip":
            return prompts.skipped(next_step, max_steps), None
        if isinstance(e, CommandDecision) and e.decision == "refused":
            text = prompts["SKILL_COMMAND_REFUSED"].format(
                reason=e.reason, step=next_step, max_steps=max_steps
            )
            return text, None
        if isinstance(e, Answer):
            return prompts.user_response(e.answer or "", next_step, max_steps), None
    return None
