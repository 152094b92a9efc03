"""~/.ssh/config, read once per run: every host's settings, and the aliases it names.

A fleet's config names every host (`Host web001` ... `Host web999`, a few lines each).
asyncssh reads and splits the whole file for each host it resolves, and again inside each
connect: 1,000 hosts cost a million lines split. `SSHConfigFile` reads and splits each file
(and each file it `Include`s) once, again only when one of them changes, and answers a
host's settings by replaying those lines through asyncssh's own parser: the same keywords,
`Host`/`Match` rules, `Include` and `%`-tokens, with `Host` patterns matched from a cache.
The settings object it returns is what `asyncssh.connect` takes in place of reading the file.

Reading and splitting the files, and the aliases they name, take no SSH library: the TUI's
screen lists the hosts without loading asyncssh (and the cryptography under it), which a
host's settings (`host`) load when first asked for.
"""

from __future__ import annotations

import getpass
import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kosmos.hosts.known_hosts import KnownHostsCache
from kosmos.hosts.passphrases import EncryptedKeys

if TYPE_CHECKING:
    from kosmos.hosts.keywords import HostConfig

__all__ = ["ConfigParseError", "SSHConfigFile", "local_user"]

# How asyncssh's parser splits a line (its SSHConfig's `_conditionals` and `_no_split`, which a
# test holds these to): the keywords whose `=` is a word of their arguments, and those whose
# arguments are kept as one string.
CONDITIONALS = frozenset({"host", "match"})
NO_SPLIT = frozenset({"proxycommand", "remotecommand"})


class ConfigParseError(ValueError):
    """A line of the config that cannot be read: "PATH line N: what is wrong"."""


Token = tuple[int, str, tuple[str, ...]]


def local_user() -> str:
    """This machine's user name, as ssh_config's `%u` and `Match localuser` see it."""
    try:
        return getpass.getuser()
    except Exception:  # no name for this uid (a bare container): use the number
        return str(os.getuid())


def _split(
    path: Path, line_no: int, line: str, conditionals: frozenset[str]
) -> tuple[str, list[str]]:
    """One line as asyncssh splits it: (lower-case keyword, its arguments)."""
    try:
        split_args = shlex.split(line)
    except ValueError as e:
        raise ConfigParseError(f"{path} line {line_no}: {e}") from None
    args: list[str] = []
    loption = ""
    allow_equal = True
    for i, arg in enumerate(split_args, 1):
        if arg.startswith("="):
            if len(arg) > 1:
                args.append(arg[1:])
        elif not allow_equal:
            args.extend(split_args[i - 1 :])
            break
        elif arg.endswith("="):
            args.append(arg[:-1])
        elif "=" in arg:
            arg, val = arg.split("=", 1)
            args.append(arg)
            args.append(val)
        else:
            args.append(arg)
        if i == 1:
            loption = args.pop(0).lower()
            allow_equal = loption in conditionals
    return loption, args


@dataclass
class _File:
    stamp: tuple[int, int, int]
    tokens: list[Token]
    # Where a block may start that takes a given host: each Match line and Host line with a
    # wildcard or a negation (`open`), and the Host lines naming it outright (`named`).
    open: list[int]
    named: dict[str, list[int]]
    starts: dict[str, list[int]]  # per host, the two merged


class SSHConfigFile:
    """One run's view of ~/.ssh/config: split once, each host's settings built once; with the
    run's cache of the known_hosts files the hosts' settings name (`known_hosts`) and of which
    key files need a passphrase (`encrypted_keys`)."""

    def __init__(self, path: Path, local_user: str) -> None:
        self.path = path
        self.local_user = local_user
        self._files: dict[Path, _File] = {}
        self._hosts: dict[tuple[str, str | None, int | None], HostConfig] = {}
        self._patterns: dict[str, Any] = {}
        self._includes: dict[tuple[str, ...], list[Path]] = {}
        self.known_hosts = KnownHostsCache()
        self.encrypted_keys = EncryptedKeys()
        self._existed = os.path.lexists(path)

    # -- the files ---------------------------------------------------------------------------

    @property
    def paths(self) -> list[str]:
        # Not is_file(): a config that is there but cannot be read (a link loop, a folder) is
        # an error to report, not a missing file to connect without.
        return [str(self.path)] if os.path.lexists(self.path) else []

    def _stamp(self, path: Path) -> tuple[int, int, int]:
        st = path.stat()
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    def tokens(self, path: Path) -> list[Token]:
        """The lines of one config file, split as asyncssh splits them (read once)."""
        cached = self._files.get(path)
        if cached is not None:
            return cached.tokens
        stamp = self._stamp(path)
        tokens: list[Token] = []
        conditionals = CONDITIONALS
        with open(path) as file:
            for line_no, raw in enumerate(file, 1):
                line = raw.strip()
                if not line or line[0] == "#":
                    continue
                loption, args = _split(path, line_no, line, conditionals)
                if loption in NO_SPLIT:
                    args = [line[len(loption) :].strip()]
                tokens.append((line_no, loption, tuple(args)))
        opened: list[int] = []
        named: dict[str, list[int]] = {}
        for i, (_, loption, words) in enumerate(tokens):
            if loption == "host" and not any(c in a for a in words for c in "*?!"):
                for name in ",".join(words).split(","):
                    named.setdefault(name, []).append(i)
            elif loption in conditionals:
                opened.append(i)
        self._files[path] = _File(stamp, tokens, opened, named, {})
        return tokens

    def starts(self, path: Path, host: str) -> list[int]:
        cached = self._files[path]
        found = cached.starts.get(host)
        if found is None:
            found = sorted({*cached.open, *cached.named.get(host, ())})
            cached.starts[host] = found
        return found

    def _fresh(self) -> None:
        """Forget what was read once a file changed, or the config appeared or went."""
        exists = os.path.lexists(self.path)
        stale = exists != self._existed
        for path, cached in self._files.items():
            if stale:
                break
            try:
                stale = self._stamp(path) != cached.stamp
            except OSError:
                stale = True
        if stale:
            self._files.clear()
            self._hosts.clear()
            self._includes.clear()
        self._existed = exists

    def included(self, args: tuple[str, ...]) -> list[Path]:
        """The files an `Include` line names, found as asyncssh finds them (once per run)."""
        cached = self._includes.get(args)
        if cached is not None:
            return cached
        found: list[Path] = []
        for pattern in args:
            path = Path(pattern).expanduser()
            if path.anchor:
                pattern, path = str(Path(*path.parts[1:])), Path(path.anchor)
            else:
                path = self.path.parent
            found += [p for p in path.glob(pattern) if p.is_file()]
        self._includes[args] = found
        return found

    # -- what callers ask ----------------------------------------------------------------------

    def host(self, host: str, user: str | None = None, port: int | None = None) -> HostConfig:
        """The settings for one host (raises OSError or ConfigParseError for a bad file)."""
        self._fresh()
        key = (host, user, port)
        config = self._hosts.get(key)
        if config is None:
            # asyncssh's parser, imported when a host's settings are first asked for.
            import kosmos.hosts.sshlib  # noqa: F401 (asyncssh without a compiler: see there)

            from asyncssh.config import ConfigParseError as SSHConfigParseError

            from kosmos.hosts.keywords import HostConfig

            config = HostConfig(
                self, None, False, False, False, self.local_user, user or (), host, port or ()
            )
            try:
                for path in self.paths:
                    config.parse(Path(path))
            except SSHConfigParseError as e:
                raise ConfigParseError(str(e)) from None
            config.loaded = bool(self.paths)
            self._hosts[key] = config
        return config

    def aliases(self) -> list[str]:
        """The `Host` names of the config and every file it includes, wildcards left out, in
        order, once each; a file that cannot be read or split adds none."""
        self._fresh()
        names: list[str] = []
        for path in self.paths:
            self._collect(Path(path), names, set())
        return list(dict.fromkeys(names))

    def _collect(self, path: Path, names: list[str], seen: set[Path]) -> None:
        if path in seen or len(seen) > 64:
            return
        seen.add(path)
        try:
            tokens = self.tokens(path)
        except (OSError, ConfigParseError):
            return
        for _, loption, args in tokens:
            if loption == "host":
                names += [a for a in args if not any(c in a for c in "*?!")]
            elif loption == "include":
                for included in self.included(args):
                    self._collect(included, names, seen)

    def matches(self, patterns: str, host: str) -> bool:
        """Whether a `Host` line's patterns take `host` (a cache of asyncssh's own matcher)."""
        matcher = self._patterns.get(patterns)
        if matcher is None:
            if any(c in patterns for c in "*?!"):
                import kosmos.hosts.sshlib  # noqa: F401 (asyncssh without a compiler: see there)

                from asyncssh.pattern import WildcardPatternList

                matcher = WildcardPatternList(patterns)
            else:
                matcher = frozenset(patterns.split(","))
            self._patterns[patterns] = matcher
        if isinstance(matcher, frozenset):
            return host in matcher
        return bool(matcher.matches(host))
