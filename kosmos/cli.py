"""The `kosmos` command line: parse flags, resolve settings once, dispatch to a front end."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kosmos import __version__
from kosmos.config import Settings, load_settings
from kosmos.errors import EXIT_INTERRUPTED, KosmosError


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
        help="how the LLM answers each step: tags (seed 001, default), json, tools "
        "(function calling), auto (tools where the provider can, else tags)",
    )
    p.add_argument(
        "--config",
        type=Path,
        help="config file instead of ./kosmos.yaml and ~/.config/kosmos/config.yaml",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kosmos",
        description="Run AI skills against servers: an LLM works through a SKILL.md step by step; "
        "kosmos runs the commands it proposes, with your approval.",
    )
    parser.add_argument("--version", action="version", version=f"kosmos {__version__}")
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
    fleet.add_argument(
        "--forks", type=_positive_int, default=10, metavar="N", help="hosts at once (default 10)"
    )
    fleet.add_argument(
        "--llm-concurrency",
        type=_positive_int,
        metavar="N",
        help="LLM requests at once across hosts (default: --forks)",
    )
    fleet.add_argument(
        "--canary",
        metavar="HOST",
        help="run the LLM on this host first, then replay its run on the others",
    )
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
        choices=["ask", "read-only", "auto"],
        help="ask for every command (default), run read-only ones unasked, or run all unasked",
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
        help="continue a run that was stopped or killed, from its transcript",
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
    tui.add_argument(
        "--forks",
        type=_positive_int,
        default=10,
        metavar="N",
        help="fleet hosts at once (default 10)",
    )
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
        p.add_argument("--config", type=Path, help=argparse.SUPPRESS)

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
    hosts.add_argument("--config", type=Path, help=argparse.SUPPRESS)

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
    return parser


def _flags(args: argparse.Namespace) -> dict[str, Any]:
    """The settings given on the command line; absent flags are None and do not override."""
    return {
        "provider": getattr(args, "provider", None),
        "base_url": getattr(args, "base_url", None),
        "model": getattr(args, "model", None),
        "protocol": getattr(args, "protocol", None),
        "memory": getattr(args, "memory", None),
    }


def _settings(args: argparse.Namespace) -> Settings:
    return load_settings(
        _flags(args),
        env=os.environ,
        cwd=Path.cwd(),
        home=Path.home(),
        config_path=getattr(args, "config", None),
    )


def _run_frontend(request: Any, settings: Settings) -> Any:
    """A single-host run, or a fleet run when several hosts are asked for."""
    if request.fleet:
        from kosmos.frontends.fleet import FleetFrontend

        return FleetFrontend(request, settings, env=dict(os.environ), home=Path.home())
    from kosmos.frontends.run import RunFrontend

    return RunFrontend(request, settings, env=dict(os.environ), home=Path.home())


def _check_run_flags(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Flag combinations argparse cannot express; each error exits 2 with what to do."""
    if args.skill is None and args.resume is None:
        parser.error("run: name a SKILL, or pass --resume TRANSCRIPT to continue a run")
    if args.resume is not None and args.replay is not None:
        parser.error("run: --resume and --replay cannot be combined; use one of them")
    if args.replay_tolerant and args.replay is None:
        parser.error("run: --replay-tolerant only applies with --replay TRANSCRIPT")
    if args.resume is not None and (args.param or args.prompt):
        parser.error(
            "run: a resumed run keeps the parameters and prompt it started with; "
            "drop --param/--prompt, or start a new run"
        )


def _cmd_run(args: argparse.Namespace) -> int:
    from kosmos.frontends.run import RunRequest

    request = RunRequest(
        skill=args.skill,
        host=args.host[0] if len(args.host) == 1 else None,
        params=args.param,
        prompt=args.prompt,
        answers=args.answer,
        non_interactive=args.non_interactive,
        yes=args.yes,
        json=args.json,
        max_steps=args.max_steps,
        command_timeout=args.command_timeout,
        transcript=args.transcript,
        skills_dirs=args.skills_dir,
        policy=args.policy,
        allow_dangerous=args.allow_dangerous,
        resume=args.resume,
        replay=args.replay,
        replay_tolerant=args.replay_tolerant,
        protocol=args.protocol,
        hosts=args.host,
        hosts_pattern=args.hosts,
        inventory=args.inventory,
        forks=args.forks,
        llm_concurrency=args.llm_concurrency,
        canary=args.canary,
        canary_from=args.canary_from,
        shard=args.shard,
    )
    frontend = None
    try:
        settings = _settings(args)
        frontend = _run_frontend(request, settings)
        return asyncio.run(frontend.run())
    except KosmosError as e:
        if frontend is None:
            from kosmos.frontends.run import RunFrontend

            frontend = RunFrontend(request, Settings(), env={}, home=Path.home())
        return frontend.fail_early(e)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


def _cmd_chat(args: argparse.Namespace) -> int:
    from kosmos.frontends.chat import ChatFrontend, ChatRequest

    request = ChatRequest(
        host=args.host,
        lang=args.lang,
        log=args.log,
        verbose=args.verbose,
        skills_dirs=args.skills_dir,
    )
    frontend = ChatFrontend(request, _settings(args), env=dict(os.environ), home=Path.home())
    return asyncio.run(frontend.run())


def _cmd_skills(args: argparse.Namespace) -> int:
    from kosmos.frontends.skills import list_skills, show_skill

    settings = _settings(args)
    if args.skills_command == "show":
        return show_skill(args.name, settings, args.skills_dir, args.host)
    return list_skills(settings, args.skills_dir, args.host)


def _cmd_tui(args: argparse.Namespace) -> int:
    from kosmos.skills.params import parse_param_flags
    from kosmos.tui.app import run_tui

    parse_param_flags(args.param)  # a malformed --param fails before the screen opens
    fleet = []
    if len(args.host) > 1 or args.hosts or args.inventory:
        from kosmos.fleet.targets import resolve_hosts
        from kosmos.hosts.sshconfig import SSHConfigFile, local_user

        ssh_config = SSHConfigFile(Path.home() / ".ssh" / "config", local_user())
        fleet = resolve_hosts(
            args.host, args.hosts, inventory=args.inventory, ssh_config=ssh_config
        )
    return run_tui(
        _settings(args),
        host=args.host[0] if args.host else "local",
        fleet=fleet,
        forks=args.forks,
        skill=args.skill,
        params=args.param,
        transcript=args.transcript,
        skills_dirs=args.skills_dir,
        env=dict(os.environ),
        home=Path.home(),
        chat=args.chat,
        chat_lang=args.lang,
        chat_log=args.log,
    )


def _cmd_hosts(args: argparse.Namespace) -> int:
    from kosmos.frontends.hosts import hosts_command

    return hosts_command(_settings(args), home=Path.home(), check=args.check)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    if args.command == "run":
        _check_run_flags(parser, args)
    try:
        if args.command == "run":
            return _cmd_run(args)
        if args.command == "skills":
            return _cmd_skills(args)
        if args.command == "tui":
            return _cmd_tui(args)
        if args.command == "chat":
            return _cmd_chat(args)
        if args.command == "hosts":
            return _cmd_hosts(args)
        if args.command == "fleet":
            from kosmos.frontends.merge import merge_command

            return merge_command(args.dirs, json_out=args.json)
    except KosmosError as e:
        print(f"kosmos: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    parser.error(f"unknown command {args.command}")
    return 2
