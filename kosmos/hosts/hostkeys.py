"""Host trust as OpenSSH decides it, in one place.

ssh_config names the known_hosts files and how strict to be (keywords.py); asyncssh matches
their entries and checks host certificates against `@cert-authority` keys. This module says
what the files vouch for, what becomes of a key they do not (ask, add, refuse) and how each
refusal reads. A changed key is always refused, whatever StrictHostKeyChecking says.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from kosmos.hosts.sshlib import asyncssh

from asyncssh.config import SSHClientConfig
from asyncssh.public_key import get_certificate_algs, get_default_public_key_algs

from kosmos.errors import HostError
from kosmos.hosts.keywords import (
    DEFAULT_GLOBAL_KNOWN_HOSTS,
    DEFAULT_USER_KNOWN_HOSTS,
    OPENSSH_HOST_KEY_ALGS,
    Strict,
    expand_home,
    int_option,
    strict_option,
    words_option,
)
from kosmos.hosts.known_hosts import KnownHostsCache, append_entry
from kosmos.hosts.runner import HostPrompter

DEFAULT_PORT = 22

Verdict = Literal["ask", "add", "refuse", "unrecordable", "changed", "revoked"]
# What becomes of a key no known_hosts file lists (and none lists another of its type for the
# host), by StrictHostKeyChecking, as sshconnect.c's check_host_key decides it.
NEW_KEY: dict[Strict, Verdict] = {"yes": "refuse", "ask": "ask", "accept-new": "add", "no": "add"}


def host_pattern(host: str, port: int | None) -> str:
    """How known_hosts names a host: `host`, or `[host]:port` off port 22 (as OpenSSH writes)."""
    if port in (None, DEFAULT_PORT):
        return host
    return f"[{host}]:{port}"


def fingerprint(key: asyncssh.SSHKey) -> str:
    return key.get_fingerprint("sha256")


def key_type(key: asyncssh.SSHKey) -> str:
    return key.get_algorithm()


def _what(key: asyncssh.SSHKey) -> str:
    return f"{key_type(key)} {fingerprint(key)}"


class HostKeyUnknown(HostError):
    """No known_hosts file vouches for the key, and nobody (or the operator) trusted it."""


class HostKeyChanged(HostError):
    """The host presented a key other than the one known_hosts holds: always refused."""


class HostKeyRevoked(HostError):
    """The host's key, or the CA that signed its certificate, is marked `@revoked`."""


@dataclass(frozen=True)
class TrustRules:
    """What ssh_config says about trusting one host's key."""

    host: str  # HostName
    port: int
    alias: str | None  # HostKeyAlias
    user_files: tuple[Path, ...]
    global_files: tuple[Path, ...]
    strict: Strict
    hash_known_hosts: bool

    @classmethod
    def from_config(cls, config: SSHClientConfig, host: str, home: Path) -> TrustRules:
        """The rules for `host` from its parsed ssh_config (keywords.ClientConfig)."""
        user = words_option(config, "UserKnownHostsFile", DEFAULT_USER_KNOWN_HOSTS)
        system = words_option(config, "GlobalKnownHostsFile", DEFAULT_GLOBAL_KNOWN_HOSTS)
        alias = config.get("HostKeyAlias")
        return cls(
            host=str(config.get("Hostname", host)),
            port=int_option(config, "Port", DEFAULT_PORT),
            alias=str(alias) if alias else None,
            user_files=tuple(expand_home(p, home) for p in user),
            # OpenSSH expands neither `~` nor %-tokens here: the names are used as written.
            global_files=tuple(Path(p) for p in system),
            strict=strict_option(config),
            hash_known_hosts=bool(config.get("HashKnownHosts", False)),
        )

    @property
    def name(self) -> str:
        """What known_hosts calls the host: its HostKeyAlias, else `host` or `[host]:port`."""
        return self.alias or host_pattern(self.host, self.port)

    @property
    def bare(self) -> str | None:
        """The name without its port, which ssh also tries for a key the port form lacks."""
        return self.host if self.alias is None and self.port != DEFAULT_PORT else None


Found = list[tuple[asyncssh.SSHKey, Path]]


def _other_types(more: Found, known: Found) -> Found:
    """The keys of `more` whose type `known` has none of: ssh looks a host up without its
    port only when the port form knows no key of the presented type."""
    types = {key.algorithm for key, _ in known}
    return [(key, path) for key, path in more if key.algorithm not in types]


class HostTrust:
    """One host's known_hosts, read for one connect: the keys and CAs they vouch for, the keys
    they revoke, and what becomes of any other key."""

    def __init__(
        self,
        rules: TrustRules,
        ssh_dir: Path,
        warn: Callable[[str], None],
        files: KnownHostsCache | None = None,
    ) -> None:
        self.rules = rules
        self.ssh_dir = ssh_dir
        read = (files or KnownHostsCache()).read
        files_read = [(p, read(p, warn)) for p in (*rules.user_files, *rules.global_files)]

        def look_up(name: str) -> tuple[Found, Found, Found]:
            found: tuple[Found, Found, Found] = ([], [], [])
            for path, entries in files_read:
                # No address and no port: ssh looks up only the name (CheckHostIP is off by
                # default), and asyncssh's retry without the port is not ssh's.
                keys, cas, revoked = entries.match(name, "", None)[:3]
                for into, got in zip(found, (keys, cas, revoked), strict=True):
                    into += [(key, path) for key in got]
            return found

        keys, cas, revoked = look_up(rules.name)
        # Keys listed under the host's own name: another key of a presented key's type there
        # means the key has changed.
        self.listed = list(keys)
        if rules.bare is not None:
            bare_keys, bare_cas, bare_revoked = look_up(rules.bare)
            keys += _other_types(bare_keys, keys)
            cas += _other_types(bare_cas, cas)
            revoked += bare_revoked
        # One entry may match both names (a `*` pattern): count it once.
        self.revoked = list(dict.fromkeys(revoked))
        out = {key for key, _ in revoked}
        self.trusted = [key for key, _ in keys if key not in out]
        self.cas = [key for key, _ in cas if key not in out]

    # -- what asyncssh is given -------------------------------------------------------------

    def known_hosts(self) -> tuple[list[asyncssh.SSHKey], ...]:
        """asyncssh's `known_hosts`, already matched: trusted keys, CA keys, revoked keys."""
        return list(self.trusted), list(self.cas), [key for key, _ in self.revoked]

    def host_key_algs(self, *, plain_only: bool) -> list[str]:
        """The host key algorithms to offer, in ssh's order: those of keys known for the host
        first. Certificates only where a CA could vouch for one (ssh would otherwise fall back
        to the certificate's plain key: offering that key at once comes to the same)."""
        supported = {alg.decode() for alg in (*get_default_public_key_algs(), *_cert_algs())}
        certs = bool(self.cas) and not plain_only
        # asyncssh's other algorithms last: an old server that offers only those still
        # answers (each key is judged the same way whatever its algorithm).
        extra = [alg.decode() for alg in get_default_public_key_algs()]
        order = [a for a in (*OPENSSH_HOST_KEY_ALGS, *extra) if a in supported]
        order = [a for a in dict.fromkeys(order) if certs or not _is_cert(a)]
        known_keys = [*self.trusted, *(key for key, _ in self.listed)]
        known = {a.decode() for k in known_keys for a in (*k.sig_algorithms, *k.cert_algorithms)}
        first = [a for a in order if a in known or (certs and _is_cert(a))]
        return first + [a for a in order if a not in first]

    # -- a key the files do not vouch for ---------------------------------------------------

    def verdict(self, key: asyncssh.SSHKey) -> Verdict:
        if any(key == revoked for revoked, _ in self.revoked):
            return "revoked"
        if any(k.algorithm == key.algorithm and k != key for k, _ in self.listed):
            return "changed"
        if not self.rules.user_files:
            return "unrecordable"  # UserKnownHostsFile none: ssh has nowhere to trust it either
        return NEW_KEY[self.rules.strict]

    def accept(self, key: asyncssh.SSHKey) -> None:
        """Trust `key` for the rest of this connect (it is also written, by `record`)."""
        self.trusted.append(key)

    def record(self, key: asyncssh.SSHKey) -> Path:
        """Append the key to the first UserKnownHostsFile; raises OSError when it cannot."""
        path = self.rules.user_files[0]
        append_entry(
            path, self.rules.name, key, hashed=self.rules.hash_known_hosts, ssh_dir=self.ssh_dir
        )
        return path

    # -- refusals, one line each --------------------------------------------------------------

    def refusal(self, verdict: Verdict, key: asyncssh.SSHKey, ssh: str) -> HostError:
        """Why `key` is refused; `ssh` is the command that reaches the host as kosmos does."""
        name, what, rules = self.rules.name, _what(key), self.rules
        port = f"-p {rules.port} " if rules.port != DEFAULT_PORT else ""
        keyscan = f"ssh-keyscan {port}{rules.host}"
        if rules.alias:
            # ssh-keyscan writes the address; the key must be found under the alias.
            keyscan += f" | awk -v a={shlex.quote(rules.alias)} '{{$1=a}}1'"
        keyscan = f"`{keyscan} >> {self._user_file()}`"
        if verdict == "changed":
            where = next(p for k, p in self.listed if k.algorithm == key.algorithm)
            unlike = (
                " (StrictHostKeyChecking no does not change that: unlike `ssh -o "
                "StrictHostKeyChecking=no`, kosmos never connects to a host whose key changed)"
                if rules.strict == "no"
                else ""
            )
            return HostKeyChanged(
                f"WARNING: the host key of {name} HAS CHANGED (it now offers {what}; {where} "
                "holds another). Someone may be intercepting the connection; kosmos refuses to "
                f"connect and ran nothing{unlike}. If the change is expected, remove the old "
                f"key with `ssh-keygen -R {shlex.quote(name)} -f {shlex.quote(str(where))}` "
                "and connect again"
            )
        if verdict == "revoked":
            return self._revoked(ca=False)
        if verdict == "unrecordable":
            return HostKeyUnknown(
                f"{name}: unknown host key {what}; nothing was run. UserKnownHostsFile is none, "
                "so there is no file to trust a new key in (ssh refuses it too): name a "
                "UserKnownHostsFile, or list the key in a GlobalKnownHostsFile"
            )
        if verdict == "refuse":
            return HostKeyUnknown(
                f"{name}: unknown host key {what}; nothing was run. StrictHostKeyChecking is "
                f"yes, so neither ssh nor kosmos trusts a new key by itself: if the fingerprint "
                f"is right, add it with {keyscan}"
            )
        return HostKeyUnknown(
            f"{name}: unknown host key {what}; nothing was run. If the fingerprint is right, "
            f"trust it with `{ssh}` once, or {keyscan}, "
            # `kosmos hosts --check` never asks: name the command that does.
            "or run `kosmos run` in a terminal to be asked"
        )

    def declined(self, key: asyncssh.SSHKey) -> HostKeyUnknown:
        return HostKeyUnknown(
            f"{self.rules.name}: host key {_what(key)} not trusted; nothing was run"
        )

    def revoked_refusal(self, reason: str) -> HostKeyRevoked | None:
        """asyncssh's refusal of a revoked key or CA (it does not say which key), worded."""
        if "revoked" not in reason.lower() or not self.revoked:
            return None
        return self._revoked(ca="CA" in reason)

    def _revoked(self, *, ca: bool) -> HostKeyRevoked:
        files = ", ".join(dict.fromkeys(str(path) for _, path in self.revoked))
        what = "its certificate's CA key" if ca else "its host key"
        if len(self.revoked) == 1:
            what += f" {_what(self.revoked[0][0])}"
        return HostKeyRevoked(
            f"{self.rules.name}: {what} is marked @revoked in {files}; kosmos refuses to connect "
            "and ran nothing. The key may be stolen: ask the host's administrator"
        )

    def _user_file(self) -> str:
        return str(self.rules.user_files[0]) if self.rules.user_files else "~/.ssh/known_hosts"


def _cert_algs() -> list[bytes]:
    return [alg for alg in get_certificate_algs() if not alg.startswith(b"x509")]


def _is_cert(alg: str) -> bool:
    return alg.endswith("-cert-v01@openssh.com")


def shown_name(label: str, rules: TrustRules) -> str:
    """The host as the operator knows it, with the address it resolves to beside it:
    `web1 (127.0.0.1:2222)`; just the address when that is what the operator typed."""
    host = f"[{rules.host}]" if ":" in rules.host else rules.host
    address = host if rules.port == DEFAULT_PORT else f"{host}:{rules.port}"
    if label in (address, rules.host, rules.name):
        return address
    return f"{label} ({address})"


async def decide(
    trust: HostTrust,
    key: asyncssh.SSHKey,
    *,
    prompter: HostPrompter | None,
    notify: Callable[[str], None],
    ssh: str,
    label: str | None = None,
) -> None:
    """A key no known_hosts file vouches for: refuse it (raises), or ask about it, or add it
    with a notice. A trusted key is written to the first UserKnownHostsFile. The question
    names the host by `label` (what the operator typed) with its address."""
    verdict = trust.verdict(key)
    name = trust.rules.name
    if verdict == "ask":
        if prompter is None:
            raise trust.refusal(verdict, key, ssh)
        shown = shown_name(label or name, trust.rules)
        if not await prompter.confirm_host_key(shown, key_type(key), fingerprint(key)):
            raise trust.declined(key)
    elif verdict != "add":
        raise trust.refusal(verdict, key, ssh)
    trust.accept(key)
    try:
        path = trust.record(key)
    except OSError as e:
        # ssh connects anyway and says it could not add the key; so does kosmos.
        notify(
            f"{name}: could not add host key {_what(key)} to {trust.rules.user_files[0]} "
            f"({e.strerror or e}); it is trusted for this connection only"
        )
        return
    # As ssh says "Permanently added": which file now vouches for the host.
    why = f" (StrictHostKeyChecking {trust.rules.strict})" if verdict == "add" else ""
    notify(f"{name}: permanently added host key {_what(key)} to {path}{why}")
