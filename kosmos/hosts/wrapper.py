"""The shell script around every command: which shell runs it, and nothing left behind.

Every command runs under bash where the host has bash (else a POSIX sh), so that the shell
that runs it reads it as the approval policy did; kosmos's own scripts (a file read, the probe
of the host), which no policy reads, run in sh. The script around it:

* names the command's process group and the shell on the first line of stderr (the marker),
  so that kosmos can end the whole tree and learns which dialect the host runs;
* gives the command /dev/null for stdin, or exactly the line kosmos sends (a sudo password);
* keeps the channel's stdin open and ends the whole process group when it reads end-of-file
  there: kosmos sends that to stop a command, and sshd delivers it when the connection is
  gone (kosmos killed, out of memory, the network cut). OpenSSH sends no signal to a command
  without a terminal when its client goes; without this, the command would run on for good.

The same script runs local commands, so a killed kosmos leaves nothing behind here either.
Inside the kernel lock, where the host's prelude is perl's, the prelude does the same work
itself (`watch_items`), with no shell around it: one fork and exec fewer per command.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

from kosmos.hosts.runner import COMMAND_ENV, Shell

__all__ = [
    "MARK",
    "MARK_OWN",
    "command_items",
    "kill_script",
    "local_script",
    "parse_mark",
    "plain",
    "remote_command",
    "watch_items",
]

MARK = b"\x1fkosmos-pgid "
# After the first signal, how long the group gets before SIGKILL.
GRACE_S = 1

_EXPORTS = "export " + " ".join(f"{k}={v}" for k, v in COMMAND_ENV.items())
_MARKER = 'printf "\\037kosmos-pgid %s %s %s\\n" "$$" "$SHELL" {dialect}'
_MARK = _MARKER.format(dialect='"${BASH_VERSION:+bash}"') + " >&2"
# The same marker from the sh that runs kosmos's own script: the dialect the host's commands
# will run in, bash where `command -v` finds it (as the script that picks bash decides).
# On stdout in the session that learns the host and then serves (hosts/ssh_serve.py).
MARK_OWN = "d=; command -v bash >/dev/null 2>&1 && d=bash; " + _MARKER.format(dialect='"$d"')
_MARK_OWN = MARK_OWN + " >&2"
# fd 3 keeps the channel's stdin for the watcher: a background list gets /dev/null for stdin
# before its own redirections, so `<&0` there would read nothing. `$$` is the group leader:
# sshd starts each session with setsid(), and the shell keeps that pid through `exec`. On
# end-of-file the watcher sends TERM to the group, waits up to the grace for the shell to go,
# then KILLs what is left, itself included. It holds the output open until then, so the
# channel closes only once nothing of the command is left. The command runs in a subshell:
# one that `exec`s replaces only that, and the shell's EXIT trap ends the watcher.
_WATCH = (
    "exec 3<&0; "
    '( trap "" TERM; while read -r x; do :; done <&3; kill -TERM -$$ 2>/dev/null; n=0; '
    f'while kill -0 $$ 2>/dev/null && [ "$n" -lt {GRACE_S * 10} ]; do sleep 0.1; n=$((n+1)); '
    "done; kill -KILL -$$ 2>/dev/null ) & "
    'w=$!; exec 3<&-; trap "kill -9 $w 2>/dev/null" EXIT'
)
# The shell around the command says nothing of its own: where the command's process ends by a
# signal (the group's TERM when kosmos stops it), the shell that waited for it would print
# `Terminated` on the output, or not, as the race between the two falls. Its stderr goes to
# /dev/null; the command gets the real one (fd 3 while it is handed over).
_QUIET = "exec 3>&2 2>/dev/null; "
_TO_COMMAND = " 2>&3 3>&-"
_RUN = _QUIET + '( eval "$1" ) </dev/null' + _TO_COMMAND
# The line kosmos sends first goes to the command, and nothing else does.
_FEED = (
    "IFS= read -r kosmos_in; "
    + _QUIET
    + 'printf "%s\\n" "$kosmos_in" | ( unset kosmos_in; eval "$1" )'
    + _TO_COMMAND
)
# Inside the kernel lock (hosts/lock.py): the words after the command are the prelude and
# `SHELL -c`, which get the command last. Only the command enters the lock: the watcher
# stays outside it, free to end the group.
_RUN_LOCKED = _QUIET + 'c=$1; shift; "$@" "$c" </dev/null' + _TO_COMMAND
_FEED_LOCKED = (
    "IFS= read -r kosmos_in; "
    + _QUIET
    + 'c=$1; shift; printf "%s\\n" "$kosmos_in" | "$@" "$c"'
    + _TO_COMMAND
)


def _script(*, mark: bool, feed: bool, locked: bool = False, own: bool = False) -> str:
    parts = [(_MARK_OWN if own else _MARK) + "; exec 2>&1; " + _EXPORTS] if mark else []
    if feed:
        # Read the line before the watcher starts reading the same stdin.
        read, run = (_FEED_LOCKED if locked else _FEED).split("; ", 1)
        parts += [read, _WATCH, run]
    else:
        parts += [_WATCH, _RUN_LOCKED if locked else _RUN]
    script = "; ".join(parts)
    assert "'" not in script
    return script


_SCRIPTS = {
    (feed, locked): _script(mark=True, feed=feed, locked=locked)
    for feed in (False, True)
    for locked in (False, True)
}
_OWN_SCRIPT = _script(mark=True, feed=False, own=True)


# Words that every shell passes through as they stand: no quote, no expansion ($, `, ~, a
# glob, braces), no operator, redirection or comment; one space between two words.
_PLAIN = re.compile(r"[A-Za-z0-9_./:,@%+=-]+(?: [A-Za-z0-9_./:,@%+=-]+)*\Z")
# What a shell runs itself rather than as a program of that name: bash's builtins and
# reserved words (`compgen -b`, `compgen -k`) and dash's.
_SHELL_OWN = (
    ". : [ alias bg bind break builtin caller cd chdir command compgen complete compopt "
    "continue declare dirs disown echo enable eval exec exit export false fc fg getopts hash "
    "help history jobs kill let local logout mapfile popd printf pushd pwd read readarray "
    "readonly return set shift shopt source suspend test times trap true type typeset ulimit "
    "umask unalias unset wait if then else elif fi case esac for select while until do done "
    "in function time { } ! [[ ]] coproc"
)
SHELL_OWN = frozenset(_SHELL_OWN.split())


def plain(command: str) -> bool:
    """The command is a program and its arguments as plain words: what bash and sh would run
    is `execvp(words[0], words)`, which the perl prelude does itself (`argv=1`), after the
    checks only the host can make (prelude/lock.pl)."""
    if not _PLAIN.match(command):
        return False
    first = command.split(" ", 1)[0]
    return "=" not in first and first[0] not in "-%" and first not in SHELL_OWN


def command_items(command: str | None) -> list[str]:
    """The perl prelude's items for a remote command: its environment, and `argv=1` where
    it is `plain` (the prelude execs it itself)."""
    items = [f"env={k}={v}" for k, v in COMMAND_ENV.items()]
    if command is not None and plain(command):
        items.append("argv=1")
    assert not any(" " in item for item in items)
    return items


def watch_items(*, mark: bool, feed: bool, command: str | None = None) -> list[str]:
    """The perl prelude's items that make it the wrapper (`watch=1`, prelude/lock.pl): the
    script's work for a command inside the lock. `mark`: name the process group first and
    set the environment (a remote host); `feed`: the first line sent is the command's stdin;
    `command`: the command, which the prelude execs itself where it is `plain`."""
    items = ["watch=1"]
    if mark:
        items += ["mark=1", *command_items(None)]
    if feed:
        items.append("feed=1")
    if command is not None and plain(command):
        items.append("argv=1")
    return items


# Login shells of the csh family read `!` as a history event even inside single quotes, and
# under `-c` too (tcsh: "Event not found"), and refuse a newline inside quotes ("Unmatched
# '"): the prelude's source has both, and so may a command.
CSH_SHELLS = frozenset({"csh", "tcsh"})
_SH_DECODES = 'exec sh -c \'eval "$(printf %b "$1")"\' sh '


def login_line(line: str, login: str | None) -> str:
    r"""`line`, a POSIX sh command line for sshd to hand to the login shell, as that shell is
    to read it: unchanged where the login shell is known to read it as sh does; where it is a
    csh, or not known yet, and the line holds a `!` or a newline, handed to sh in a form with
    neither: printf's %b escapes, in octal for the backslash, the single quote and `!`, `\n`
    for the newline. That form every login shell passes on as it is: fish reads only `\\` and
    `\'` inside single quotes, csh only a backslash before `!` or a newline."""
    if login is not None and login not in CSH_SHELLS:
        return line
    if "!" not in line and "\n" not in line:
        return line
    encoded = (
        line.replace("\\", "\\0134")
        .replace("'", "\\0047")
        .replace("!", "\\0041")
        .replace("\n", "\\n")
    )
    return f"{_SH_DECODES}'{encoded}'"


def remote_command(
    command: str,
    *,
    login: str | None,
    dialect: Shell | None,
    feed: bool = False,
    lock: Sequence[str] | None = None,
    watched: bool = False,
    own: bool = False,
) -> str:
    """The command line sent to sshd, which runs it with the login shell's `-c`.

    A login shell that is bash runs the script itself (as `ssh host CMD` would); any other
    login shell execs into bash, or sh on a host without bash. Before the host has said which
    it has, the script asks for bash and falls back on sh. `exec sh -c '...'` is the one form
    every login shell (fish, csh included) reads the same. `lock`: the words that run the
    command inside the kernel lock (`HostLock.words`); `watched`: those words are the prelude
    that is the wrapper too (`watch_items`), which the login shell then execs itself.

    `own`: the command is kosmos's own POSIX script (a file read, the probe of the host), which
    no policy reads and which takes no stdin and no lock: sh runs it, in a third less of the
    host's CPU than bash, and its marker still says whether the host's commands will run in
    bash. (A login bash whose dialect is bash runs it itself, as it runs a command.)

    A csh login shell gets the line in a form it passes on unread (`login_line`).
    """
    line = _remote_line(
        command, login=login, dialect=dialect, feed=feed, lock=lock, watched=watched, own=own
    )
    return login_line(line, login)


def _remote_line(
    command: str,
    *,
    login: str | None,
    dialect: Shell | None,
    feed: bool,
    lock: Sequence[str] | None,
    watched: bool,
    own: bool,
) -> str:
    if lock is not None and watched:
        return "exec " + " ".join(shlex.quote(word) for word in (*lock, command))
    own_in_sh = own and (login, dialect) != ("bash", "bash")
    script = _OWN_SCRIPT if own_in_sh else _SCRIPTS[(feed, lock is not None)]
    quoted = " ".join(shlex.quote(word) for word in (command, *(lock or ())))
    if own_in_sh or (lock is not None and dialect is not None):
        # sh runs kosmos's own script (`own`), and the script around a locked command: inside
        # the lock the command runs in the shell the lock's words end with (the dialect); the
        # script around it only starts it and watches, which a POSIX sh does in less time than
        # bash. (Its marker's dialect field is not read then: the dialect is known.)
        return f"exec sh -c '{script}' sh {quoted}"
    if login == "bash" and dialect == "bash":
        return f"set -- {quoted}; {script}"
    # $0 is the shell's own name, so that a shell error reads `bash: line 1: ...`.
    if dialect is not None:
        return f"exec {dialect} -c '{script}' {dialect} {quoted}"
    # The script comes first and is shifted off, so the command and the lock's words that
    # follow it are the script's "$@" in whichever shell runs it.
    pick = 'command -v bash >/dev/null 2>&1 && exec bash -c "shift; $1" bash "$@"; eval "shift; $1"'
    return f"exec sh -c '{pick}' sh '{script}' {quoted}"


def local_script(*, feed: bool, locked: bool = False) -> str:
    """The script for `SHELL -c SCRIPT SHELL COMMAND [LOCK WORDS]` on this machine (no
    marker: the runner knows its child's pid, and sets the environment itself)."""
    return _script(mark=False, feed=feed, locked=locked)


def parse_mark(line: bytes) -> tuple[int, str, Shell]:
    """The marker's fields: the process group, the login shell's name, the dialect."""
    fields = line.decode(errors="replace").split(" ")
    pgid = int(fields[0]) if fields and fields[0].isdigit() else 0
    login = fields[1].rsplit("/", 1)[-1] if len(fields) > 1 else ""
    dialect: Shell = "bash" if len(fields) > 2 and fields[2].strip() == "bash" else "sh"
    return pgid, login, dialect


def kill_script(pgid: int) -> str:
    """Ends a process group from another channel: for when the watcher could not."""
    # dash's kill has no `--`; a negative number is a process group in every sh.
    script = (
        f"kill -TERM -{pgid} 2>/dev/null || kill -TERM {pgid} 2>/dev/null; i=0; "
        f'while kill -0 -{pgid} 2>/dev/null && [ "$i" -lt 10 ]; do sleep 0.05; i=$((i+1)); done; '
        f"kill -KILL -{pgid} 2>/dev/null; true"
    )
    return f"exec sh -c {shlex.quote(script)}"
