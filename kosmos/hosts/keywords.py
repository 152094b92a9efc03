"""The ssh_config keywords kosmos honours, as tables, and the parser that reads them all.

asyncssh's client config parser reads most of them and skips keywords it does not know
(StrictHostKeyChecking, HashKnownHosts); `ClientConfig` adds handlers for those to its
table, so one parse of ~/.ssh/config answers every question kosmos asks about a host.
`HostConfig` is that parser reading the lines `sshconfig.SSHConfigFile` has already split.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

import kosmos.hosts.sshlib  # noqa: F401 (asyncssh without a compiler: see there)

from asyncssh.config import SSHClientConfig, SSHConfig
from asyncssh.connection import SSHClientConnectionOptions

# What kosmos does with each keyword it honours: the README's table, word for word (a test
# keeps the two in step). Keywords not listed are read by asyncssh as it reads them.
HONOURED: dict[str, str] = {
    "HostName, User, Port": "where to connect and as whom, as `ssh`",
    "ProxyJump": "connects through each hop in turn; every hop gets its own keywords below",
    "UserKnownHostsFile": (
        "the known_hosts files that vouch for host keys (default `~/.ssh/known_hosts "
        "~/.ssh/known_hosts2`; several allowed, `~` and `%d %u %h %n %p %r %k` expanded, "
        "`none` for none); a key kosmos adds goes to the first"
    ),
    "GlobalKnownHostsFile": (
        "more files that vouch for keys, never written (default `/etc/ssh/ssh_known_hosts "
        "/etc/ssh/ssh_known_hosts2`; `none`)"
    ),
    "StrictHostKeyChecking": (
        "`ask` (the default): a terminal asks about a new key, a headless run refuses it; "
        "`yes`: a new key is refused, even in a terminal; `accept-new`: a new key is "
        "added, headless too, with a warning in the transcript; `no`/`off`: as "
        "`accept-new` (a changed key is still refused)"
    ),
    "HashKnownHosts": "a key kosmos adds is written hashed (`|1|...`)",
    "HostKeyAlias": "the name the host's key is looked up and added under",
    "IdentityFile, CertificateFile": (
        "the keys offered, with their certificates (`CertificateFile`, or `KEY-cert.pub` "
        "beside the key), also when kosmos asks for a key's passphrase"
    ),
    "IdentitiesOnly": "offers only the configured keys, also from the agent",
    "IdentityAgent": (
        "the agent's socket: a path, `SSH_AUTH_SOCK`, `$VARIABLE`, or `none` for no agent at all"
    ),
}

# What known_hosts files a host's key is checked against when ssh_config names none.
DEFAULT_USER_KNOWN_HOSTS = ("~/.ssh/known_hosts", "~/.ssh/known_hosts2")
DEFAULT_GLOBAL_KNOWN_HOSTS = ("/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2")

Strict = Literal["yes", "ask", "accept-new", "no"]
DEFAULT_STRICT: Strict = "ask"
# StrictHostKeyChecking's values as OpenSSH reads them (readconf.c), each to its meaning.
STRICT_VALUES: dict[str, Strict] = {
    "yes": "yes",
    "true": "yes",
    "ask": "ask",
    "accept-new": "accept-new",
    "no": "no",
    "off": "no",
    "false": "no",
}

# OpenSSH's default HostKeyAlgorithms (9.2), in its order of preference: with nothing known
# about a host, the key it is offered first is the one it records.
OPENSSH_HOST_KEY_ALGS = (
    "ssh-ed25519-cert-v01@openssh.com",
    "ecdsa-sha2-nistp256-cert-v01@openssh.com",
    "ecdsa-sha2-nistp384-cert-v01@openssh.com",
    "ecdsa-sha2-nistp521-cert-v01@openssh.com",
    "sk-ssh-ed25519-cert-v01@openssh.com",
    "sk-ecdsa-sha2-nistp256-cert-v01@openssh.com",
    "rsa-sha2-512-cert-v01@openssh.com",
    "rsa-sha2-256-cert-v01@openssh.com",
    "ssh-ed25519",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
    "rsa-sha2-512",
    "rsa-sha2-256",
)


def expand_home(path: str, home: Path) -> Path:
    """A file name from ssh_config: `~` and `~/...` are `home` (asyncssh reads HOME where ssh
    reads the password database; they agree for a normal login), `~user/...` that user's."""
    if path == "~" or path.startswith("~/"):
        return home / path[2:]
    return Path(path).expanduser()


def int_option(config: SSHConfig, option: str, default: int) -> int:
    """An integer keyword's value (asyncssh stores it parsed), else `default`."""
    value = config.get(option, default)
    return value if isinstance(value, int) else int(str(value))


def words_option(config: SSHConfig, option: str, default: Sequence[str] = ()) -> list[str]:
    """A keyword's list of words (file names, patterns), else `default`."""
    value = config.get(option)
    if value is None:
        return list(default)
    if isinstance(value, list | tuple):
        return [str(word) for word in value]
    return [str(value)]


def strict_option(config: SSHConfig) -> Strict:
    """StrictHostKeyChecking as `ClientConfig` parsed it, else the default (`ask`)."""
    value = config.get("StrictHostKeyChecking")
    return STRICT_VALUES.get(str(value), DEFAULT_STRICT) if value is not None else DEFAULT_STRICT


class ClientConfig(SSHClientConfig):
    """asyncssh's ssh_config parser, also reading the host-key keywords it skips.

    UserKnownHostsFile gets %-tokens expanded (asyncssh leaves it as written), with `%k`,
    which asyncssh lacks, as OpenSSH defines it.
    """

    _percent_expand = SSHClientConfig._percent_expand | {"UserKnownHostsFile"}

    def _set_strict(self, option: str, args: list[str]) -> None:
        value = args.pop(0)
        strict = STRICT_VALUES.get(value.lower())
        if strict is None:
            self._error(f"Invalid {option} value: {value}")
        if option not in self._options:  # the first value found wins, as for every keyword
            self._options[option] = strict

    def _set_tokens(self) -> None:
        super()._set_tokens()
        # %k: the host key alias, else the host name as given (ssh_config(5) TOKENS).
        self._tokens["k"] = str(self._options.get("HostKeyAlias") or self._orig_host)

    _handlers = {
        **SSHClientConfig._handlers,
        **{
            option.lower(): (option, handler)
            for option, handler in (
                ("StrictHostKeyChecking", _set_strict),
                ("HashKnownHosts", SSHConfig._set_bool),
            )
        },
    }


# Settings that make asyncssh read the config again inside the connect (canonical host
# names, `Match final`): for those hosts it gets the file itself.
_RELOADING = ("CanonicalizeHostname",)


class SplitLines(Protocol):
    """Where `HostConfig` reads ssh_config's lines, split once (`sshconfig.SSHConfigFile`)."""

    def tokens(self, path: Path) -> list[tuple[int, str, tuple[str, ...]]]: ...

    def starts(self, path: Path, host: str) -> list[int]: ...

    def included(self, args: tuple[str, ...]) -> list[Path]: ...

    def matches(self, patterns: str, host: str) -> bool: ...


class HostConfig(ClientConfig):
    """One host's settings, parsed from the lines `SSHConfigFile` has already split (with
    the host-key keywords ClientConfig adds to asyncssh's)."""

    def __init__(self, source: SplitLines, *args: Any) -> None:
        super().__init__(*args)
        self._source = source

    def _match_host(self, option: str, args: list[str]) -> None:
        self._matching = self._source.matches(",".join(args), self._orig_host)
        args.clear()

    def _include(self, option: str, args: list[str]) -> None:
        # asyncssh's, with the files found once per run rather than once per host.
        old_path, old_line_no = self._path, self._line_no
        for path in self._source.included(tuple(args)):
            self.parse(path)
        self._path, self._line_no, self._matching = old_path, old_line_no, True
        args.clear()

    # The parser's table of keywords, with these two in place of asyncssh's (it looks its
    # handlers up in this table, not on the instance).
    _handlers = {
        **ClientConfig._handlers,
        "host": ("Host", _match_host),
        "include": ("Include", _include),
    }

    def parse(self, path: Path) -> None:
        # asyncssh's SSHConfig.parse, reading the lines from the cache instead of the file.
        self._path = path
        self._line_no = 0
        self._matching = True
        self._tokens = {"%": "%"}
        handlers = self._handlers
        tokens = self._source.tokens(path)
        starts = self._source.starts(path, self._orig_host)
        i, end = 0, len(tokens)
        while i < end:
            if not self._matching:
                # On to the next Host or Match line that may take this host.
                at = bisect_left(starts, i)
                if at == len(starts):
                    break
                i = starts[at]
            line_no, loption, cached = tokens[i]
            i += 1
            self._line_no = line_no
            try:
                option, handler = handlers[loption]
            except KeyError:
                continue
            args = list(cached)
            if not args:
                self._error(f"Missing {option} value")
            handler(self, option, args)
            if args:
                self._error(f"Extra data at end: {' '.join(args)}")
        self._set_tokens()
        for option in self._percent_expand:
            value = self._options.get(option)
            if isinstance(value, list):
                self._options[option] = [self._expand_val(item) for item in value]
            elif isinstance(value, str):
                self._options[option] = self._expand_val(value)

    def connect_options(self) -> SSHClientConnectionOptions | None:
        """What `asyncssh.connect(options=...)` takes to use these settings instead of reading
        the file again; None for a host whose connect must read it itself."""
        if any(self.get(name) for name in _RELOADING) or self.has_match_final():
            return None
        # asyncssh builds a connect's options on a base's `config` and `kwargs`; a base made
        # without running its __init__ carries only those two.
        base = SSHClientConnectionOptions.__new__(SSHClientConnectionOptions)
        base.kwargs = {}
        base.config = self
        return base
