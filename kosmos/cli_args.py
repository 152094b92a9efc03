"""The `kosmos` argument parser: every subcommand, its flags and their help."""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from _typeshed import SupportsWrite


class Parser(argparse.ArgumentParser):
    """argparse, except that a closed stdout is not swallowed: `kosmos --help | head -1`
    ends as every other command does when its reader goes away."""

    def _print_message(self, message: str, file: SupportsWrite[str] | None = None) -> None:
        if message:
            stream = file or sys.stderr
            stream.write(message)
            flush = getattr(stream, "flush", None)
            if flush is not None:
                flush()

    def error(self, message: str) -> NoReturn:
        """One line, as every other error kosmos prints: what is wrong, the closest choice
        where a value was mistyped (`--policy readonly`), and where the rest is listed."""
        hint = ""
        mistyped = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)$", message)
        if mistyped:
            choices = re.findall(r"'([^']*)'", mistyped.group(2))
            close = difflib.get_close_matches(mistyped.group(1), choices, n=1, cutoff=0.5)
            hint = f"did you mean {close[0]}? " if close else ""
        self.exit(2, f"{self.prog}: error: {message}; {hint}({self.prog} --help lists all)\n")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {text}")
    return value


def _skills_dir_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--skills-dir",
        action="append",
        default=[],
        type=Path,
        metavar="DIR",
        help="look for skills here first (repeatable)",
    )


def _llm_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("LLM")
    g.add_argument(
        "--provider", choices=["openai", "gemini"], help="LLM provider (default: openai)"
    )
    g.add_argument(
        "--base-url",
        help="API base of the provider, e.g. http://localhost:11434/v1 "
        "(gemini: https://generativelanguage.googleapis.com/v1beta)",
    )
    g.add_argument("--model", help="model name (default: CHEAP, or $AI_MODEL)")
    g.add_argument(
        "--protocol",
        choices=["tags", "json", "tools", "auto"],
        help="how the LLM answers each step: tags (default), json, tools "
        "(function calling), auto (tools where the provider can, else tags)",
    )
    _config_flag(p)


def _config_flag(p: argparse.ArgumentParser, *, shown: bool = True) -> None:
    p.add_argument(
        "--config",
        type=Path,
        action="append",
        metavar="FILE",
        help="a config file layered over ~/.config/kosmos/config.yaml and ./kosmos.yaml "
        "(repeatable: each over the one before)"
        if shown
        else argparse.SUPPRESS,
    )


def _chat_flags(p: argparse.ArgumentParser, whose: str = "") -> None:
    """--lang and --log, for `kosmos chat` and for the TUI's chat screen."""
    p.add_argument(
        "--lang",
        choices=["en", "ru"],
        help=f"language of the{whose} messages (default: from the locale)",
    )
    p.add_argument(
        "--log",
        type=Path,
        metavar="FILE",
        help=f"the{whose} detailed log (default: ~/.local/state/kosmos/chat/TIME.log)",
    )


def _fleet_pace_flags(g: argparse.ArgumentParser | argparse._ArgumentGroup, *, what: str) -> None:
    """--forks, --llm-concurrency and --canary, as `kosmos run` and `kosmos tui` take them."""
    g.add_argument(
        "--forks", type=_positive_int, default=10, metavar="N", help=f"{what} at once (default 10)"
    )
    g.add_argument(
        "--llm-concurrency",
        type=_positive_int,
        metavar="N",
        help="LLM requests at once across hosts (default: --forks)",
    )
    g.add_argument(
        "--canary",
        metavar="HOST",
        help="run the LLM on this host first, then replay its run on the others",
    )


class _Version(argparse.Action):
    """--version: the versions a bug report needs, read only when asked for."""

    def __call__(self, parser: argparse.ArgumentParser, *_: object, **__: object) -> None:
        from kosmos.about import version_text

        print(version_text())
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="kosmos",
        description="Run AI skills against servers: an LLM works through a SKILL.md step by step; "
        "kosmos runs the commands it proposes, with your approval.",
    )
    parser.add_argument(
        "--version",
        action=_Version,
        nargs=0,
        help="show kosmos's version, the Python's and the key libraries', and exit",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    run = sub.add_parser("run", help="run a skill on a host", description="Run a skill on a host.")
    run.add_argument(
        "skill",
        metavar="SKILL",
        nargs="?",
        help="skill name, or a path to a SKILL.md or its folder (optional with --resume)",
    )
    run.add_argument(
        "--host",
        action="append",
        default=[],
        metavar="TARGET",
        help="local (default), [user@]host[:port] or an ~/.ssh/config alias; "
        "repeat it to run on several hosts",
    )
    fleet = run.add_argument_group("fleets")
    fleet.add_argument(
        "--hosts",
        metavar="PATTERN",
        help="hosts whose ~/.ssh/config alias matches this glob ('web*'), "
        "or with -i an inventory group or pattern",
    )
    fleet.add_argument(
        "-i",
        "--inventory",
        type=Path,
        metavar="INVENTORY",
        help="an Ansible inventory file (INI or YAML) to take the hosts from",
    )
    _fleet_pace_flags(fleet, what="hosts")
    fleet.add_argument(
        "--canary-from",
        type=Path,
        metavar="TRANSCRIPT",
        help="replay this finished run of the skill (one host's transcript) on every host",
    )
    fleet.add_argument(
        "--shard",
        metavar="K/N",
        help="take only the K-th of N shares of the hosts (one of N parallel jobs)",
    )
    run.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="skill parameter (repeatable)",
    )
    run.add_argument("--prompt", help="your own first request instead of 'Execute skill: NAME'")
    run.add_argument(
        "--answer",
        action="append",
        default=[],
        metavar="TEXT",
        help="answer to the next [ASK] (repeatable, in order)",
    )
    run.add_argument("--non-interactive", action="store_true", help="never read the terminal (CI)")
    run.add_argument(
        "-y",
        "--yes",
        action="store_true",
        help="run proposed commands without asking (--policy auto; dangerous ones still ask)",
    )
    run.add_argument(
        "--policy",
        choices=["ask", "read-only", "auto", "locked"],
        help="ask for every command (default), run read-only ones unasked, run all unasked, "
        "or run all unasked inside the kernel lock (locked)",
    )
    run.add_argument(
        "--allow-dangerous",
        action="store_true",
        help="with --non-interactive: let dangerous commands run (they are refused otherwise)",
    )
    run.add_argument(
        "--json",
        action="store_true",
        help="one JSON event per line on stdout; the last is the result",
    )
    run.add_argument(
        "--max-steps", type=_positive_int, metavar="N", help="step limit (default 100)"
    )
    run.add_argument(
        "--command-timeout",
        type=_seconds,
        metavar="S",
        help="per-command timeout in seconds (default 60)",
    )
    run.add_argument(
        "--transcript", type=Path, metavar="PATH", help="where to append the JSONL transcript"
    )
    run.add_argument(
        "--memory",
        action="store_true",
        default=None,
        help="give the LLM kosmos-panel's memory prompt: the target OS, the memory directives "
        "and the notes in memory_dir (config: memory: true)",
    )
    _skills_dir_flag(run)
    rec = run.add_argument_group("recovery")
    rec.add_argument(
        "--resume",
        type=Path,
        metavar="TRANSCRIPT",
        help="continue a run that was stopped or killed, from its transcript; or finish a "
        "fleet from its run directory",
    )
    rec.add_argument(
        "--replay",
        metavar="TRANSCRIPT",
        help="play back a transcript's LLM replies instead of calling an LLM; 'bundled' "
        "replays the recording shipped with the skill",
    )
    rec.add_argument(
        "--replay-tolerant",
        action="store_true",
        help="with --replay: only warn where the output differs from the recording",
    )
    _llm_flags(run)

    tui = sub.add_parser(
        "tui",
        help="the interactive terminal UI",
        description="Choose hosts and skills, run them and approve each step in a terminal UI.",
    )
    tui.add_argument(
        "--host",
        action="append",
        default=[],
        metavar="TARGET",
        help="host selected at start: local (default), [user@]host[:port] or an ssh alias; "
        "repeat it to mark several hosts for a fleet run",
    )
    tui.add_argument(
        "--hosts",
        metavar="PATTERN",
        help="mark the ~/.ssh/config aliases matching this glob ('web*') for a fleet run, "
        "or with -i an inventory group or pattern",
    )
    tui.add_argument(
        "-i",
        "--inventory",
        type=Path,
        metavar="INVENTORY",
        help="an Ansible inventory file (INI or YAML) to mark the hosts from",
    )
    _fleet_pace_flags(tui, what="fleet hosts")
    tui.add_argument("--skill", metavar="NAME", help="skill selected at start")
    tui.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="fill the selected skill's parameter (repeatable)",
    )
    tui.add_argument(
        "--transcript", type=Path, metavar="PATH", help="the first run's JSONL transcript"
    )
    tui.add_argument(
        "--chat", action="store_true", help="open the chat screen (kosmos chat's agent) at start"
    )
    _chat_flags(tui, " chat screen's")
    _skills_dir_flag(tui)
    _llm_flags(tui)

    chat = sub.add_parser(
        "chat",
        help="talk to an agent whose tools are the skills and HTTP services",
        description="A line-mode chat: say what you need; kosmos picks a skill or an HTTP "
        "tool from kosmos.yaml, checks its parameters and runs it.",
    )
    chat.add_argument(
        "--host",
        default="local",
        metavar="TARGET",
        help="where skills run: local (default), [user@]host[:port] or an ~/.ssh/config alias",
    )
    _chat_flags(chat)
    chat.add_argument(
        "--verbose",
        action="store_true",
        help="also log every request and response body (secrets masked)",
    )
    _skills_dir_flag(chat)
    _llm_flags(chat)

    skills = sub.add_parser(
        "skills", help="list or show skills", description="List or show skills."
    )
    skills_sub = skills.add_subparsers(dest="skills_command", metavar="ACTION")
    sl = skills_sub.add_parser("list", help="list every skill and where it was found")
    ss = skills_sub.add_parser("show", help="show one skill: description, parameters, body")
    ss.add_argument("name", metavar="NAME")
    for p in (skills, sl, ss):
        host_help = (
            "also look for the skill on this host"
            if p is ss
            else "also list the skills on this host"
        )
        p.add_argument("--host", default=None, metavar="TARGET", help=host_help)
        _skills_dir_flag(p)
        _config_flag(p, shown=False)

    hosts = sub.add_parser(
        "hosts",
        help="list the hosts in ~/.ssh/config",
        description="List the host aliases in ~/.ssh/config (wildcards left out).",
    )
    hosts.add_argument(
        "--check",
        action="store_true",
        help="connect to each in parallel: reachability, auth, OS and latency",
    )
    _config_flag(hosts, shown=False)

    mcp = sub.add_parser(
        "mcp",
        help="serve kosmos's tools to an MCP client (Claude Code, Cursor, Goose...)",
        description="Serve hosts, skills, run_command, read_file and run_skill to an MCP "
        "client: on stdio (the client starts kosmos), or on streamable HTTP with --http. "
        "What the policy leaves to a person is asked through the client (elicitation).",
    )
    mcp.add_argument(
        "--http",
        metavar="ADDR:PORT",
        help="serve streamable HTTP on ADDR:PORT (a bare PORT: loopback) instead of stdio; "
        "clients must send the bearer token from $KOSMOS_MCP_TOKEN or --token-file",
    )
    mcp.add_argument(
        "--token-file", type=Path, metavar="FILE", help="the bearer token for --http, in a file"
    )
    mcp.add_argument(
        "--policy",
        choices=["ask", "read-only", "auto", "locked"],
        help="approval policy for every call (default: locked, look but touch nothing "
        "without a person's yes)",
    )
    mcp.add_argument(
        "-i", "--inventory", type=Path, metavar="INVENTORY", help="an Ansible inventory's hosts"
    )
    mcp.add_argument(
        "--forks", type=_positive_int, default=10, help="hosts a fleet run works on at once"
    )
    mcp.add_argument(
        "--transcript-dir", type=Path, metavar="DIR", help="where the calls' transcripts go"
    )
    mcp.add_argument("--log", type=Path, metavar="FILE", help="log here instead of stderr")
    mcp.add_argument("--verbose", action="store_true", help="log every request")
    _skills_dir_flag(mcp)
    _llm_flags(mcp)

    fleet_cmd = sub.add_parser(
        "fleet", help="work with fleet runs", description="Work with fleet runs."
    )
    fleet_sub = fleet_cmd.add_subparsers(dest="fleet_command", metavar="ACTION", required=True)
    merge = fleet_sub.add_parser(
        "merge",
        help="one summary of the run directories of a fleet's shards",
        description="Merge the run directories of a fleet's shards (--shard K/N) into one "
        "summary: the table, counts and exit code of a single fleet run.",
    )
    merge.add_argument("dirs", nargs="+", type=Path, metavar="DIR", help="a shard's run directory")
    merge.add_argument("--json", action="store_true", help="print the fleet result as JSON")
    log = sub.add_parser(
        "log",
        help="list recent runs, or show one run or one fleet host",
        description="List the runs kosmos recorded (newest first), or show one: its steps, "
        "commands, who decided each, outputs and report.",
    )
    log.add_argument(
        "run",
        nargs="?",
        metavar="RUN",
        help="a run's name in the list (or a unique part of it, such as its id) or its path",
    )
    log.add_argument("--host", metavar="NAME", help="of a fleet run, show this host's run")
    log.add_argument("--json", action="store_true", help="JSON: one object per line")
    log.add_argument(
        "-n", "--limit", type=_positive_int, default=20, help="runs to list (default 20)"
    )
    _config_flag(log, shown=False)
    config = sub.add_parser(
        "config",
        help="show the merged settings, and with --show-origin where each came from",
        description="Show the settings a run would use, merged from the defaults, "
        "~/.config/kosmos/config.yaml, ./kosmos.yaml, each --config, the environment and "
        "flags (secrets shown as ****).",
    )
    config.add_argument(
        "--show-origin",
        action="store_true",
        help="say where each value came from: default, a file, env NAME or --flag",
    )
    config.add_argument(
        "--json", action="store_true", help="one JSON object: the settings and their origins"
    )
    _llm_flags(config)
    # The innermost subcommand given is the one whose usage an unknown flag shows (`parse`).
    for command in (run, tui, chat, skills, sl, ss, hosts, mcp, fleet_cmd, merge, log, config):
        command.set_defaults(command_parser=command)
    return parser


def parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """`parser.parse_args(argv)`, except that an unknown flag is one line, named by the
    innermost subcommand given (`kosmos run: error: ...`), with the closest flag that
    subcommand has (`--hots`: did you mean --hosts?) instead of the whole usage."""
    args, extra = parser.parse_known_args(argv)
    if extra:
        owner = getattr(args, "command_parser", None) or parser
        message = f"unrecognized arguments: {' '.join(extra)}"
        flags = [a for a in extra if a.startswith("--")]
        known = [f for f in owner._option_string_actions if f.startswith("--")]
        close = difflib.get_close_matches(flags[0].split("=")[0], known, n=1) if flags else []
        hint = f"did you mean {close[0]}? " if close else ""
        owner.exit(2, f"{owner.prog}: error: {message}; {hint}({owner.prog} --help lists all)\n")
    return args
