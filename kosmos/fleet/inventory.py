"""Read an Ansible inventory (INI or YAML) directly: hosts, groups, children, connection vars.

Only what kosmos needs to reach a host is kept: `ansible_host`, `ansible_user` and
`ansible_port` (host vars win over group vars, a child group's over its parent's). No
Ansible install is needed. Host ranges such as `web[01:20].example.com` or `db-[a:c]` expand
as Ansible expands them.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import yaml

from kosmos.errors import UsageError

_RANGE = re.compile(r"\[([0-9a-zA-Z]+):([0-9a-zA-Z]+)(?::([0-9]+))?\]")


class InventoryError(UsageError):
    """An inventory file that cannot be read; the message starts with `path:line:`."""


@dataclass
class Group:
    name: str
    hosts: list[str] = field(default_factory=list)
    children: list[str] = field(default_factory=list)
    vars: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class InventoryHost:
    """One host as kosmos connects to it."""

    name: str
    address: str | None = None
    user: str | None = None
    port: int | None = None

    @property
    def target(self) -> str:
        """The TARGET for the runner: `[user@]host[:port]`, or the bare name (an ssh alias)."""
        host = self.address or self.name
        if ":" in host and self.port is not None:
            host = f"[{host}]"
        user = f"{self.user}@" if self.user else ""
        port = f":{self.port}" if self.port is not None else ""
        return f"{user}{host}{port}"


@dataclass
class Inventory:
    """Groups (always with `all` and `ungrouped`) and the hosts' own vars, in file order."""

    path: str
    groups: dict[str, Group] = field(default_factory=dict)
    host_vars: dict[str, dict[str, str]] = field(default_factory=dict)

    def group(self, name: str) -> Group:
        if name not in self.groups:
            self.groups[name] = Group(name)
        return self.groups[name]

    def add_host(self, group: str, name: str, variables: dict[str, str]) -> None:
        g = self.group(group)
        if name not in g.hosts:
            g.hosts.append(name)
        self.host_vars.setdefault(name, {}).update(variables)

    @property
    def hosts(self) -> list[str]:
        return list(self.host_vars)

    def members(self, group: str, _seen: frozenset[str] = frozenset()) -> list[str]:
        """Every host of a group and of its children, in file order, each once."""
        if group == "all":
            return self.hosts
        g = self.groups.get(group)
        if g is None or group in _seen:
            return []
        found = dict.fromkeys(g.hosts)
        for child in g.children:
            found.update(dict.fromkeys(self.members(child, _seen | {group})))
        return [h for h in self.hosts if h in found]

    def _ancestry(self) -> list[str]:
        """Groups from the most general (`all`) to the most specific, for var precedence."""
        depth: dict[str, int] = {}

        def level(name: str, seen: frozenset[str]) -> int:
            if name in depth:
                return depth[name]
            parents = [g.name for g in self.groups.values() if name in g.children]
            parents = [p for p in parents if p not in seen]
            d = 1 + max((level(p, seen | {name}) for p in parents), default=0)
            depth[name] = d
            return d

        names = [n for n in self.groups if n != "all"]
        return ["all", *sorted(names, key=lambda n: (level(n, frozenset()), n))]

    def resolve(self, name: str) -> InventoryHost:
        """A host with its connection vars after group and host precedence."""
        merged: dict[str, str] = {}
        for group in self._ancestry():
            if group in self.groups and name in self.members(group):
                merged.update(self.groups[group].vars)
        merged.update(self.host_vars.get(name, {}))
        port = merged.get("ansible_port")
        if port is not None and not str(port).isdigit():
            raise InventoryError(
                f"{self.path}: host {name}: ansible_port must be a number, got {port!r}"
            )
        return InventoryHost(
            name=name,
            address=merged.get("ansible_host") or None,
            user=merged.get("ansible_user") or None,
            port=int(port) if port is not None else None,
        )

    def select(self, pattern: str) -> list[str]:
        """Hosts matching an Ansible host pattern, in file order.

        `all` or `*`, group and host names, globs (`web*`), `~regex`, joined by `:` or `,`
        (union); `&name` intersects and `!name` excludes.
        """
        terms = [t.strip() for t in re.split(r"[,:]", pattern) if t.strip()]
        if not terms:
            raise UsageError(f"--hosts {pattern!r}: empty host pattern; name a group or host")
        chosen: dict[str, None] = {}
        for term in terms:
            if term.startswith("!"):
                drop = set(self._match(term[1:]))
                chosen = {h: None for h in chosen if h not in drop}
            elif term.startswith("&"):
                keep = set(self._match(term[1:]))
                chosen = {h: None for h in chosen if h in keep}
            else:
                chosen.update(dict.fromkeys(self._match(term)))
        return [h for h in self.hosts if h in chosen]

    def _match(self, term: str) -> list[str]:
        if term in ("all", "*"):
            return self.hosts
        if term in self.groups:
            return self.members(term)
        if term.startswith("~"):
            try:
                rx = re.compile(term[1:])
            except re.error as e:
                raise UsageError(f"--hosts {term!r}: bad regular expression: {e}") from e
            return [h for h in self.hosts if rx.search(h)]
        found: dict[str, None] = {}
        for g in self.groups:
            if fnmatchcase(g, term):
                found.update(dict.fromkeys(self.members(g)))
        found.update(dict.fromkeys(h for h in self.hosts if fnmatchcase(h, term)))
        return list(found)


def expand_range(pattern: str) -> list[str]:
    """`web[01:03]` -> web01, web02, web03; `db-[a:c]` -> db-a, db-b, db-c."""
    m = _RANGE.search(pattern)
    if m is None:
        return [pattern]
    start, end, step = m.group(1), m.group(2), int(m.group(3) or 1)
    head, tail = pattern[: m.start()], pattern[m.end() :]
    if start.isdigit() and end.isdigit():
        width = len(start) if start.startswith("0") and len(start) > 1 else 0
        items = [str(i).zfill(width) for i in range(int(start), int(end) + 1, step)]
    elif len(start) == 1 and len(end) == 1 and start.isalpha() and end.isalpha():
        items = [chr(c) for c in range(ord(start), ord(end) + 1, step)]
    else:
        raise ValueError(f"bad host range [{m.group(0)[1:-1]}]")
    if not items:
        raise ValueError(f"empty host range [{m.group(0)[1:-1]}]")
    return [name for item in items for name in expand_range(head + item + tail)]


def load_inventory(path: Path) -> Inventory:
    """Parse an inventory file; YAML when it looks like YAML, else INI (as Ansible guesses)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise InventoryError(f"{path}: cannot read the inventory: {e.strerror}; check -i") from e
    if path.suffix in (".yml", ".yaml") or _looks_like_yaml(text):
        inv = _parse_yaml(text, str(path))
    else:
        inv = _parse_ini(text, str(path))
    inv.group("all")
    ungrouped = inv.group("ungrouped")
    grouped = {
        h for g in inv.groups.values() if g.name not in ("all", "ungrouped") for h in g.hosts
    }
    # As in Ansible: a host in no group but `all` (or `ungrouped`) is ungrouped.
    ungrouped.hosts = [h for h in inv.hosts if h not in grouped]
    return inv


def _looks_like_yaml(text: str) -> bool:
    for line in text.splitlines():
        s = line.strip()
        if not s or s.startswith(("#", ";")):
            continue
        return s == "---" or (not s.startswith("[") and s.endswith(":"))
    return False


def _parse_vars(words: list[str], where: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for w in words:
        key, sep, value = w.partition("=")
        if not sep or not key:
            raise InventoryError(f"{where}: expected key=value, got {w!r}")
        out[key] = value
    return out


def _parse_ini(text: str, path: str) -> Inventory:
    inv = Inventory(path)
    section, kind = "ungrouped", "hosts"
    for lineno, raw in enumerate(text.splitlines(), 1):
        where = f"{path}:{lineno}"
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            if not line.endswith("]"):
                raise InventoryError(f"{where}: section header without a closing ']': {line!r}")
            name, _, kind = line[1:-1].partition(":")
            kind = kind or "hosts"
            if kind not in ("hosts", "children", "vars") or not name:
                raise InventoryError(
                    f"{where}: unknown section {line!r}; use [group], [group:children] "
                    "or [group:vars]"
                )
            section = name
            inv.group(section)
            continue
        try:
            words = shlex.split(line, comments=True)
        except ValueError as e:
            raise InventoryError(f"{where}: {e}") from e
        if not words:
            continue
        if kind == "children":
            for child in words:
                inv.group(child)
                if child not in inv.group(section).children:
                    inv.group(section).children.append(child)
        elif kind == "vars":
            inv.group(section).vars.update(_parse_vars(["".join(words)], where))
        else:
            try:
                names = expand_range(words[0])
            except ValueError as e:
                raise InventoryError(f"{where}: {e}") from e
            variables = _parse_vars(words[1:], where)
            for name in names:
                # `host:2222` in an INI inventory is Ansible's short form of ansible_port.
                m = re.fullmatch(r"([^:]+):([0-9]+)", name)
                if m:
                    name = m.group(1)
                    variables = {"ansible_port": m.group(2), **variables}
                inv.add_host(section, name, variables)
    return inv


def _parse_yaml(text: str, path: str) -> Inventory:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else path
        raise InventoryError(f"{where}: not valid YAML: {getattr(e, 'problem', e)}") from e
    inv = Inventory(path)
    if data is None:
        return inv
    if not isinstance(data, dict):
        raise InventoryError(f"{path}: expected a mapping of groups (all: ...)")
    for name, body in data.items():
        _yaml_group(inv, str(name), body, path)
    return inv


def _scalars(value: Any, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InventoryError(f"{where}: expected a mapping of variables")
    return {str(k): str(v) for k, v in value.items() if not isinstance(v, dict | list)}


def _yaml_group(inv: Inventory, name: str, body: Any, path: str) -> None:
    group = inv.group(name)
    if body is None:
        return
    if not isinstance(body, dict):
        raise InventoryError(f"{path}: group {name}: expected hosts:, children: or vars:")
    unknown = set(body) - {"hosts", "children", "vars"}
    if unknown:
        raise InventoryError(
            f"{path}: group {name}: unknown key {sorted(unknown)[0]!r}; "
            "a group has hosts:, children: and vars:"
        )
    group.vars.update(_scalars(body.get("vars"), f"{path}: group {name} vars"))
    hosts = body.get("hosts") or {}
    if not isinstance(hosts, dict):
        raise InventoryError(f"{path}: group {name}: hosts: must be a mapping of host names")
    for pattern, variables in hosts.items():
        try:
            names = expand_range(str(pattern))
        except ValueError as e:
            raise InventoryError(f"{path}: group {name}: {e}") from e
        for host in names:
            inv.add_host(name, host, _scalars(variables, f"{path}: host {host}"))
    children = body.get("children") or {}
    if not isinstance(children, dict):
        raise InventoryError(f"{path}: group {name}: children: must be a mapping of groups")
    for child, child_body in children.items():
        if str(child) not in group.children:
            group.children.append(str(child))
        _yaml_group(inv, str(child), child_body, path)
