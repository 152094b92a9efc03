"""The MCP server: kosmos's tools, the era it speaks, and serving it on stdio.

kosmos speaks MCP's handshake era (up to 2025-11-25), where a server may ask the client's
person in the middle of a tool call: that is how a command the policy leaves to a person is
approved. A 2026-07-28 request is refused with the versions served, so a client that probes
first (`server/discover`) falls back to the `initialize` handshake.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import UNSUPPORTED_PROTOCOL_VERSION, ToolAnnotations
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic import Field

from kosmos import __version__
from kosmos.engine.guard import visible
from kosmos.errors import KosmosError
from kosmos.mcp.asking import Asker
from kosmos.mcp.calls import HostCalls
from kosmos.mcp.catalog import list_hosts, list_skills
from kosmos.mcp.models import CommandResult, FileResult, HostsResult, SkillRunResult, SkillsResult
from kosmos.mcp.options import McpOptions
from kosmos.mcp.progress import Progress
from kosmos.mcp.skillruns import SkillRuns

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

INSTRUCTIONS = """\
kosmos runs shell commands and AI skills on servers over SSH (or on this machine: host
`local`), judging every command with its own shell parser and policy. Call `hosts` to see
the hosts and `skills` for the skills. `run_command` and `read_file` do one thing on one
host; `run_skill` runs a whole skill with kosmos's own LLM on one host or several. What the
policy does not let run unasked is asked of the person through elicitation, or refused with
the reason; a refusal is final for that command: do not try to get around it."""

Host = Annotated[
    str, Field(description="a host from `hosts`: local, an ssh_config alias, or user@host[:port]")
]


async def _handshake_era_only(ctx: Any, call_next: Any) -> Any:
    """Refuse 2026-07-28 requests: they cannot carry a question to the person mid-call."""
    if ctx.method == "server/discover" or ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        raise MCPError(
            code=UNSUPPORTED_PROTOCOL_VERSION,
            message="kosmos mcp speaks the initialize handshake (MCP 2025-11-25 and earlier), "
            "where it can ask the person to approve a command mid-call",
            data={"supported": list(HANDSHAKE_PROTOCOL_VERSIONS)},
        )
    return await call_next(ctx)


def asker_for(ctx: Context) -> Asker:
    """How this call asks its client's person: elicitation, if the client declared it."""
    caps = ctx.client_capabilities
    elicitation = caps.elicitation if caps is not None else None
    # An empty `elicitation: {}` declares form mode (the spec's default).
    forms = elicitation is not None and (elicitation.form is not None or elicitation.url is None)
    params = ctx.session.client_params
    info = params.client_info if params is not None else None
    client = (
        f"the MCP client {visible(info.name, one_line=True)}"
        if info is not None
        else "the MCP client"
    )

    async def ask(message: str, schema: Any) -> tuple[str, Any]:
        result = await ctx.elicit(message, schema)
        return result.action, getattr(result, "data", None)

    return Asker(ask, forms, client)


async def _guarded(call: Awaitable[T]) -> T:
    """A kosmos error (a bad host, skill or param; an unreachable host) as the tool's error."""
    try:
        return await call
    except KosmosError as e:
        raise ToolError(str(e)) from e


def _tool(server: MCPServer, *, reads_only: bool = False) -> Callable[[F], F]:
    """Register a tool under its function's name, its docstring on one line as description."""

    def register(fn: F) -> F:
        return server.tool(
            name=fn.__name__,
            description=" ".join((fn.__doc__ or "").split()),
            annotations=ToolAnnotations(read_only_hint=True) if reads_only else None,
        )(fn)

    return register


def build_server(options: McpOptions) -> MCPServer:
    """kosmos's MCP server: five tools over the options it was started with."""
    server: MCPServer = MCPServer(
        "kosmos",
        title="kosmos",
        version=__version__,
        instructions=INSTRUCTIONS,
        log_level="WARNING",
    )
    server.middleware.append(_handshake_era_only)
    calls = HostCalls(options)
    runs = SkillRuns(options)

    @_tool(server, reads_only=True)
    async def hosts(
        check: Annotated[
            bool,
            Field(description="connect to each (no questions asked): reachable, trust, OS, lock"),
        ] = False,
    ) -> HostsResult:
        """The hosts kosmos knows: local, ~/.ssh/config aliases, the inventory, the config;
        each with the approval policy its calls run under."""
        return await _guarded(list_hosts(options, check=check))

    @_tool(server, reads_only=True)
    async def skills() -> SkillsResult:
        """The skills kosmos finds (--skills-dir, the project's, the user's, bundled), with
        their descriptions and parameters, for run_skill."""
        return list_skills(options)

    @_tool(server)
    async def run_command(
        host: Host,
        command: Annotated[str, Field(description="one shell command, run under bash -c")],
        ctx: Context,
    ) -> CommandResult:
        """Run one shell command on a host, judged by kosmos's policy and kernel lock as a
        skill's commands are; the output comes back cleaned and redacted, with the exit code,
        the verdict and who decided."""
        return await _guarded(calls.run_command(asker_for(ctx), host, command))

    @_tool(server, reads_only=True)
    async def read_file(
        host: Host,
        path: Annotated[str, Field(description="the file's path on the host")],
        ctx: Context,
    ) -> FileResult:
        """Read one text file on a host (judged as `cat PATH`; at most 4 MiB read, the text
        capped as a skill's [GET-FILE] is, secrets masked)."""
        return await _guarded(calls.read_file(asker_for(ctx), host, path))

    @_tool(server)
    async def run_skill(
        skill: Annotated[str, Field(description="a skill's name from `skills`")],
        ctx: Context,
        host: Annotated[str | None, Field(description="one host to run it on")] = None,
        hosts: Annotated[
            list[str] | None, Field(description="several hosts: a fleet, one approval for all")
        ] = None,
        params: Annotated[
            dict[str, str] | None, Field(description="the skill's parameters by name")
        ] = None,
        canary: Annotated[
            str | None,
            Field(description="one of hosts to run first; the others follow only if it is done"),
        ] = None,
    ) -> SkillRunResult:
        """Run a whole skill with kosmos's own LLM on one host or a fleet; progress comes per
        step, the result has the [DONE] summary, each host's status and the transcripts."""
        if (host is None) == (hosts is None):
            raise ToolError("host, hosts: give one of them (a host, or a list of hosts)")
        targets = [host] if host is not None else list(hosts or [])
        if not targets or not all(t.strip() for t in targets):
            raise ToolError("hosts: give at least one host name, none of them empty")
        async with Progress(ctx.report_progress) as progress:
            return await _guarded(
                runs.run(
                    asker_for(ctx),
                    progress,
                    skill,
                    hosts=targets,
                    params=params or {},
                    canary=canary,
                )
            )

    return server


def configure_logging(log: str | None, *, verbose: bool = False) -> None:
    """Logs to stderr, or to `log`: stdout carries nothing but protocol messages."""
    handler: logging.Handler = (
        logging.FileHandler(log, encoding="utf-8") if log else logging.StreamHandler()
    )
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.INFO if verbose else logging.WARNING)


async def serve_stdio(server: MCPServer) -> None:
    """Serve one client on stdin/stdout until it closes them.

    The handshake-only loop, not the dual-era one the SDK's `run()` drives: on the latter a
    client's `server/discover` probe would commit the connection to 2026-07-28 before the
    refusal, and the `initialize` it then falls back to would be refused too.
    """
    from mcp.server.runner import serve_loop
    from mcp.server.stdio import stdio_server

    low = server._lowlevel_server  # the SDK's documented way to the low-level server
    async with stdio_server() as (read, write), low.lifespan(low) as state:
        with contextlib.suppress(EOFError):
            await serve_loop(
                low,
                read,
                write,
                lifespan_state=state,
                init_options=low.create_initialization_options(),
            )
