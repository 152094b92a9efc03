"""The kernel lock (hosts/lock.py) under the real kernel, real bash and dash, locally and over
Debian's sshd: every write tried inside it changes nothing, while the same command without it
does; reads still work; sockets, signals and TCP ports are held as the docs say.

Local runs are root's; SSH runs are the sshd fixture's unprivileged user's. A second and third
sshd set the user's PATH (`SetEnv`): one without bash (commands then run under dash), one
without perl and python3 (a host the lock cannot be had on).
"""

from __future__ import annotations

import os
import pwd
import re
import shlex
import shutil
import struct
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kosmos.hosts import lock_rules
from kosmos.hosts.local import LocalRunner
from kosmos.hosts.lock import HostLock, LockConfig, LockStatus, parse_probe
from kosmos.hosts.lock_filter import build_filter
from kosmos.hosts.runner import CommandResult, Lock, Runner
from kosmos.hosts.ssh import SSHRunner
from kosmos.hosts.target import parse_target
from kosmos.hosts.wrapper import plain
from tests.conftest import run_cli
from tests.helpers import need
from tests.lockkit import Listener, bin_without, make_scratch, state
from tests.sshd import Sshd, SshdUnavailable, start_sshd, write_client_home

pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or os.geteuid() != 0, reason="the lock's tests run as root on Linux"
)

# Each changes the scratch directory when run without the lock.
WRITES = (
    "touch new",
    ": > F",
    "echo more >> F",
    "exec 3>F",
    "rm F",
    "rm -r D",
    "mv F moved",
    "ln F hard",
    "ln -s F soft",
    "ln -sf /etc/hostname F",
    "mkdir made",
    "mkfifo fifo",
    "truncate -s 0 F",
    "chmod 600 F",
    'chown "$(id -u)" F',
    "touch -d 2000-01-01 F",
    "setfattr -n user.kosmos -v 1 F",
    "chattr +A F",
    "cp F copy",
    "dd if=/dev/zero of=F bs=1 count=1 status=none",
    "tee F </dev/null",
    "sed -i s/canary/changed/ F",
    "git -C repo config user.name changed",
    "python3 -c \"open('F', 'w')\"",
    "python3 -c \"import os; os.utime('F', (0, 0))\"",
    "python3 -c \"import os; os.setxattr('F', 'user.k', b'v')\"",
    'perl -e \'open(my $f, ">", "F") or die $!\'',
    "perl -e 'chmod 0600, \"F\" or die $!'",
)
READS = "cat F && ls -l && ps -e | head -3 && df / | tail -1 && uname -s && id -u"


@dataclass
class Host:
    """A runner and where its user may write: each scratch directory is made there."""

    label: str
    runner: Runner
    home: Path
    uid: int | None = None

    def scratch(self, name: str) -> Path:
        return make_scratch(self.home / name, self.uid)

    async def run(self, command: str, where: Path, lock: Lock | None = None) -> CommandResult:
        return await self.runner.run(f"cd '{where}' && {command}", timeout=20, lock=lock)


def _sshd(
    request: pytest.FixtureRequest, tag: str, path: Path | None, login: str = "/bin/sh"
) -> Iterator[Sshd]:
    worker = getattr(request.config, "workerinput", {}).get("workerid", "main")
    extra = f"SetEnv PATH={path}\n" if path is not None else ""
    try:
        server = start_sshd(f"{worker}{tag}", extra_config=extra, login=login)
    except SshdUnavailable as e:
        if os.environ.get("KOSMOS_REQUIRE_SSHD") == "1":
            pytest.fail(f"KOSMOS_REQUIRE_SSHD=1 but sshd cannot run: {e}")
        pytest.skip(str(e))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def shared() -> Iterator[Path]:
    """A folder every user reaches (pytest keeps its own folders to root: 0700)."""
    root = Path(tempfile.mkdtemp(prefix="kosmos-lock-"))
    root.chmod(0o755)
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def bins(shared: Path) -> Path:
    return shared


@pytest.fixture(scope="module")
def dash_sshd(request: pytest.FixtureRequest, bins: Path) -> Iterator[Sshd]:
    """An sshd whose user has no bash on PATH: kosmos runs commands there under dash."""
    yield from _sshd(request, "d", bin_without(bins, "bash"))


@pytest.fixture(scope="module")
def bare_sshd(request: pytest.FixtureRequest, bins: Path) -> Iterator[Sshd]:
    """An sshd whose user has neither perl nor python3 on PATH."""
    yield from _sshd(request, "n", bin_without(bins, "perl", "python"))


@pytest.fixture(scope="module")
def tcsh_sshd(request: pytest.FixtureRequest) -> Iterator[Sshd]:
    """An sshd whose user's login shell is tcsh (which reads `!` and a newline in quotes its own
    way): kosmos runs commands there under bash, inside the lock as anywhere."""
    yield from _sshd(request, "c", None, login=need("tcsh", "tcsh"))


@pytest.fixture(scope="module")
def tcsh_python_sshd(request: pytest.FixtureRequest, bins: Path) -> Iterator[Sshd]:
    """The same with no perl on PATH: the lock's prelude is python3's, in the command line."""
    yield from _sshd(request, "cp", bin_without(bins, "perl"), login=need("tcsh", "tcsh"))


SSH_HOSTS = {
    "ssh-bash": "sshd",
    "ssh-dash": "dash_sshd",
    "ssh-tcsh-bash": "tcsh_sshd",
    "ssh-tcsh-bash-python3": "tcsh_python_sshd",
}


async def _ssh(server: Sshd, home: Path, lock: LockConfig | None = None) -> SSHRunner:
    write_client_home(home, server)
    runner = SSHRunner(parse_target("box"), connect_timeout=10, lock=lock)
    await runner.connect()
    return runner


def _local(tmp_path: Path, path: str | None = None, lock: LockConfig | None = None) -> Host:
    env = dict(os.environ)
    if path is not None:
        env["PATH"] = path
    return Host("local", LocalRunner(cwd=tmp_path, env=env, lock=lock), tmp_path)


@pytest.fixture(params=["local-bash-perl", "local-dash-perl", "local-bash-python3", *SSH_HOSTS])
async def host(
    request: pytest.FixtureRequest, tmp_path: Path, bins: Path, ssh_home: Path
) -> AsyncIterator[Host]:
    kind = request.param
    if "dash" in kind:
        need("dash", "dash")
    if kind.startswith("local"):
        path = {
            "local-bash-perl": None,
            "local-dash-perl": str(bin_without(bins, "bash")),
            "local-bash-python3": str(bin_without(bins, "perl")),
        }[kind]
        local = _local(tmp_path, path)
        local.label = kind
        yield local
        return
    server: Sshd = request.getfixturevalue(SSH_HOSTS[kind])
    runner = await _ssh(server, ssh_home)
    try:
        yield Host(kind, runner, server.remote_home, pwd.getpwnam(server.user).pw_uid)
    finally:
        await runner.close()
        server.clean_remote()


async def test_the_host_is_learnt_and_named(host: Host) -> None:
    status = await _learnt(host.runner)
    # the label names the dialect commands run in and, where not perl, the prelude's language
    shell = "bash" if "bash" in host.label else "dash"
    via = "python3" if "python3" in host.label else "perl"
    assert status.held and status.full and status.abi >= 6
    assert status.interpreter == via
    assert status.describe() == f"held (Landlock ABI {status.abi}, seccomp)"
    result = await host.run("echo $BASH_VERSION", host.home, Lock())
    assert result.locked and result.exit_code == 0
    assert bool(result.output.text().strip()) is (shell == "bash")


async def _learnt(runner: Runner) -> LockStatus:
    learn = getattr(runner, "learn_host")  # noqa: B009 - every runner of these tests has it
    await learn(timeout=20)
    kit = getattr(runner, "host_lock")  # noqa: B009
    assert isinstance(kit, HostLock) and kit.status is not None
    return kit.status


async def test_every_write_changes_nothing_inside_the_lock(host: Host) -> None:
    need("setfattr", "attr")
    need("chattr", "e2fsprogs")
    failures = []
    commands = [c for c in WRITES if not (c.startswith("perl") and "python3" in host.label)]
    for i, command in enumerate(commands):
        free, held = host.scratch(f"free{i}"), host.scratch(f"held{i}")
        before_free, before = state(free), state(held)
        unlocked = await host.run(command, free)
        if state(free) == before_free:
            failures.append(f"{command!r} wrote nothing without the lock: {unlocked.output.text()}")
        locked = await host.run(command, held, Lock())
        assert locked.locked
        if state(held) != before:
            failures.append(f"{command!r} changed the directory inside the lock")
        if locked.exit_code == 0:
            failures.append(f"{command!r} succeeded inside the lock: {locked.output.text()}")
    assert failures == []


async def test_reads_still_work_inside_the_lock(host: Host) -> None:
    where = host.scratch("reads")
    result = await host.run(READS, where, Lock())
    assert result.locked and result.exit_code == 0, result.output.text()
    text = result.output.text()
    assert "canary F" in text and "Linux" in text and "PID" in text


async def test_a_write_fails_as_the_shell_reports_it(host: Host) -> None:
    where = host.scratch("told")
    result = await host.run("touch new; chmod 600 F", where, Lock())
    text = result.output.text()
    assert "touch: cannot touch 'new': Permission denied" in text
    assert "chmod: changing permissions of 'F': Operation not permitted" in text


# -- plain words, which the perl prelude execs with no shell between (hosts/wrapper.py) ----------

PLAIN_WRITES = (
    "touch {d}/new",
    "rm {d}/F",
    "rm -r {d}/D",
    "mv {d}/F {d}/moved",
    "ln {d}/F {d}/hard",
    "ln -s {d}/F {d}/soft",
    "mkdir {d}/made",
    "mkfifo {d}/fifo",
    "truncate -s 0 {d}/F",
    "chmod 600 {d}/F",
    "touch -d 2000-01-01 {d}/F",
    "cp {d}/F {d}/copy",
    "dd if=/dev/zero of={d}/F bs=1 count=1 status=none",
    "sed -i s/canary/changed/ {d}/F",
    "git -C {d}/repo config user.name changed",
)


async def test_plain_writes_change_nothing_inside_the_lock(host: Host) -> None:
    where = host.scratch("plain")
    before = state(where)
    for template in PLAIN_WRITES:
        command = template.format(d=where)
        assert plain(command), command
        result = await host.runner.run(command, timeout=20, lock=Lock())
        assert result.locked and result.exit_code != 0, (command, result.output.text())
    assert state(where) == before


async def test_plain_words_run_as_the_shell_runs_them(host: Host) -> None:
    """The same command run plain and with a `;` after it (which the shell runs): the same
    output and exit code, for a program, a program not found and a script without `#!`, which
    the prelude leaves to the shell, which runs it in itself."""
    where = host.scratch("twins")
    script = where / "noshebang"
    script.write_text('echo "${BASH_VERSION:+bash}" script\n')
    script.chmod(0o755)
    if host.uid is not None:
        os.chown(script, host.uid, host.uid)
    commands = (f"ls -1 {where}", "id -u", f"cat {where}/F", "nosuch-kosmos-program a", str(script))
    for command in commands:
        assert plain(command), command
        direct = await host.runner.run(command, timeout=20, lock=Lock())
        shell = await host.runner.run(command + ";", timeout=20, lock=Lock())
        assert direct.locked and shell.locked
        seen = (direct.exit_code, direct.output.text())
        assert seen == (shell.exit_code, shell.output.text()), command
    assert seen == (0, ("bash script\n" if "bash" in host.label else " script\n"))
    # bash hands a program it runs its own path in `_`; what execs plain words itself (the
    # perl prelude, the local spawner) passes on what it had.
    named = await host.runner.run("printenv _", timeout=20, lock=Lock())
    by_bash = await host.runner.run("printenv _;", timeout=20, lock=Lock())
    itself = "python3" not in host.label or host.label.startswith("local")
    assert by_bash.output.text().endswith("/printenv\n") is ("bash" in host.label)
    assert named.output.text().endswith("/printenv\n") is ("bash" in host.label and not itself)


@pytest.mark.parametrize(
    ("name", "value", "shown"),
    [
        ("BASH_ENV", "{d}/env.sh", "from BASH_ENV\n"),
        ("BASH_FUNC_hostname%%", "() {  echo from a function\n}", "from a function\n"),
        # An empty entry is the working directory, where bash finds this `hostname` first.
        ("PATH", ":" + os.environ.get("PATH", "/usr/bin:/bin"), "from the working directory\n"),
    ],
)
async def test_the_shell_runs_plain_words_it_would_read_otherwise(
    tmp_path: Path, name: str, value: str, shown: str
) -> None:
    """An environment that makes bash do more than exec the words: the plain command gives
    what bash gives it (the same with a `;`, which bash always runs)."""
    (tmp_path / "env.sh").write_text("echo from BASH_ENV\n")
    (tmp_path / "hostname").write_text("#!/bin/sh\necho from the working directory\n")
    (tmp_path / "hostname").chmod(0o755)
    env = {**os.environ, name: value.replace("{d}", str(tmp_path))}
    runner = LocalRunner(cwd=tmp_path, env=env)
    result = await runner.run("hostname", timeout=20, lock=Lock())
    by_bash = await runner.run("hostname;", timeout=20, lock=Lock())
    assert result.locked and shown in result.output.text()
    assert (result.exit_code, result.output.text()) == (by_bash.exit_code, by_bash.output.text())


@pytest.mark.parametrize("options", [{"SHELLOPTS": "xtrace:verbose"}, {"BASHOPTS": "extglob"}])
async def test_bash_options_in_the_environment_reach_no_shell_of_kosmos(
    tmp_path: Path, options: dict[str, str]
) -> None:
    """bash reads SHELLOPTS and BASHOPTS from its environment: they would trace kosmos's own
    wrapper into the output, and its probe of the lock (which then found none)."""
    runner = LocalRunner(cwd=tmp_path, env={**os.environ, **options})
    await runner.learn_host(timeout=20)
    assert runner.host_lock.status is not None and runner.host_lock.status.held
    for lock in (None, Lock()):
        command = "hostname; echo $SHELLOPTS; shopt -q extglob && echo extglob; true"
        result = await runner.run(command, timeout=20, lock=lock)
        assert result.exit_code == 0 and result.locked is (lock is not None)
        lines = result.output.text().splitlines()
        assert lines[0] == os.uname().nodename and len(lines) == 2, lines
        assert "xtrace" not in lines[1] and "verbose" not in lines[1], lines


# -- sockets, ports and signals ------------------------------------------------------------------


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener.tcp()
    try:
        yield server
    finally:
        server.close()


@pytest.mark.parametrize("where", ["local", "ssh"])
async def test_no_byte_reaches_a_port_that_is_not_allowed(
    where: str, listener: Listener, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    need("curl", "curl")
    runner = await _runner(where, tmp_path, request)
    try:
        port = listener.port
        tries = (
            f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo FLUSHALL >&3",
            f"curl -sS -m 5 http://127.0.0.1:{port}/",
            f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}))\"",
        )
        for command in tries:
            result = await runner.run(
                f"bash -c '{command}'" if "/dev/tcp" in command else command,
                timeout=20,
                lock=Lock(),
            )
            assert result.locked and result.exit_code != 0, (command, result.output.text())
        assert listener.hits == 0 and listener.data == b""
        plain = await runner.run(tries[1], timeout=20)
        assert "hello" in plain.output.text() and listener.hits == 1
    finally:
        await runner.close()


async def test_an_allowed_port_is_reached_and_a_write_reaches_none(
    listener: Listener, tmp_path: Path
) -> None:
    need("curl", "curl")
    runner = LocalRunner(cwd=tmp_path, lock=LockConfig(ports=(listener.port,)))
    curl = f"curl -sS -m 5 http://127.0.0.1:{listener.port}/"
    read = await runner.run(curl, timeout=20, lock=Lock())
    assert read.locked and read.output.text() == "hello\n"
    # A command judged a write runs with no port at all.
    write = await runner.run(curl, timeout=20, lock=Lock(network=False))
    assert write.locked and write.exit_code != 0
    assert listener.hits == 1


async def test_nothing_listens_inside_the_lock(tmp_path: Path) -> None:
    runner = LocalRunner(cwd=tmp_path)
    bind = (
        "python3 -c \"import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); "
        "s.listen(); print('listening')\""
    )
    locked = await runner.run(bind, timeout=20, lock=Lock())
    assert locked.exit_code != 0 and "listening" not in locked.output.text()
    assert "listening" in (await runner.run(bind, timeout=20)).output.text()


async def _runner(where: str, tmp_path: Path, request: pytest.FixtureRequest) -> Runner:
    if where == "local":
        return LocalRunner(cwd=tmp_path)
    server = request.getfixturevalue("sshd")
    return await _ssh(server, request.getfixturevalue("ssh_home"))


def _connect(address: str) -> str:
    return (
        'python3 -c "import socket; s = socket.socket(socket.AF_UNIX); '
        f"s.connect({address}); s.sendall(b'hi')\""
    )


@pytest.mark.parametrize("where", ["local", "ssh"])
async def test_unix_sockets(
    where: str, tmp_path: Path, shared: Path, request: pytest.FixtureRequest
) -> None:
    """An abstract socket outside the lock is never reached (ABI 6 holds it with sockets open);
    a pathname one only with `sockets`, as a read through a local service needs."""
    runner = await _runner(where, tmp_path, request)
    name = f"kosmos-lock-{os.getpid()}-{where}"
    abstract = Listener.unix(b"\0" + name.encode())
    path = shared / f"service-{where}.sock"
    pathname = Listener.unix(str(path))
    try:
        for sockets in (False, True):
            result = await runner.run(_connect(f"b'\\\\0{name}'"), timeout=20, lock=Lock(sockets))
            assert result.exit_code != 0, result.output.text()
        assert abstract.hits == 0
        refused = await runner.run(_connect(f"'{path}'"), timeout=20, lock=Lock(sockets=False))
        assert refused.exit_code != 0 and pathname.hits == 0
        allowed = await runner.run(_connect(f"'{path}'"), timeout=20, lock=Lock(sockets=True))
        assert allowed.exit_code == 0, allowed.output.text()
        plain = await runner.run(_connect(f"b'\\\\0{name}'"), timeout=20)
        assert plain.exit_code == 0, plain.output.text()
    finally:
        await runner.close()
        abstract.close()
        pathname.close()
    assert pathname.hits == 1 and abstract.hits == 1


@pytest.mark.parametrize("where", ["local", "ssh"])
async def test_no_signal_leaves_the_lock(
    where: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    runner = await _runner(where, tmp_path, request)
    user = None if where == "local" else request.getfixturevalue("sshd").user
    outside = subprocess.Popen(["sleep", "60"], user=user)
    try:
        result = await runner.run(f"kill {outside.pid}", timeout=20, lock=Lock())
        assert result.exit_code != 0 and outside.poll() is None
        assert "Operation not permitted" in result.output.text()
        # Its own processes it may signal.
        own = await runner.run("sleep 30 & kill $!; wait $!; echo $?", timeout=20, lock=Lock())
        assert own.output.text().strip() == "143"
    finally:
        outside.kill()
        outside.wait()
        await runner.close()


async def test_root_cannot_change_the_network_inside_the_lock(tmp_path: Path) -> None:
    need("ip", "iproute2")
    runner = LocalRunner(cwd=tmp_path)
    name = f"kl{os.getpid() % 100000}"
    result = await runner.run(f"ip link add {name} type bridge", timeout=20, lock=Lock())
    assert result.exit_code != 0
    assert "Operation not permitted" in result.output.text()
    shown = subprocess.run(["ip", "link", "show", name], capture_output=True, text=True)
    assert shown.returncode != 0
    # ifconfig-style ioctls on an IP socket: SIOCSIFFLAGS is refused, SIOCGIFFLAGS is not.
    ioctl = (
        'python3 -c "import fcntl, socket, struct, sys; s = socket.socket(socket.AF_INET, '
        "socket.SOCK_DGRAM); req = struct.pack('16sH22x', b'lo', 0); "
        "got = fcntl.ioctl(s, 0x8913, req); print('read'); "
        "fcntl.ioctl(s, 0x8914, got); print('set')\""
    )
    result = await runner.run(ioctl, timeout=20, lock=Lock())
    assert result.output.text().startswith("read\n") and "set" not in result.output.text()


async def test_sudo_cannot_gain_root_inside_the_lock(sshd: Sshd, ssh_home: Path) -> None:
    need("sudo", "sudo")
    runner = await _ssh(sshd, ssh_home)
    try:
        result = await runner.run("sudo -n id -u", timeout=20, lock=Lock())
    finally:
        await runner.close()
    assert result.exit_code != 0
    assert '"no new privileges" flag is set' in result.output.text()


# -- what a host offers, and what is held on an older kernel -------------------------------------


async def test_a_host_without_perl_or_python3_is_named_over_ssh(
    bare_sshd: Sshd, ssh_home: Path
) -> None:
    runner = await _ssh(bare_sshd, ssh_home)
    try:
        status = await _learnt(runner)
        assert not status.held
        assert status.describe() == "not held: neither perl nor python3 is on the host's PATH"
        # A lock asked for where there is none: the command runs as any command does.
        result = await runner.run("echo plain", timeout=20, lock=Lock())
        assert not result.locked and result.output.text() == "plain\n"
    finally:
        await runner.close()
        bare_sshd.clean_remote()


async def test_a_local_host_without_perl_or_python3_is_named(tmp_path: Path, bins: Path) -> None:
    host = _local(tmp_path, str(bin_without(bins, "perl", "python")))
    status = await _learnt(host.runner)
    assert status.describe() == "not held: neither perl nor python3 is on the host's PATH"


def _refusing(errno: int, probe: str) -> str:
    """Run `probe` under a seccomp filter that fails the Landlock calls with `errno`: a
    kernel without Landlock (ENOSYS) or a container profile that refuses it (EPERM)."""
    arch = lock_rules.ARCHES["x86_64" if os.uname().machine == "x86_64" else "aarch64"]
    program = b"".join(
        struct.pack("<HBBI", *op)
        for op in (
            (0x20, 0, 0, 4),  # ld arch
            (0x15, 1, 0, arch),
            (0x06, 0, 0, 0x7FFF0000),
            (0x20, 0, 0, 0),  # ld nr
            (0x35, 0, 3, 444),  # nr >= 444 ...
            (0x25, 2, 0, 446),  # ... and <= 446
            (0x06, 0, 0, 0x00050000 | errno),
            (0x06, 0, 0, 0x7FFF0000),
            (0x06, 0, 0, 0x7FFF0000),
        )
    )
    installer = (
        "import ctypes, os, struct, sys\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        f"code = ctypes.create_string_buffer({program!r}, {len(program)})\n"
        f"prog = struct.pack('HxxxxxxQ', {len(program) // 8}, ctypes.addressof(code))\n"
        "assert libc.prctl(38, 1, 0, 0, 0) == 0\n"
        "assert libc.prctl(22, 2, prog, 0, 0) == 0, ctypes.get_errno()\n"
        "os.execv('/bin/sh', ['sh', '-c', sys.argv[1]])\n"
    )
    done = subprocess.run(
        ["/usr/bin/python3", "-c", installer, probe], capture_output=True, text=True, check=True
    )
    return done.stdout


@pytest.mark.parametrize(
    ("errno", "why"),
    [
        (38, "not held: the kernel has no Landlock (Linux 5.13 or later has it)"),
        (1, "not held: the host refuses the Landlock calls (a container's seccomp profile?)"),
    ],
)
def test_a_kernel_that_refuses_landlock_is_named(errno: int, why: str) -> None:
    kit = HostLock()
    out = _refusing(errno, kit.probe_script())
    status = kit.learn(out)
    assert status is not None and status.describe() == why, out


def _probe_in(shell: str, script: str, *, mounts: str, path: str | None = None) -> list[str]:
    """The probe's lines, run in a mount namespace of its own where `mounts` (shell commands)
    have changed what /proc says of the kernel; skipped where that needs what is not here."""
    if os.geteuid() != 0:
        pytest.skip("needs root to change what /proc says of the kernel")
    need("unshare", "util-linux")
    need(shell, shell)
    env = {**os.environ, "PATH": path or os.environ.get("PATH", os.defpath)}
    out = subprocess.run(
        ["unshare", "-m", shell, "-c", f"{mounts} || exit 99; {script}"],
        capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert out.returncode != 99, out.stderr
    return out.stdout.splitlines()


@pytest.mark.parametrize("shell", ["dash", "bash"])
@pytest.mark.parametrize(
    ("says", "os_line", "lock_line"),
    [
        ("Darwin arm64", "os Darwin", "lock uname=Darwin arm64"),
        ("", "os ", "lock uname="),  # uname failed: neither is named
        (None, "os Linux", "lock arch="),  # this machine's own uname
    ],
)
def test_without_the_kernels_files_the_probe_asks_uname(
    tmp_path: Path, shell: str, says: str | None, os_line: str, lock_line: str
) -> None:
    """A kernel older than 6.1 has no /proc/sys/kernel/arch, a BSD no /proc/sys: uname says."""
    path = None
    if says is not None:
        fake = tmp_path / "bin"
        fake.mkdir()
        (fake / "uname").write_text(f"#!/bin/sh\n[ -n '{says}' ] && echo '{says}'\n")
        (fake / "uname").chmod(0o755)
        path = f"{fake}:{os.environ.get('PATH', os.defpath)}"
    script = HostLock().probe_script(os_line=True)
    out = _probe_in(shell, script, mounts="mount -t tmpfs none /proc/sys/kernel", path=path)
    assert out[0] == os_line and out[1].startswith(lock_line), out
    # Without os_line, the lock's line is the first.
    alone = subprocess.run([shell, "-c", HostLock().probe_script()], capture_output=True, text=True)
    assert alone.stdout.startswith("lock arch=")


@pytest.mark.parametrize("shell", ["dash", "bash"])
def test_the_probe_reads_the_kernels_name_and_arch_from_proc(tmp_path: Path, shell: str) -> None:
    """Where /proc names them, no uname runs: one that would say Darwin is not asked, and the
    arch the kernel names is the one the lock is built for (or refused)."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "uname").write_text("#!/bin/sh\necho Darwin arm64\n")
    (fake / "uname").chmod(0o755)
    path = f"{fake}:{os.environ.get('PATH', os.defpath)}"
    script = HostLock().probe_script(os_line=True)
    out = _probe_in(shell, script, mounts="true", path=path)
    assert out[0] == "os Linux" and out[1].startswith("lock arch="), out
    arch = tmp_path / "arch"
    arch.write_text("riscv64\n")
    out = _probe_in(shell, script, mounts=f"mount --bind {arch} /proc/sys/kernel/arch", path=path)
    assert out == ["os Linux", "lock uname=Linux riscv64"], out
    assert HostLock().learn(out[1]) == parse_probe("uname=Linux riscv64")


def test_probe_lines_name_what_is_missing() -> None:
    assert parse_probe("uname=Darwin arm64").describe() == "not held: not Linux (Darwin)"
    assert parse_probe("uname=Linux riscv64").describe() == (
        "not held: the lock is built for x86_64 and aarch64, not riscv64"
    )
    held = parse_probe("arch=x86_64;via=perl;abi=7;nnp=ok;landlock=ok;seccomp=Invalid argument")
    assert held.held and not held.full
    assert held.describe() == "held (Landlock ABI 7, no seccomp: refused (Invalid argument))"


async def test_an_older_abi_holds_files_but_not_ports_or_signals(
    tmp_path: Path, listener: Listener
) -> None:
    """A ruleset of ABI 3 on this kernel is what an ABI 3 kernel enforces: files stay held,
    TCP and signals do not (the README's table says so)."""
    need("curl", "curl")
    runner = LocalRunner(cwd=tmp_path)
    runner.host_lock.status = LockStatus(abi=3, seccomp=True, interpreter="perl", arch=_arch())
    where = make_scratch(tmp_path / "old")
    before = state(where)
    touched = await runner.run(f"cd {where} && touch new; truncate -s0 F", timeout=20, lock=Lock())
    assert state(where) == before and touched.locked
    reached = await runner.run(
        f"curl -sS -m 5 http://127.0.0.1:{listener.port}/", timeout=20, lock=Lock()
    )
    assert "hello" in reached.output.text() and listener.hits == 1
    assert runner.host_lock.status.describe() == (
        "held (Landlock ABI 3, seccomp; no TCP rules before ABI 4, no scopes before ABI 6)"
    )
    assert runner.host_lock.status.gaps() == [
        "TCP bind and connect (Landlock ABI 4)",
        "signals and abstract unix sockets (Landlock ABI 6)",
    ]


def _arch() -> str:
    return lock_rules.ARCH_NAMES[os.uname().machine]


# -- the prelude itself ----------------------------------------------------------------------------


@pytest.mark.parametrize("interpreter", ["perl", "python3"])
def test_a_lock_that_cannot_be_set_runs_nothing(interpreter: str, tmp_path: Path) -> None:
    kit = HostLock(status=LockStatus(abi=7, seccomp=True, interpreter=interpreter, arch=_arch()))
    words = kit.words(Lock(), "sh")
    assert words is not None
    spec = words[-3].replace("path=", "path=4:/no/such/dir path=", 1)
    marker = tmp_path / "ran"
    done = subprocess.run(
        [*words[:-3], spec, "sh", "-c", f"echo ran > {marker}; echo ran"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 126 and done.stdout == "" and not marker.exists()
    assert done.stderr.startswith("kosmos: the kernel lock could not be set (open /no/such/dir")


def test_the_syscall_numbers_match_the_kernel_headers() -> None:
    headers = {
        "x86_64": Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h"),
        "aarch64": Path("/usr/include/asm-generic/unistd.h"),
    }
    checked = 0
    for arch, header in headers.items():
        if not header.exists():
            continue
        text = header.read_text()
        for name, number in lock_rules.SYSCALLS[arch].items():
            found = re.search(rf"#define __NR(?:3264)?_{name}\s+(\d+)", text)
            if found:  # calls newer than the headers (fchmodat2, *xattrat) are not in them
                assert int(found.group(1)) == number, (arch, name)
                checked += 1
    if not checked:
        pytest.skip("no kernel headers here (linux-libc-dev)")
    assert checked > 60


@pytest.mark.parametrize("arch", sorted(lock_rules.ARCHES))
@pytest.mark.parametrize("sockets", [False, True])
def test_the_filter_assembles_for_each_arch(arch: str, sockets: bool) -> None:
    code = build_filter(arch, sockets=sockets, truncate=True)
    assert len(code) % 8 == 0 and 100 < len(code) // 8 < 4096


def test_hosts_check_names_the_lock_of_each_host(
    sshd: Sshd, bare_sshd: Sshd, cli_env: dict, home: Path, tmp_path: Path
) -> None:
    ssh_dir = write_client_home(home, sshd)
    key = ssh_dir / "bare_ed25519"
    shutil.copy(bare_sshd.client_key, key)
    key.chmod(0o600)
    with (ssh_dir / "config").open("a") as f:
        f.write(
            f"Host bare\n  HostName 127.0.0.1\n  Port {bare_sshd.port}\n"
            f"  User {bare_sshd.user}\n  IdentityFile {key}\n"
        )
    with (ssh_dir / "known_hosts").open("a") as f:
        f.write(bare_sshd.known_hosts_line())
    env = {k: v for k, v in cli_env.items() if k != "SSH_AUTH_SOCK"}
    checked = run_cli(["hosts", "--check"], env=env, cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    rows = {line.split()[0]: line for line in checked.stdout.splitlines()}
    assert rows["HOST"].split()[-1] == "LOCK"
    assert rows["box"].endswith("  held (Landlock ABI 7, seccomp)")
    assert rows["bare"].endswith("  not held: neither perl nor python3 is on the host's PATH")
    assert " Linux · " in rows["bare"]


async def test_root_cannot_change_the_system_inside_the_lock(tmp_path: Path) -> None:
    """Root's writes that are no file: a mount, the host name, IPC of another process, the
    kernel log, a device's ioctl, io_uring, ptrace of a process outside."""
    runner = LocalRunner(cwd=tmp_path)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    queue = subprocess.run(["ipcmk", "-Q"], capture_output=True, text=True, check=True)
    qid = queue.stdout.split()[-1]
    outside = subprocess.Popen(["sleep", "60"])
    py = "python3 -c " + shlex.quote(
        "import ctypes, fcntl, sys, termios\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "def check(what, ok):\n"
        "    print(what, 'done' if ok else 'refused')\n"
        "try:\n"
        "    fcntl.ioctl(open('/dev/zero'), termios.TCGETS, bytes(64))\n"
        "except OSError as e:\n"
        "    print('ioctl', e.strerror)\n"
        "check('io_uring', libc.syscall(425, 1, ctypes.create_string_buffer(120)) >= 0)\n"
        f"check('ptrace', libc.ptrace(16, {outside.pid}, 0, 0) == 0)\n"
    )
    try:
        tries = {
            f"mount -t tmpfs kosmos {mnt}": "permission denied",
            'hostname "$(hostname)"': "you must be root to change the host name",
            f"ipcrm -q {qid}": f"permission denied for id ({qid})",
            "dmesg -C": "Operation not permitted",
        }
        for command, said in tries.items():
            result = await runner.run(command, timeout=20, lock=Lock())
            assert result.exit_code != 0 and said in result.output.text(), command
        result = await runner.run(py, timeout=20, lock=Lock())
        text = result.output.text()
        assert "ioctl Permission denied" in text  # Landlock's EACCES, not ENOTTY
        assert "io_uring refused" in text and "ptrace refused" in text, text
        assert not os.path.ismount(mnt)
        assert qid in subprocess.run(["ipcs", "-q"], capture_output=True, text=True).stdout
        # Without the lock each of them goes through (the sleep is ours to trace).
        plain = (await runner.run(py, timeout=20)).output.text()
        assert "ioctl Inappropriate ioctl for device" in plain and "ptrace done" in plain
    finally:
        outside.kill()
        outside.wait()
        subprocess.run(["ipcrm", "-q", qid], capture_output=True)
        subprocess.run(["umount", str(mnt)], capture_output=True)
