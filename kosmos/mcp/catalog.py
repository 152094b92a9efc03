"""`hosts` and `skills`: what kosmos knows, as structured lists for an MCP client.

The hosts are `local`, the aliases of ~/.ssh/config, the inventory's hosts (`--inventory`)
and the config's `hosts:` section, each once, with the policy calls on it run under; asked
to check, kosmos connects to each as `kosmos hosts --check` does, without asking anything.
"""

from __future__ import annotations

import asyncio

from kosmos.config import Settings
from kosmos.engine.approval import Policy
from kosmos.engine.guard import visible
from kosmos.mcp.models import (
    HostCheckInfo,
    HostInfo,
    HostsResult,
    SkillInfo,
    SkillParamInfo,
    SkillsResult,
)
from kosmos.mcp.options import McpOptions
from kosmos.runs.hostcheck import CHECK_FORKS, HostCheck, check_host
from kosmos.runs.policy import resolve_policy
from kosmos.runs.skills import skill_library
from kosmos.skills.model import Skill


def known_hosts(options: McpOptions) -> list[HostInfo]:
    """Every host kosmos knows, each once, in the order: local, ssh_config, inventory, config."""
    found: dict[str, HostInfo] = {}

    def add(name: str, target: str, source: str) -> None:
        host = found.get(name)
        if host is None:
            host = found[name] = HostInfo(
                name=name,
                target=target,
                sources=[],
                policy=_policy(options.settings, name, target, options.policy),
                lock=_lock(options.settings, name, target),
            )
        if source not in host.sources:
            host.sources.append(source)

    add("local", "local", "builtin")
    for alias in options.ssh_config.aliases():
        add(alias, alias, "ssh_config")
    inv = options.hosts_inventory
    if inv is not None:
        for name in inv.hosts:
            add(name, inv.resolve(name).target, "inventory")
    for name in options.settings.hosts:
        add(name, name, "config")
    return list(found.values())


def _policy(settings: Settings, name: str, target: str, flag: Policy) -> str:
    policy, _ = resolve_policy(settings, name, flag=flag, target=target)
    return policy


def _lock(settings: Settings, name: str, target: str) -> str:
    pinned = settings.host(name) or settings.host(target)
    return pinned[1].lock if pinned is not None else "optional"


async def check_hosts(options: McpOptions, hosts: list[HostInfo]) -> None:
    """Fill each SSH host's `check` by connecting to it (at most CHECK_FORKS at once)."""
    slots = asyncio.Semaphore(CHECK_FORKS)

    async def one(host: HostInfo) -> None:
        if host.target == "local":
            host.check = HostCheckInfo(reachable="yes", trust="ok", os="this machine", lock="-")
            return
        async with slots:
            row = await check_host(host.target, options.settings, ssh_config=options.ssh_config)
        host.check = _check_info(row)

    await asyncio.gather(*(one(h) for h in hosts))


def _check_info(row: HostCheck) -> HostCheckInfo:
    return HostCheckInfo(
        reachable=row.reachable,
        trust=row.auth,
        os=visible(row.os, one_line=True),  # the host's words
        lock=row.lock,
        latency_ms=round(row.latency_ms, 1) if row.latency_ms is not None else None,
        error=visible(row.error),
    )


async def list_hosts(options: McpOptions, *, check: bool) -> HostsResult:
    hosts = known_hosts(options)
    if check:
        await check_hosts(options, hosts)
    return HostsResult(hosts=hosts)


def skill_info(skill: Skill) -> SkillInfo:
    return SkillInfo(
        name=skill.name,
        description=visible(skill.summary),  # a file's words, as `kosmos skills` draws them
        source=skill.source,
        path=skill.path,
        params=[
            SkillParamInfo(
                name=p.name,
                description=p.description,
                required=p.required,
                default=p.default,
                choices=p.choices,
                max_length=p.max_length,
            )
            for p in skill.params
        ],
    )


def list_skills(options: McpOptions) -> SkillsResult:
    """The local skill library: `--skills-dir` folders, the project's, the user's, bundled."""
    library = skill_library(options.settings, options.skills_dirs, options.env, options.home)
    skills = library.list()
    problems = [*library.errors, *(w for s in skills for w in s.warnings)]
    return SkillsResult(
        skills=[skill_info(s) for s in skills], problems=[visible(p) for p in problems]
    )
