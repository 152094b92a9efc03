"""The wrapper's command line as sshd's login shell runs it: real dash and bash.

Whatever the login shell and whatever kosmos knows of the host's dialect, the command gets
the shell's own name as `$0` (an error reads `bash: ...`, never `kosmos: ...`), and the
words that run it inside the kernel lock reach the script intact after the command.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kosmos.hosts import lock_rules
from kosmos.hosts.lock import HostLock, LockStatus
from kosmos.hosts.runner import Lock, Shell
from kosmos.hosts.wrapper import MARK, SHELL_OWN, parse_mark, plain, remote_command, watch_items
from tests.helpers import need

COMMAND = 'printf "%s|" "$0" "$@"; echo; no-such-cmd-xyz'
# Stand-ins for the lock's prelude: the words before the command text, ending in `SHELL -c`.
LOCK = ["env", "KOSMOS_LOCKED=1", "bash", "-c"]
linux_root = pytest.mark.skipif(
    sys.platform != "linux" or os.geteuid() != 0, reason="the lock's tests run as root on Linux"
)


def _arch() -> str:
    return lock_rules.ARCH_NAMES[os.uname().machine]


def _run(login: str, line: str) -> str:
    need(login, login)  # bash or dash, each of its own package
    proc = subprocess.run(
        [login, "-c", line],  # argv[0] the shell's bare name, as sshd starts it
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=10,
    )
    return proc.stdout


@pytest.mark.parametrize("dialect", [None, "sh", "bash"])
@pytest.mark.parametrize("login", ["dash", "bash"])
def test_the_command_sees_the_shell_as_its_name(login: str, dialect: Shell | None) -> None:
    out = _run(login, remote_command(COMMAND, login=login, dialect=dialect))
    first, error = out.splitlines()  # the marker line goes to stderr
    shell = dialect or "bash"  # before the dialect is known, bash where there is one
    assert first == f"{shell}|{COMMAND}|"  # the script's "$1" is the command it evaluates
    assert error.startswith(f"{shell}: ") and "no-such-cmd-xyz" in error


@pytest.mark.parametrize("dialect", [None, "sh", "bash"])
@pytest.mark.parametrize("login", ["dash", "bash"])
def test_the_lock_words_run_the_command(login: str, dialect: Shell | None) -> None:
    line = remote_command(
        'echo "locked=$KOSMOS_LOCKED"; ' + COMMAND, login=login, dialect=dialect, lock=LOCK
    )
    lines = _run(login, line).splitlines()
    assert lines[:2] == ["locked=1", "bash|"]
    assert lines[2].startswith("bash: ") and "no-such-cmd-xyz" in lines[2]


def _own(login: str, line: str, env: dict[str, str] | None = None) -> tuple[str, Shell]:
    """Run kosmos's own script's line as sshd would (the channel open on stdin until it is
    done): its output, and the dialect its marker names."""
    need(login, login)
    proc = subprocess.Popen(
        [login, "-c", line],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    out, err = proc.stdout.read(), proc.stderr.read()  # until the script's processes are gone
    proc.stdin.close()
    proc.wait(timeout=10)
    proc.stdout.close()
    proc.stderr.close()
    _, _, dialect = parse_mark(err.split(MARK, 1)[1].split(b"\n", 1)[0])
    return out.decode(), dialect


@pytest.mark.parametrize("dialect", [None, "sh", "bash"])
@pytest.mark.parametrize("login", ["dash", "bash"])
def test_kosmos_own_script_runs_in_sh_and_still_names_the_dialect(
    login: str, dialect: Shell | None
) -> None:
    dash = need("dash", "dash")
    if os.path.realpath(shutil.which("sh") or "sh") != os.path.realpath(dash):
        pytest.skip("sh is not dash here: kosmos's own script would run in another shell")
    line = remote_command(
        'echo "$0 ${BASH_VERSION:-no bash}"', login=login, dialect=dialect, own=True
    )
    out, marked = _own(login, line)
    if login == "bash" and dialect == "bash":  # the login bash runs it itself, as a command
        assert out.startswith("bash ") and "no bash" not in out
    else:
        assert out == "sh no bash\n"
    # The host's commands run in bash: the marker says so though the script ran in sh.
    assert marked == "bash"


def test_kosmos_own_script_on_a_host_without_bash_names_sh(tmp_path: Path) -> None:
    path = tmp_path / "bin"
    path.mkdir()
    dash = need("dash", "dash")
    for name in ("sh", "dash"):
        (path / name).symlink_to(dash)
    line = remote_command("echo read", login=None, dialect=None, own=True)
    out, marked = _own("dash", line, env={"PATH": str(path), "SHELL": dash})
    assert out == "read\n" and marked == "sh"
    # The first command's script of a host not yet known picks bash where there is one: here
    # it falls back on sh, and its marker says the same.
    out, marked = _own("dash", remote_command("echo ran", login=None, dialect=None),
                       env={"PATH": str(path), "SHELL": dash})  # fmt: skip
    assert out == "ran\n" and marked == "sh"


# -- the perl prelude as the wrapper (a command inside the kernel lock) ---------------------


def _watched(command: str, *, feed: bool) -> list[str]:
    kit = HostLock(status=LockStatus(abi=7, seccomp=True, interpreter="perl", arch=_arch()))
    assert kit.watches
    words = kit.words(Lock(), "bash", watch=watch_items(mark=True, feed=feed))
    assert words is not None
    return words


def _start(login: str, line: str) -> subprocess.Popen[bytes]:
    # As sshd starts a command: a session of its own, the channel on stdin.
    need(login, login)
    return subprocess.Popen(
        [login, "-c", line],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


@linux_root
@pytest.mark.parametrize("feed", [False, True])
@pytest.mark.parametrize("login", ["dash", "bash"])
def test_the_prelude_marks_feeds_and_runs_the_command_locked(login: str, feed: bool) -> None:
    command = 'echo "$PAGER|$0"; cat; grep -E "^(Seccomp|NoNewPrivs):" /proc/self/status; exit 3'
    line = remote_command(
        command,
        login=login,
        dialect="bash",
        feed=feed,
        lock=_watched(command, feed=feed),
        watched=True,
    )
    proc = _start(login, line)
    assert proc.stdin is not None
    proc.stdin.write(b"the line\nnot for the command\n" if feed else b"")
    proc.stdin.flush()
    # stdin stays open while the command runs: its end-of-file would stop the command.
    assert proc.stdout is not None and proc.stderr is not None
    out, err = proc.stdout.read(), proc.stderr.read()  # until the command's processes are gone
    assert proc.wait(timeout=10) == 3
    proc.stdin.close()  # as the channel closes: the watcher ends too
    proc.stdout.close()
    proc.stderr.close()
    pgid, _, dialect = parse_mark(err.split(MARK, 1)[1].split(b"\n", 1)[0])
    assert pgid == proc.pid and dialect == "bash"
    assert err.split(MARK, 1)[0] == b"" and err.count(b"\n") == 1  # stderr goes to stdout
    fed = "the line\n" if feed else ""  # the first line only; else /dev/null
    assert out.decode() == f"cat|bash\n{fed}NoNewPrivs:\t1\nSeccomp:\t2\n"


@linux_root
@pytest.mark.parametrize("login", ["dash", "bash"])
def test_end_of_file_on_stdin_ends_the_locked_command_and_its_watcher(login: str) -> None:
    need("ps", "procps")  # before the command starts: a skip must leave nothing open
    marker = "sleep 1919"
    command = f"{marker} & {marker}; echo never"
    proc = _start(
        login,
        remote_command(
            command, login=login, dialect="bash", lock=_watched(command, feed=False), watched=True
        ),
    )
    assert proc.stdin is not None and proc.stdout is not None
    group = proc.pid
    for _ in range(200):
        if len(_group(group)) >= 4:  # the leader (bash), its two sleeps and the watcher
            break
        time.sleep(0.05)
    members = _group(group)
    watcher = [m for m in members if m[1].startswith("perl ")]
    assert len(watcher) == 1 and len(members) == 4, members
    # The watcher stays outside the lock, free to end the group.
    assert "\nSeccomp:\t0\n" in Path(f"/proc/{watcher[0][0]}/status").read_text()
    proc.stdin.close()
    assert proc.stdout.read() == b""  # the output closes once the command is gone
    proc.wait(timeout=10)
    proc.stdout.close()
    assert proc.stderr is not None and MARK in proc.stderr.read()
    proc.stderr.close()
    deadline = time.monotonic() + 10
    while _group(group) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _group(group) == []


def _group(pgid: int) -> list[tuple[int, str]]:
    """Live members of a process group: (pid, args)."""
    need("ps", "procps")
    out = subprocess.run(
        ["ps", "-eo", "pid=,pgid=,stat=,args="], capture_output=True, text=True
    ).stdout
    found = []
    for row in out.splitlines():
        pid, group, stat, args = row.split(None, 3)
        if int(group) == pgid and not stat.startswith("Z"):
            found.append((int(pid), args))
    return found


@linux_root
def test_a_locked_command_that_waits_for_all_its_children_does_not_wait_for_the_watcher() -> None:
    command = """exec perl -e '1 while wait != -1; print "no child left\\n"'"""
    line = remote_command(
        command, login="dash", dialect="bash", lock=_watched(command, feed=False), watched=True
    )
    proc = _start("dash", line)
    assert proc.stdout is not None and proc.stderr is not None and proc.stdin is not None
    try:
        assert proc.wait(timeout=10) == 0  # stdin stays open: the watcher lives on
        assert proc.stdout.read() == b"no child left\n"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.stdin.close()
        proc.stdout.close()
        proc.stderr.close()


# -- plain words, which the perl prelude execs itself --------------------------------------------

PLAIN = (
    "hostname",
    "df -P /",
    "uptime",
    "systemctl status nginx.service",
    "journalctl -u ssh --since=-1h -n 50",
    "dd if=/dev/zero of=/dev/null count=1",
    "/usr/bin/id -u",
    "./run.sh --a=b,c:d@e%f+g",
    "ls ..",
)
NOT_PLAIN = (
    "echo hi",  # a builtin
    "true",
    "test -f x",
    "[ -f x ]",
    "time ls",  # a reserved word
    "if",
    "A=1 env",  # an assignment
    "-x",
    "%1",
    "ls  -l",  # two spaces
    " ls",
    "ls ",
    "ls\tx",
    "ls\nid",
    "ls *",
    "ls ?",
    "ls [ab]",
    "ls ~",
    "ls ~root",
    "ls {a,b}",
    "ls $HOME",
    "ls `id`",
    "ls 'x'",
    'ls "x"',
    "ls x\\ y",
    "ls #x",
    "ls;id",
    "ls|cat",
    "ls&",
    "ls>x",
    "ls<x",
    "ls (x)",
    "ls !x",
    "",
)


@pytest.mark.parametrize("command", PLAIN)
def test_plain_words_are_what_bash_and_dash_would_run(command: str) -> None:
    assert plain(command)
    # The oracle: the words each shell hands the program are the command split on spaces.
    show = 'for w in "$@"; do printf "%s\\0" "$w"; done'
    for shell in ("bash", "dash"):
        need(shell, shell)
        got = subprocess.run(
            [shell, "-c", f"f() {{ {show}; }}; f {command}"], capture_output=True, check=True
        ).stdout
        assert got.decode().split("\0")[:-1] == command.split(" "), shell


@pytest.mark.parametrize("command", NOT_PLAIN)
def test_anything_a_shell_reads_is_not_plain(command: str) -> None:
    assert not plain(command)
    assert "argv=1" not in watch_items(mark=True, feed=False, command=command)


def test_every_builtin_and_reserved_word_of_bash_is_the_shells_own() -> None:
    words = subprocess.run(
        ["bash", "-c", "compgen -b; compgen -k"], capture_output=True, text=True, check=True
    ).stdout.split()
    assert set(words) <= SHELL_OWN
    assert not any(plain(f"{word} x") for word in words)
    assert "argv=1" in watch_items(mark=False, feed=True, command="hostname")
    assert "argv=1" not in watch_items(mark=False, feed=True)
