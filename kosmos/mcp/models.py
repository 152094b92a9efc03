"""The tools' structured results: what an MCP client reads (`outputSchema`) besides the text."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

Verdict = Literal["read_only", "write", "dangerous"]


class HostCheckInfo(BaseModel):
    """What `kosmos hosts --check` says of a host: connected without asking anything."""

    reachable: str = Field(description="yes or no")
    trust: str = Field(description="ok, failed, unknown host key, host key changed, ...")
    os: str = Field(description="the OS and distribution, or -")
    lock: str = Field(description="the kernel lock: `held (...)` or `not held: why`")
    latency_ms: float | None = None
    error: str = ""


class HostInfo(BaseModel):
    """One host kosmos knows, where it knows it from, and how calls on it are approved."""

    name: str
    target: str = Field(description="what kosmos dials: local, an alias or user@host:port")
    sources: list[str] = Field(description="builtin, ssh_config, inventory, config")
    policy: str = Field(description="the approval policy this server's calls run under")
    lock: str = Field(description="required: nothing runs unasked without the kernel lock")
    check: HostCheckInfo | None = Field(None, description="present when check was asked for")


class HostsResult(BaseModel):
    hosts: list[HostInfo]


class SkillParamInfo(BaseModel):
    name: str
    description: str = ""
    required: bool = False
    default: str | None = None
    choices: list[str] | None = None
    max_length: int | None = None


class SkillInfo(BaseModel):
    name: str
    description: str
    source: str = Field(description="where it was found: bundled, user, project, a folder")
    path: str
    params: list[SkillParamInfo]


class SkillsResult(BaseModel):
    skills: list[SkillInfo]
    problems: list[str] = Field(default_factory=list, description="skill files not loaded")


class CommandResult(BaseModel):
    """A command that ran: its output as kosmos cleans it for an LLM, and who let it run."""

    host: str
    command: str = Field(description="the command as it ran")
    exit_code: int | None = Field(description="None when it was ended (timeout, cancel)")
    output: str = Field(description="cleaned, capped and redacted output, with a status line")
    verdict: Verdict = Field(description="the shell policy's verdict on the command")
    reason: str
    decided_by: str = Field(description="operator (the MCP client's person) or policy")
    asked: bool = Field(description="a person said yes to exactly this command")
    locked: bool = Field(description="it ran inside the kernel lock: nothing was written")
    timed_out: bool = False
    cancelled: bool = False
    duration_s: float
    transcript: str


class FileResult(BaseModel):
    """A file read as a skill's [GET-FILE] reads it: capped, fenced and redacted."""

    host: str
    path: str
    content: str
    bytes: int = Field(description="the file's size as read")
    decided_by: str
    transcript: str


class HostOutcome(BaseModel):
    host: str
    status: str = Field(description="done, failed, step_limit, needs_input, error, aborted, ...")
    message: str = Field(description="the [DONE] summary, or why the run ended otherwise")
    exit_code: int
    steps: int
    commands_run: int
    transcript: str | None
    report_from: str = Field(
        default="own",
        description="what `message` was made from: this host's own outputs (`own`), or the "
        "host whose identical outputs (a canary's) made it",
    )


class SkillRunResult(BaseModel):
    """A skill's run on one host or a fleet: the summary, each host's end, the transcripts."""

    skill: str
    status: str
    message: str
    exit_code: int
    hosts: list[HostOutcome]
    transcripts: str = Field(description="the transcript file, or a fleet's run directory")
    fleet_report: str | None = Field(
        default=None,
        description="a fleet's hosts grouped by outcome: one line per distinct report, with "
        "its hosts",
    )
