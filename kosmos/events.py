"""Typed events: the engine emits them, front ends render them, the transcript stores them."""

# Records (msgspec Structs): built without validation by kosmos's own code, which mypy checks;
# validated where they come from outside (`parse_event`, a transcript's line). A class costs
# microseconds to build, where a validating model's schema costs a run's start-up its share
# of 150 ms.

import functools
import time
from collections.abc import Callable
from typing import Any, ClassVar, Literal

import msgspec
from msgspec import Struct, field

from kosmos.errors import RunStatus


class Event(Struct, frozen=True, kw_only=True):
    """Base of every event; `type` names it on the wire (transcript, --json)."""

    # Events that only matter live (streamed output) are not written to the transcript.
    persist: ClassVar[bool] = True

    type: str
    ts: float = field(default_factory=time.time)
    host: str | None = None


class RunStarted(Event, frozen=True, kw_only=True):
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


class KnowledgeLoaded(Event, frozen=True, kw_only=True):
    """The host's knowledge file was found and goes into the system prompt."""

    type: Literal["knowledge_loaded"] = "knowledge_loaded"
    path: str
    text: str


class Notice(Event, frozen=True, kw_only=True):
    """Something the operator should know that does not stop the run."""

    type: Literal["warning"] = "warning"
    message: str


class ToolCall(Struct, frozen=True, kw_only=True):
    """One function call an LLM asked for: its id (if the wire has one), name and args."""

    id: str | None = None
    name: str
    args: dict[str, Any] = field(default_factory=dict)


# A plain message stays {"role", "content"} in transcripts and byte counts (omit_defaults).
class Message(Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One chat message as the LLM sees it.

    An assistant message may carry tool calls besides its text; a `tool` message answers the
    call `tool_call_id` (named `name`, which Gemini's functionResponse needs).
    """

    role: Literal["system", "user", "assistant", "tool"]
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None


class LLMRequest(Event, frozen=True, kw_only=True):
    """An LLM call starts. `new_messages` are those added since the previous request."""

    type: Literal["llm_request"] = "llm_request"
    step: int
    new_messages: list[Message]
    sent_messages: int
    sent_bytes: int


class LLMRetry(Event, frozen=True, kw_only=True):
    type: Literal["llm_retry"] = "llm_retry"
    step: int
    attempt: int
    reason: str
    delay_s: float


class LLMReply(Event, frozen=True, kw_only=True):
    type: Literal["llm_reply"] = "llm_reply"
    step: int
    content: str
    duration_s: float
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    tool_calls: list[ToolCall] = []


class CapabilityFallback(Event, frozen=True, kw_only=True):
    """The server rejected a capability (HTTP 400); kosmos stops using it for this run."""

    type: Literal["capability_fallback"] = "capability_fallback"
    capability: Literal["json_schema", "tools", "json_mode"]
    reason: str
    next: str


class StructuredExchange(Event, frozen=True, kw_only=True):
    """One structured request (docs/protocol.md): context, schema, strategy and the solution.

    Together they are a replayable unit: the same context and schema give the same call.
    """

    type: Literal["structured_request"] = "structured_request"
    step: int | None = None
    context: list[Message]
    schema_: dict[str, Any] = field(name="schema")
    name: str = "response"
    llm: dict[str, Any] = {}  # settings a content handler changed (temperature, max_tokens)
    strategy: Literal["json_schema", "tool", "json_mode"]
    solution: dict[str, Any] | None = None
    repaired: bool = False
    error: str | None = None


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


class Directive(Event, frozen=True, kw_only=True):
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


class FormatError(Event, frozen=True, kw_only=True):
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


class CommandDecision(Event, frozen=True, kw_only=True):
    """Whether a proposed command runs, and who decided (`DecidedBy`).

    `refused`: the policy would not let it run (the LLM is told `reason`). `asked`: a person
    said yes to exactly these bytes in this run; a command that runs otherwise runs unasked.
    `all_hosts`: the person said it for every host of a fleet, not only this one (what a
    canary's yes carries to the other hosts).
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
    all_hosts: bool = False


class CommandStarted(Event, frozen=True, kw_only=True):
    type: Literal["command_started"] = "command_started"
    step: int
    command: str


class CommandOutput(Event, frozen=True, kw_only=True):
    """A chunk of live output for front ends; the transcript keeps it in CommandFinished."""

    persist: ClassVar[bool] = False

    type: Literal["command_output"] = "command_output"
    step: int
    text: str


class CommandFinished(Event, frozen=True, kw_only=True):
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


class SkillFolderReady(Event, frozen=True, kw_only=True):
    """The files beside SKILL.md are on the target: `base` is their folder there."""

    type: Literal["skill_folder"] = "skill_folder"
    base: str
    files: list[str]
    bytes: int
    # `local`: the skill's own folder; `uploaded` or `reused` over SFTP; `remote`: a skill kept
    # on the host uses its own folder there.
    how: Literal["local", "uploaded", "reused", "remote"]


class FileRead(Event, frozen=True, kw_only=True):
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


class MemoryAction(Event, frozen=True, kw_only=True):
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


class Answer(Event, frozen=True, kw_only=True):
    type: Literal["answer"] = "answer"
    step: int
    question: str
    answer: str | None
    required: bool


class ParamsUpdate(Event, frozen=True, kw_only=True):
    """The parameter dialogue: one turn, or parameters merged, rejected, confirmed."""

    type: Literal["params_update"] = "params_update"
    kind: Literal["turn", "update", "rejected", "confirm", "premature_confirm"]
    values: dict[str, str] = {}
    problems: dict[str, str] = {}
    missing: list[str] = []
    # kind "turn": what the LLM said and what the operator typed back (None: Confirm pressed).
    said: str = ""
    typed: str | None = None


class RunPlanned(Event, frozen=True, kw_only=True):
    """A fleet host's run as it was to start, kept for a host that never got as far as its
    own run (unreachable, not started), so that `--resume` can start it anew."""

    type: Literal["run_planned"] = "run_planned"
    skill: str
    skill_path: str
    params: dict[str, str] = {}
    prompt: str | None = None
    target: str


class RunFinished(Event, frozen=True, kw_only=True):
    """The last event of a run; `--json` prints it as the final `result` line."""

    type: Literal["result"] = "result"
    status: RunStatus
    steps: int
    message: str
    exit_code: int
    duration_s: float = 0.0
    commands_run: int = 0
    transcript: str | None = None
    # A fleet host whose report (`message`) is another host's, made from a conversation
    # identical to its own: that host's name (kosmos.fleet.reports).
    report_from: str | None = None


EVENTS: tuple[type[Event], ...] = (
    RunStarted,
    RunPlanned,
    KnowledgeLoaded,
    Notice,
    LLMRequest,
    LLMRetry,
    LLMReply,
    CapabilityFallback,
    StructuredExchange,
    ParamsUpdate,
    Directive,
    FormatError,
    CommandDecision,
    CommandStarted,
    CommandOutput,
    CommandFinished,
    SkillFolderReady,
    FileRead,
    MemoryAction,
    Answer,
    RunFinished,
)


def event_type(kind: type[Event]) -> str:
    """The name an event type has on the wire (`command_started`): its `type`'s default."""
    default = msgspec.structs.fields(kind)[0].default
    assert isinstance(default, str), kind
    return default


@functools.cache
def _kinds() -> dict[str, type[Event]]:
    # Built on first use: a run that reads no transcript does not read 21 classes' fields.
    return {event_type(kind): kind for kind in EVENTS}


Emit = Callable[[Event], None]


def parse_event(data: dict[str, Any]) -> Event:
    """Turn one transcript line back into its event (msgspec.ValidationError if it is not one)."""
    kind = _kinds().get(data.get("type"))  # type: ignore[arg-type]
    if kind is None:
        raise msgspec.ValidationError(f"no event type {data.get('type')!r} - at `$.type`")
    return msgspec.convert(data, kind, strict=False)


def dump(record: Struct) -> Any:
    """An event (or message) as JSON-ready builtins: what the transcript and `--json` write."""
    return msgspec.to_builtins(record)
