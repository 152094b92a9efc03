"""The ssh_config keywords kosmos honours, as tables, and the parser that reads them all.

asyncssh's client config parser reads most of them and skips keywords it does not know
(StrictHostKeyChecking, HashKnownHosts); `ClientConfig` adds handlers for those to its
table, so one parse of ~/.ssh/config answers every question kosmos asks about a host.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import kosmos.hosts.sshlib  # noqa: F401 (asyncssh without a compiler: see there)

from asyncssh.config import SSHClientConfig, SSHConfig

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
