"""The `kosmos` command line: parse flags, resolve settings once, dispatch to a front end."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kosmos.cli_args import build_parser, parse
from kosmos.errors import EXIT_INTERRUPTED, EXIT_PIPE, KosmosError, UsageError
from kosmos.heap import settle
from kosmos.hosts.environment import hide_keys

if TYPE_CHECKING:
    from kosmos.config import Settings
    from kosmos.config_layers import Key, Origin

__all__ = ["build_parser", "main"]


def _flags(args: argparse.Namespace) -> dict[str, Any]:
    """The settings given on the command line; absent flags are None and do not override."""
    return {
        "provider": getattr(args, "provider", None),
        "base_url": getattr(args, "base_url", None),
        "model": getattr(args, "model", None),
        "protocol": getattr(args, "protocol", None),
        "memory": getattr(args, "memory", None),
    }


def _settings(
    args: argparse.Namespace, *, llm: bool = True, origins: dict[Key, Origin] | None = None
) -> Settings:
    """The settings, resolved once. `llm`: the command talks to the LLM, so its key is read
    (api_key_file, api_key_command), and a key found in the environment is said once.
    `origins` receives where each value came from."""
    from kosmos.config import load_settings
    from kosmos.config_keys import key_notice

    settings = load_settings(
        _flags(args),
        env=os.environ,
        cwd=Path.cwd(),
        home=Path.home(),
        configs=getattr(args, "config", None) or (),
        resolve_key=llm,
        origins=origins,
    )
    notice = key_notice(settings.api_key_from) if llm else None
    if notice:
        print(notice, file=sys.stderr, flush=True)
    return settings


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


def _check_skills_dirs(args: argparse.Namespace) -> None:
    """A --skills-dir that is not there is a typo to say, not a place to find nothing in."""
    for path in getattr(args, "skills_dir", None) or ():
        if not path.is_dir():
            what = "not a directory" if path.exists() else "no such directory"
            raise UsageError(
                f"--skills-dir {path}: {what}; give a directory that holds skill folders "
                "(each with a SKILL.md)"
            )


def _non_interactive(args: argparse.Namespace) -> bool:
    """`--non-interactive`, or no one to answer on standard input (kosmos.frontends.stdin)."""
    if args.non_interactive:
        return True
    from kosmos.frontends.stdin import NOTICE, nobody_to_ask

    if nobody_to_ask(sys.stdin):
        print(NOTICE, file=sys.stderr, flush=True)
        return True
    return False


def _cmd_run(args: argparse.Namespace) -> int:
    from kosmos.frontends.request import RunRequest

    request = RunRequest(
        skill=args.skill,
        host=args.host[0] if len(args.host) == 1 else None,
        params=args.param,
        prompt=args.prompt,
        answers=args.answer,
        non_interactive=_non_interactive(args),
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
        _check_skills_dirs(args)
        settings = _settings(args)
        frontend = _run_frontend(request, settings)
        import asyncio

        settle()
        return asyncio.run(frontend.run())
    except KosmosError as e:
        if frontend is None:
            from kosmos.config import Settings
            from kosmos.frontends.run import RunFrontend

            frontend = RunFrontend(request, Settings(), env={}, home=Path.home())
        return frontend.fail_early(e)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


def _cmd_chat(args: argparse.Namespace) -> int:
    from kosmos.frontends.chat import ChatFrontend, ChatRequest

    _check_skills_dirs(args)
    request = ChatRequest(
        host=args.host,
        lang=args.lang,
        log=args.log,
        verbose=args.verbose,
        skills_dirs=args.skills_dir,
    )
    frontend = ChatFrontend(request, _settings(args), env=dict(os.environ), home=Path.home())
    import asyncio

    settle()
    return asyncio.run(frontend.run())


def _cmd_skills(args: argparse.Namespace) -> int:
    from kosmos.frontends.skills import list_skills, show_skill

    _check_skills_dirs(args)
    settings = _settings(args, llm=False)
    if args.skills_command == "show":
        return show_skill(args.name, settings, args.skills_dir, args.host)
    return list_skills(settings, args.skills_dir, args.host)


def _cmd_tui(args: argparse.Namespace) -> int:
    from kosmos.skills.params import parse_param_flags

    parse_param_flags(args.param)  # a malformed --param fails before the screen opens
    _check_skills_dirs(args)
    fleet = []
    if len(args.host) > 1 or args.hosts or args.inventory:
        from kosmos.fleet.targets import resolve_hosts
        from kosmos.hosts.sshconfig import SSHConfigFile, local_user

        ssh_config = SSHConfigFile(Path.home() / ".ssh" / "config", local_user())
        fleet = resolve_hosts(
            args.host, args.hosts, inventory=args.inventory, ssh_config=ssh_config
        )
    names = [h.name for h in fleet]
    if args.canary is not None and fleet and args.canary not in names:
        raise UsageError(
            f"--canary {args.canary}: not one of the marked hosts ({', '.join(names[:10])}); "
            "pick one of them"
        )
    settings = _settings(args)
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        # Without one, Textual would wait for keys that never come, at full CPU.
        raise UsageError(
            "kosmos tui needs a terminal on its standard input and output; run it in one "
            "(ssh -t for a remote shell), or use `kosmos run` in scripts and pipes"
        )
    from kosmos.tui.app import run_tui

    settle()
    return run_tui(
        settings,
        host=args.host[0] if args.host else "local",
        fleet=fleet,
        forks=args.forks,
        llm_concurrency=args.llm_concurrency,
        canary=args.canary,
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

    return hosts_command(_settings(args, llm=False), home=Path.home(), check=args.check)


def _cmd_log(args: argparse.Namespace) -> int:
    from kosmos.frontends.log import log_command

    directory = _settings(args, llm=False).transcript_dir
    assert directory is not None  # settings always resolve it
    return log_command(directory, args.run, host=args.host, json_out=args.json, limit=args.limit)


def _cmd_config(args: argparse.Namespace) -> int:
    from kosmos.frontends.config_view import config_command

    # No key command is run and no key file read only to show where they are named.
    origins: dict[Key, Origin] = {}
    settings = _settings(args, llm=False, origins=origins)
    return config_command(settings, origins, show_origin=args.show_origin, json_out=args.json)


def _output_closed() -> int:
    """The reader of stdout (or stderr) went away (`kosmos skills list | head -1`): exit
    quietly with 141, as a program that SIGPIPE ends does."""
    from kosmos.frontends.console import silence

    silence(sys.stdout)
    silence(sys.stderr)
    return EXIT_PIPE


def _cmd_mcp(args: argparse.Namespace) -> int:
    from kosmos.mcp.command import McpRequest, mcp_command

    request = McpRequest(
        http=args.http,
        token_file=args.token_file,
        policy=args.policy,
        skills_dirs=args.skills_dir,
        inventory=args.inventory,
        forks=args.forks,
        log=args.log,
        verbose=args.verbose,
        transcript_dir=args.transcript_dir,
    )
    settings = _settings(args)
    settle()
    return mcp_command(request, settings, env=os.environ, home=Path.home())


def main(argv: Sequence[str] | None = None) -> int:
    # A command this kosmos runs on `local` could read the keys it was started with in
    # /proc/PID/environ.
    hide_keys()
    try:
        return _main(argv)
    except BrokenPipeError:
        return _output_closed()


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parse(parser, argv)
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
        if args.command == "mcp":
            return _cmd_mcp(args)
        if args.command == "fleet":
            from kosmos.frontends.merge import merge_command
            from kosmos.seal import key_bytes

            key = key_bytes(_settings(args, llm=False).seal_key)
            return merge_command(args.dirs, json_out=args.json, key=key)
        if args.command == "log":
            return _cmd_log(args)
        if args.command == "config":
            return _cmd_config(args)
    except KosmosError as e:
        from kosmos.engine.guard import visible

        print(f"kosmos: {visible(str(e))}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    parser.error(f"unknown command {args.command}")
    return 2
