"""Open an SSH connection the way `ssh` does: ~/.ssh/config, known_hosts, keys, agent, ProxyJump.

asyncssh reads the config, keys, certificates and the agent, matches known_hosts entries and
checks host certificates. kosmos adds what an operator expects from `ssh` on top: host trust
decided by the host's ssh_config as OpenSSH decides it (hostkeys.py: which known_hosts files,
ask, add or refuse a new key, never a changed one), ProxyJump hops checked the same way, each
by its own config, a passphrase typed for an encrypted key when no agent holds it, and one
clear line per failure (exit 6). A config file that cannot be read or parsed is such a
failure, found before anything connects: read as missing, it would send the connection
somewhere else.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import os
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kosmos.hosts.sshlib import asyncssh

from kosmos.errors import HostError
from kosmos.hosts.environment import forwarded
from kosmos.hosts.hostkeys import HostTrust, TrustRules, decide
from kosmos.hosts.identities import (
    agent_key_blobs,
    agent_path,
    certificates,
    identity_blobs,
    identity_files,
    present_identities,
)
from kosmos.hosts.keywords import HostConfig, int_option, words_option
from kosmos.hosts.passphrases import Passphrases
from kosmos.hosts.patience import within
from kosmos.hosts.runner import HostPrompter
from kosmos.hosts.sshconfig import ConfigParseError, SSHConfigFile, local_user
from kosmos.hosts.target import Target

KEEPALIVE_INTERVAL = 15.0
KEEPALIVE_COUNT_MAX = 3
PASSPHRASE_TRIES = 3
MAX_JUMPS = 8
# Where ssh_config names no Ciphers: AES-GCM before asyncssh's first choice, ChaCha20-Poly1305
# (both AEAD, both in OpenSSH's defaults). asyncssh builds ChaCha's ciphers anew for every
# packet: AES-GCM costs the controller about a third less CPU per command, which a fleet feels.
CIPHERS = (
    *("aes256-gcm@openssh.com", "aes128-gcm@openssh.com", "chacha20-poly1305@openssh.com"),
    *("aes256-ctr", "aes192-ctr", "aes128-ctr"),
)


class ConnectFailed(HostError):
    """A connection that could not be made; `reason` sorts it for tables such as `kosmos hosts`.

    reason: auth, refused, timeout, dns, not_ssh, host_key, closed or other.
    """

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


class SSHConfigError(HostError):
    """~/.ssh/config (or a file it includes) cannot be read or parsed: nothing is connected."""


class _Client(asyncssh.SSHClient):
    """Remembers a host key that known_hosts does not trust, and notices a lost connection."""

    def __init__(self) -> None:
        self.untrusted: tuple[str, str, int, asyncssh.SSHKey] | None = None
        self.closed = asyncio.Event()
        self.lost_reason: str | None = None
        self.conn: asyncssh.SSHClientConnection | None = None

    def connection_made(self, conn: asyncssh.SSHClientConnection) -> None:
        self.conn = conn

    @property
    def greeting(self) -> str | None:
        """The server's SSH version line, once it sent one (`SSH-2.0-OpenSSH_9.2p1`)."""
        if self.conn is None:
            return None
        return self.conn.get_extra_info("server_version") or None

    def validate_host_public_key(
        self, host: str, addr: str, port: int, key: asyncssh.SSHKey
    ) -> bool:
        # Called only for a key known_hosts does not list; the connect is retried after the
        # operator trusts it, so a key is never accepted while the handshake waits.
        self.untrusted = (host, addr, port, key)
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost_reason = str(exc) if exc else None
        self.closed.set()


@dataclass
class Link:
    """An open connection, the hops it runs through, and whether it is still up."""

    conn: asyncssh.SSHClientConnection
    client: _Client
    hops: list[asyncssh.SSHClientConnection] = field(default_factory=list)

    @property
    def is_closed(self) -> bool:
        return self.client.closed.is_set()

    async def close(self) -> None:
        for conn in (self.conn, *reversed(self.hops)):
            conn.close()
            with contextlib.suppress(Exception):
                async with asyncio.timeout(2):
                    await conn.wait_closed()


@dataclass(frozen=True)
class _Hop:
    host: str
    user: str | None
    port: int | None
    label: str

    @property
    def ssh_command(self) -> str:
        """The `ssh -v` line an operator can paste to see the same failure (no `host:port`)."""
        host = f"{self.user}@{self.host}" if self.user else self.host
        return f"ssh -v -p {self.port} {host}" if self.port is not None else f"ssh -v {host}"

    @property
    def ssh_login(self) -> str:
        """The plain `ssh` line that reaches the hop as kosmos does (to trust its key once)."""
        return self.ssh_command.replace("ssh -v ", "ssh ", 1)


def _parse_jump(text: str) -> _Hop:
    spec = text.strip().removeprefix("ssh://")
    user, _, rest = spec.rpartition("@")
    host, port = rest, None
    if rest.startswith("[") and "]" in rest:
        host, _, after = rest[1:].partition("]")
        port = int(after[1:]) if after.startswith(":") and after[1:].isdigit() else None
    elif rest.count(":") == 1:
        host, _, port_text = rest.partition(":")
        port = int(port_text) if port_text.isdigit() else None
    return _Hop(host=host, user=user or None, port=port, label=text.strip())


class Connector:
    """Opens (and re-opens) the connection to one target."""

    def __init__(
        self,
        target: Target,
        *,
        connect_timeout: float,
        prompter: HostPrompter | None = None,
        notify: Callable[[str], None] | None = None,
        home: Path | None = None,
        keepalive_interval: float = KEEPALIVE_INTERVAL,
        keepalive_count_max: int = KEEPALIVE_COUNT_MAX,
        ssh_config: SSHConfigFile | None = None,
        passphrases: Passphrases | None = None,
        secrets: Sequence[str] = (),
    ) -> None:
        self.target = target
        # Kept out of what SendEnv forwards (kosmos.hosts.environment).
        self.secrets = tuple(secrets)
        self.connect_timeout = connect_timeout
        # Passphrases typed in this run (shared by a front end's hosts): a reconnect uses them.
        self.passphrases = passphrases if passphrases is not None else Passphrases()
        self.prompter = prompter
        # Hears what the connect itself has to say: a key added under accept-new, a
        # known_hosts line skipped. Each notice once per connector (reconnects read again).
        self.notify = notify
        self._told: set[str] = set()
        self.home = home or Path("~").expanduser()
        self.ssh_dir = self.home / ".ssh"
        # The run's ~/.ssh/config, read once for all its hosts (a fleet shares one).
        self.ssh_config = ssh_config or SSHConfigFile(self.ssh_dir / "config", local_user())
        self.keepalive_interval = keepalive_interval
        self.keepalive_count_max = keepalive_count_max
        self.locked_keys: list[Path] = []

    # -- what the runner calls ---------------------------------------------------------------

    async def open(self) -> Link:
        """Connect through every ProxyJump hop to the target; raises HostError saying why not."""
        hops: list[asyncssh.SSHClientConnection] = []
        self.locked_keys = []
        try:
            tunnel = None
            for jump in self._jumps(self.target.host, self.target.user, self.target.port):
                tunnel, _ = await self._hop(jump, tunnel, via_jump=True)
                hops.append(tunnel)
            main = _Hop(self.target.host, self.target.user, self.target.port, self.target.label)
            conn, client = await self._hop(main, tunnel, via_jump=False)
        except BaseException:
            for hop in reversed(hops):
                hop.close()
            raise
        return Link(conn, client, hops)

    # -- config ----------------------------------------------------------------------------

    def _config(self, host: str, user: str | None, port: int | None) -> HostConfig:
        """The ssh_config settings for one host; raises SSHConfigError when they cannot be had."""
        try:
            return self.ssh_config.host(host, user, port)
        except OSError as e:
            name = e.filename or self.ssh_config.path
            raise SSHConfigError(
                f"{host}: cannot read {name} ({e.strerror or e}); fix it or move it aside, "
                "kosmos connects only with the ssh_config it can read"
            ) from None
        except ConfigParseError as e:
            # "PATH line N: what is wrong".
            raise SSHConfigError(
                f"{host}: {e}; fix that line (`ssh -G {host}` shows how OpenSSH reads the file)"
            ) from None
        except Exception as e:  # whatever asyncssh trips on, it is the file
            raise SSHConfigError(
                f"{host}: cannot use {self.ssh_config.path} ({type(e).__name__}: {e}); check it "
                f"with `ssh -G {host}`"
            ) from None

    def _jumps(self, host: str, user: str | None, port: int | None, depth: int = 0) -> list[_Hop]:
        """The ProxyJump chain in front of a host, each hop's own ProxyJump first."""
        value = self._config(host, user, port).get("ProxyJump")
        if not value or str(value).lower() == "none":
            return []
        if depth >= MAX_JUMPS:
            raise HostError(
                f"{host}: ProxyJump nests deeper than {MAX_JUMPS} hops; check ~/.ssh/config"
            )
        chain: list[_Hop] = []
        for spec in str(value).split(","):
            hop = _parse_jump(spec)
            if not chain:
                chain += self._jumps(hop.host, hop.user, hop.port, depth + 1)
            chain.append(hop)
        return chain

    def _where(self, hop: _Hop) -> tuple[str, int, str]:
        """HostName, Port and User that ssh_config gives the hop (for messages)."""
        try:
            config: HostConfig | None = self._config(hop.host, hop.user, hop.port)
        except SSHConfigError:
            config = None  # a message about another failure still names the hop as given
        host = str(config.get("Hostname", hop.host)) if config else hop.host
        port = int_option(config, "Port", hop.port or 22) if config else hop.port or 22
        user = hop.user or (str(config.get("User", "")) if config else "") or getpass.getuser()
        return host, port, user

    # -- keys ------------------------------------------------------------------------------

    def _agent(self, config: HostConfig) -> str | None:
        # SSH_AUTH_SOCK is the agent's address as ssh reads it, not a kosmos setting: asyncssh
        # reads it there too.
        return agent_path(config, os.environ, self.home)

    async def _client_keys(self, hop: _Hop) -> list[asyncssh.SSHKeyPair] | None:
        """Keys to offer when an encrypted key has no agent: decrypted with a typed passphrase.

        None leaves the choice to asyncssh (agent, IdentityFile, default keys, certificates).
        """
        config = self._config(hop.host, hop.user, hop.port)
        files = identity_files(config, self.ssh_dir, self.home)
        certs = certificates(config, self.home)
        held = await agent_key_blobs(self._agent(config))
        if held and config.get("IdentitiesOnly"):
            # Only the configured identities are offered, from the agent too.
            wanted = identity_blobs(files, certs)
            held = [blob for blob in held if blob in wanted]
        if held:
            return None
        encrypted = [f for f in files if self.ssh_config.encrypted_keys.need(f, _needs_passphrase)]
        if not encrypted:
            return None
        keys: list[asyncssh.SSHKeyPair] = []
        for path in files:
            if path in encrypted:
                keys += await self._unlock(path, certs)
            else:
                with contextlib.suppress(OSError, asyncssh.KeyImportError):
                    keys += asyncssh.load_keypairs(str(path), certlist=certs)
        return keys

    async def _unlock(
        self, path: Path, certs: list[asyncssh.SSHCertificate]
    ) -> list[asyncssh.SSHKeyPair]:
        kept = self.passphrases.get(path)
        if kept is not None:
            try:
                return list(asyncssh.load_keypairs(str(path), passphrase=kept, certlist=certs))
            except (asyncssh.KeyImportError, asyncssh.KeyEncryptionError):
                self.passphrases.forget(path)
            finally:
                del kept
        if self.prompter is None:
            self.locked_keys.append(path)
            return []
        for _ in range(PASSPHRASE_TRIES):
            secret = await self.prompter.ask_secret(f"Enter passphrase for key '{path}': ")
            if secret is None:
                break
            try:
                # With its certificates: CertificateFile's, and `KEY-cert.pub` beside it.
                keys = list(asyncssh.load_keypairs(str(path), passphrase=secret, certlist=certs))
                self.passphrases.keep(path, secret)
                return keys
            except (asyncssh.KeyImportError, asyncssh.KeyEncryptionError):
                continue  # a wrong passphrase: ask again, as ssh does
            finally:
                del secret
        self.locked_keys.append(path)
        return []

    # -- one hop ---------------------------------------------------------------------------

    def _notice(self, message: str) -> None:
        if message not in self._told:
            self._told.add(message)
            if self.notify is not None:
                self.notify(message)

    async def _hop(
        self, hop: _Hop, tunnel: asyncssh.SSHClientConnection | None, *, via_jump: bool
    ) -> tuple[asyncssh.SSHClientConnection, _Client]:
        config = self._config(hop.host, hop.user, hop.port)
        keys = await self._client_keys(hop)
        # The hop's own known_hosts files and rules; the files are read once per run.
        trust = HostTrust(
            TrustRules.from_config(config, hop.host, self.home),
            self.ssh_dir,
            self._notice,
            self.ssh_config.known_hosts,
        )
        # HostKeyAlgorithms in ssh_config is the user's order; else ssh's, known keys first.
        chosen = bool(config.get("HostKeyAlgorithms"))
        algs: list[str] | tuple[()] = () if chosen else trust.host_key_algs(plain_only=False)
        plain_only = False
        # The settings read once per run stand in for the file, unless the host's own need
        # asyncssh to read it again (canonical host names).
        preloaded = config.connect_options()
        settings: dict[str, object] = (
            {"options": preloaded} if preloaded else {"config": self.ssh_config.paths}
        )
        # Up to three tries: a certificate no CA vouches for is judged again as its plain key
        # (as ssh does), and a new key is trusted only after the handshake that showed it.
        for _ in range(3):
            client = _Client()
            try:
                # The connect timeout counts this host's own attempt: `within` leaves out the
                # time the loop spent on other hosts (asyncssh's own would count it).
                attempt = asyncssh.connect(
                    hop.host,
                    hop.port or (),
                    username=hop.user or (),
                    tunnel=tunnel or (),
                    **settings,
                    known_hosts=trust.known_hosts(),
                    server_host_key_algs=algs,
                    encryption_algs=() if config.get("Ciphers") else CIPHERS,
                    agent_path=self._agent(config),
                    client_factory=lambda client=client: client,
                    client_keys=keys if keys is not None else present_identities(config, self.home),
                    connect_timeout=None,
                    keepalive_interval=self.keepalive_interval,
                    keepalive_count_max=self.keepalive_count_max,
                    # SendEnv's patterns as exact names, none of them a key kosmos holds.
                    send_env=forwarded(words_option(config, "SendEnv"), os.environ, self.secrets),
                )
                conn = await within(attempt, self.connect_timeout)
                return conn, client
            except asyncssh.HostKeyNotVerifiable as e:
                if client.untrusted is not None:
                    await self._decide_key(trust, client.untrusted[3], hop)
                    continue
                revoked = trust.revoked_refusal(str(e))
                if revoked is not None:
                    raise revoked from None
                if trust.cas and not plain_only and not chosen:
                    plain_only = True
                    algs = trust.host_key_algs(plain_only=True)
                    continue
                raise self._explain(e, hop, via_jump) from None
            except (OSError, asyncssh.Error, TimeoutError, ValueError) as e:
                raise self._explain(e, hop, via_jump, client.greeting) from None
        raise HostError(f"{hop.label}: the host key is still not trusted after adding it")

    async def _decide_key(self, trust: HostTrust, key: asyncssh.SSHKey, hop: _Hop) -> None:
        """A key known_hosts does not vouch for: hostkeys.decide asks, adds or refuses it."""
        await decide(
            trust,
            key,
            prompter=self.prompter,
            notify=self._notice,
            ssh=hop.ssh_login,
            label=hop.label,
        )

    def _explain(
        self, e: BaseException, hop: _Hop, via_jump: bool, greeting: str | None = None
    ) -> ConnectFailed:
        """One line naming the host, what went wrong and what to check; `greeting`: the SSH
        version line the server sent before it failed, if it sent one."""
        host, port, user = self._where(hop)
        name = f"jump host {hop.label}" if via_jump else hop.label
        at = f"{host}:{port}"
        text = str(e).strip() or type(e).__name__
        if isinstance(e, asyncssh.PermissionDenied):
            if self.locked_keys:
                locked = ", ".join(str(p) for p in self.locked_keys)
                return ConnectFailed(
                    f"{name}: authentication failed: key {locked} is encrypted and no ssh-agent "
                    f"holds it; run `ssh-add {self.locked_keys[0]}` first, or run `kosmos run` "
                    "in a terminal to type its passphrase",
                    "auth",
                )
            return ConnectFailed(
                f"{name}: authentication failed for user {user} at {at}; check the key "
                f"(ssh-add -l, IdentityFile in ~/.ssh/config) or try: {hop.ssh_command}",
                "auth",
            )
        if isinstance(e, asyncssh.HostKeyNotVerifiable):
            return ConnectFailed(
                f"{name}: host key not accepted ({text}); nothing was run", "host_key"
            )
        if isinstance(e, TimeoutError):
            return ConnectFailed(
                f"{name}: no answer from {at} within {self.connect_timeout:g} s; check the "
                "address and firewall, or raise connect_timeout in the config",
                "timeout",
            )
        if isinstance(e, socket.gaierror):
            return ConnectFailed(
                f"{name}: cannot resolve host name {host!r}; check the name or its HostName "
                "in ~/.ssh/config",
                "dns",
            )
        if isinstance(e, ConnectionRefusedError) or "refused" in text.lower():
            return ConnectFailed(
                f"{name}: connection refused at {at}; is sshd running there, and is {port} "
                "its port?",
                "refused",
            )
        if isinstance(e, asyncssh.ProtocolNotSupported | asyncssh.ProtocolError):
            return ConnectFailed(
                f"{name}: {at} does not speak SSH ({text}); check the port", "not_ssh"
            )
        closed = asyncssh.ConnectionLost | asyncssh.KeyExchangeFailed | ConnectionError
        if isinstance(e, closed) and not via_jump:
            if greeting:
                # An sshd that greeted, then went (it stopped, or its child died).
                return ConnectFailed(
                    f"{name}: the connection to {at} closed during the SSH handshake ({text}; "
                    f"the server had greeted as {greeting}); sshd there may have stopped or be "
                    "refusing new sessions (MaxStartups): try again, or check its logs",
                    "closed",
                )
            return ConnectFailed(
                f"{name}: {at} closed the connection before any SSH greeting ({text}): is "
                f"{port} an SSH port? If it is, sshd there may be stopping or refusing new "
                "sessions (MaxStartups)",
                "not_ssh",
            )
        if isinstance(e, asyncssh.KeyImportError):
            return ConnectFailed(
                f"{name}: cannot use a key: {text}; check IdentityFile in ~/.ssh/config", "auth"
            )
        if isinstance(e, asyncssh.DisconnectError):
            return ConnectFailed(
                f"{name}: the server at {at} closed the connection: {text}", "closed"
            )
        if isinstance(e, ValueError):
            return ConnectFailed(f"{name}: bad SSH settings: {text}; check ~/.ssh/config", "other")
        return ConnectFailed(
            f"{name}: cannot connect to {at}: {text}; try: {hop.ssh_command}", "other"
        )


def _needs_passphrase(path: Path) -> bool:
    try:
        asyncssh.read_private_key(str(path))
    except asyncssh.KeyImportError as e:
        return "passphrase" in str(e).lower()
    except (OSError, ValueError):
        return False
    return False
