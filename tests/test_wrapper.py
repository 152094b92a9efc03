"""The wrapper's command line as sshd's login shell runs it: real dash and bash.

Whatever the login shell and whatever kosmos knows of the host's dialect, the command gets
the shell's own name as `$0` (an error reads `bash: ...`, never `kosmos: ...`), and the
words that run it inside the kernel lock reach the script intact after the command.
"""

from __future__ import annotations

import subprocess

import pytest

from kosmos.hosts.runner import Shell
from kosmos.hosts.wrapper import remote_command

COMMAND = 'printf "%s|" "$0" "$@"; echo; no-such-cmd-xyz'
# Stand-ins for the lock's prelude: the words before the command text, ending in `SHELL -c`.
LOCK = ["env", "KOSMOS_LOCKED=1", "bash", "-c"]


def _run(login: str, line: str) -> str:
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
