"""Typed events: the engine emits them, front ends render them, the transcript stores them."""

# No `from __future__ import annotations` here: pydantic would then compile and evaluate each
# field's annotation from its text as every event class is built, which is a fifth of what
# importing this module costs every run.

import time
from collections.abc import Callable
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_serializer

from kosmos.errors import RunStatus


def _now() -> float:
    # A Python function, not `time.time` itself: pydantic inspects a default factory's signature
    # as it builds each event class's schema, and a builtin's is parsed from its text.
    return time.time()


class Event(BaseModel):
    """Base of every event; `type` names it on the wire (transcript, --json)."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    # Events that only matter live (streamed output) are not written to the transcript.
    persist: ClassVar[bool] = True

    type: str
    ts: float = Field(default_factory=_now)
    host: str | None = None


class RunStarted(Event):
    type: Literal["run_started"] = "run_started"
    run_id: str
    skill: str
    skill_path: str
    params: dict[str, str] = {}
    prompt: str | None = None
    protocol: str = "tags"
    model: str
    base_url: str
    max_steps: int
    history_mode: str = "full"
    transcript: str | None = None
    # The approval policy in force: ask, read-only, auto or locked.
    policy: str = "ask"
    # A resumed run names the transcript it continues; a replay, the recording it plays.
    resumed_from: str | None = None
    replay_of: str | None = None
    # The target's OS as kosmos detected it (Linux, macOS, FreeBSD, Windows); None if unknown.
    os: str | None = None
    # --memory: the memory prompt (Target OS block, memory directives, memory index), and
    # the folder its notes are in (a relative memory_dir is taken from the working directory).
    memory: bool = False
    memory_dir: str | None = None
    # The kernel lock on the host: `held (Landlock ABI 7, seccomp)` or `not held: why`.
    lock: str | None = None
    # sha256 of the SKILL.md's text: what --canary-from checks the skill against.
    skill_sha256: str | None = None


class KnowledgeLoaded(Event):
    """The host's knowledge file was found and goes into the system prompt."""

    type: Literal["knowledge_loaded"] = "knowledge_loaded"
    path: str
    text: str


class Notice(Event):
    """Something the operator should know that does not stop the run."""

    type: Literal["warning"] = "warning"
    message: str


class ToolCall(BaseModel):
    """One function call an LLM asked for: its id (if the wire has one), name and args."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    id: str | None = None
    name: str
    args: dict[str, Any] = Field(default_factory=dict)


class Message(BaseModel):
    """One chat message as the LLM sees it.

    An assistant message may carry tool calls besides its text; a `tool` message answers the
    call `tool_call_id` (named `name`, which Gemini's functionResponse needs).
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    role: Literal["system", "user", "assistant", "tool"]
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None

    @model_serializer(mode="wrap")
    def _compact(self, handler: Any) -> dict[str, Any]:
        # A plain message stays {"role", "content"} in transcripts and byte counts.
        data = handler(self)
        if not self.tool_calls:
            data.pop("tool_calls", None)
        for key in ("tool_call_id", "name"):
            if data.get(key) is None:
                data.pop(key, None)
        return data


class LLMRequest(Event):
    """An LLM call starts. `new_messages` are those added since the previous request."""

    type: Literal["llm_request"] = "llm_request"
    step: int
    new_messages: list[Message]
    sent_messages: int
    sent_bytes: int


class LLMRetry(Event):
    type: Literal["llm_retry"] = "llm_retry"
    step: int
    attempt: int
    reason: str
    delay_s: float


class LLMReply(Event):
    type: Literal["llm_reply"] = "llm_reply"
    step: int
    content: str
    duration_s: float
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    tool_calls: list[ToolCall] = []


class CapabilityFallback(Event):
    """The server rejected a capability (HTTP 400); kosmos stops using it for this run."""

    type: Literal["capability_fallback"] = "capability_fallback"
    capability: Literal["json_schema", "tools", "json_mode"]
    reason: str
    next: str


class StructuredExchange(Event):
    """One structured request (docs/protocol.md): context, schema, strategy and the solution.

    Together they are a replayable unit: the same context and schema give the same call.
    """

    type: Literal["structured_request"] = "structured_request"
    step: int | None = None
    context: list[Message]
    schema_: dict[str, Any] = Field(alias="schema")
    name: str = "response"
    llm: dict[str, Any] = {}  # settings a content handler changed (temperature, max_tokens)
    strategy: Literal["json_schema", "tool", "json_mode"]
    solution: dict[str, Any] | None = None
    repaired: bool = False
    error: str | None = None

    model_config = ConfigDict(
        frozen=True, populate_by_name=True, serialize_by_alias=True, defer_build=True
    )


DirectiveKind = Literal[
    "cmd",
    "ask",
    "message",
    "done",
    "get_file",
    "store",
    "append_memory",
    "retrieve",
    "list_memory",
    "delete_memory",
]


class Directive(Event):
    """What the LLM asked for in one reply."""

    type: Literal["directive"] = "directive"
    step: int
    kind: DirectiveKind
    text: str
    required: bool = True
    inferred: bool = False
    # Text the LLM said beside its directive (a reply of text and function calls; a JSON
    # envelope's `text`).
    said: str = ""
    # A built-in action of the JSON envelope (`open_app` / `close_app`) behind a command.
    action: str | None = None
    # [STORE] / [APPEND_MEMORY]: the note's text as the LLM gave it (`text` is the name).
    content: str = ""


class FormatError(Event):
    """A reply without one of the five tags."""

    type: Literal["format_error"] = "format_error"
    step: int
    reply: str
    count: int


Risk = Literal["read_only", "write", "dangerous"]

# Who decided that a step runs (or not): a person at this run (`operator`), the approval policy
# (`policy`), a recorded run being replayed (`replay`), a fleet's approval given once for every
# host proposing the same command, on a host nobody looked at (`standing`), or a canary's
# decision replayed on a host following it (`canary`).
DecidedBy = Literal["operator", "policy", "replay", "standing", "canary"]


class CommandDecision(Event):
    """Whether a proposed command runs, and who decided (`DecidedBy`).

    `refused`: the policy would not let it run (the LLM is told `reason`). `asked`: a person
    said yes to exactly these bytes in this run; a command that runs otherwise runs unasked.
    """

    type: Literal["command_decision"] = "command_decision"
    step: int
    decision: Literal["run", "skip", "edit", "refused"]
    command: str
    proposed: str
    by: DecidedBy = "operator"
    risk: Risk | None = None
    reason: str = ""
    asked: bool = False


class CommandStarted(Event):
    type: Literal["command_started"] = "command_started"
    step: int
    command: str


class CommandOutput(Event):
    """A chunk of live output for front ends; the transcript keeps it in CommandFinished."""

    persist: ClassVar[bool] = False

    type: Literal["command_output"] = "command_output"
    step: int
    text: str


class CommandFinished(Event):
    type: Literal["command_finished"] = "command_finished"
    step: int
    command: str
    exit_code: int | None
    duration_s: float
    bytes: int
    timed_out: bool = False
    cancelled: bool = False
    connection_lost: bool = False
    output: str
    output_truncated: bool = False
    sent_to_llm: str
    # It ran inside the kernel lock: nothing it tried to write was written.
    locked: bool = False


ActionStatus = Literal["done", "error", "skipped", "refused"]


class SkillFolderReady(Event):
    """The files beside SKILL.md are on the target: `base` is their folder there."""

    type: Literal["skill_folder"] = "skill_folder"
    base: str
    files: list[str]
    bytes: int
    # `local`: the skill's own folder; `uploaded` or `reused` over SFTP; `remote`: a skill kept
    # on the host uses its own folder there.
    how: Literal["local", "uploaded", "reused", "remote"]


class FileRead(Event):
    """[GET-FILE]: a file's text read from the target for the LLM (or why it was not)."""

    type: Literal["file_read"] = "file_read"
    step: int
    path: str
    status: ActionStatus
    by: DecidedBy = "policy"
    bytes: int = 0
    reason: str = ""
    sent_to_llm: str


MemoryVerb = Literal["store", "append", "retrieve", "list", "delete"]


class MemoryAction(Event):
    """A memory directive carried out on the controller's memory folder (or refused)."""

    type: Literal["memory"] = "memory"
    step: int
    action: MemoryVerb
    name: str = ""
    status: ActionStatus
    by: DecidedBy = "policy"
    # store / append: the text written (redacted); bytes: the note's size after the action.
    content: str = ""
    bytes: int = 0
    reason: str = ""
    sent_to_llm: str


class Answer(Event):
    type: Literal["answer"] = "answer"
    step: int
    question: str
    answer: str | None
    required: bool


class ParamsUpdate(Event):
    """The parameter dialogue: one turn, or parameters merged, rejected, confirmed."""

    type: Literal["params_update"] = "params_update"
    kind: Literal["turn", "update", "rejected", "confirm", "premature_confirm"]
    values: dict[str, str] = {}
    problems: dict[str, str] = {}
    missing: list[str] = []
    # kind "turn": what the LLM said and what the operator typed back (None: Confirm pressed).
    said: str = ""
    typed: str | None = None


class RunPlanned(Event):
    """A fleet host's run as it was to start, kept for a host that never got as far as its
    own run (unreachable, not started), so that `--resume` can start it anew."""

    type: Literal["run_planned"] = "run_planned"
    skill: str
    skill_path: str
    params: dict[str, str] = {}
    prompt: str | None = None
    target: str


class RunFinished(Event):
    """The last event of a run; `--json` prints it as the final `result` line."""

    type: Literal["result"] = "result"
    status: RunStatus
    steps: int
    message: str
    exit_code: int
    duration_s: float = 0.0
    commands_run: int = 0
    transcript: str | None = None


AnyEvent = Annotated[
    RunStarted
    | RunPlanned
    | KnowledgeLoaded
    | Notice
    | LLMRequest
    | LLMRetry
    | LLMReply
    | CapabilityFallback
    | StructuredExchange
    | ParamsUpdate
    | Directive
    | FormatError
    | CommandDecision
    | CommandStarted
    | CommandOutput
    | CommandFinished
    | SkillFolderReady
    | FileRead
    | MemoryAction
    | Answer
    | RunFinished,
    Field(discriminator="type"),
]

_adapter: list[TypeAdapter[Any]] = []

Emit = Callable[[Event], None]


def parse_event(data: dict[str, Any]) -> Event:
    """Turn one transcript line back into its event."""
    if not _adapter:  # built on first use: a run that reads no transcript never pays for it
        _adapter.append(TypeAdapter(AnyEvent))
    return _adapter[0].validate_python(data)
