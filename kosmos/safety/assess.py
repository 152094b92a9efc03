"""Decide whether a shell command only reads, writes, or is dangerous.

`assess` parses the command (`shell`, no shell runs) in the dialect of the shell that will
run it and walks every simple command it would run (`walk`): in pipelines and lists,
subshells, groups, functions, `$(...)`, backticks (also inside double quotes and
here-documents), `<(...)`, the scripts of `sh -c`, `eval`, `su -c`, `watch` and `ssh`, and
the commands that wrappers start (sudo, env, nice, ionice, timeout, nohup, time, command,
exec, stdbuf, xargs, find -exec).

* read_only: every command is on the read-only list with only read-only options, no
  redirection writes anywhere but /dev/null or another descriptor, and no assignment sets
  a variable that changes what runs (PATH, LD_PRELOAD, a pager...).
* dangerous: one step can wreck the host or its data (wipe, reformat, reboot, firewall
  lockout, dropped database...): the operator types the host's name, headless refuses.
* write: everything else, including text that cannot be parsed. sudo is never read-only.

When unsure the answer is "write": a false "write" costs one question, a false "read_only"
runs something nobody approved.

Judgement calls:
* `rm -r` is dangerous on /, ~, $HOME and the top-level system directories (and /usr/bin,
  /usr/lib, /usr/sbin, /usr/lib64, /var/lib), with or without a trailing / or /*, also
  through globs and braces (/e*, /{etc,usr}) and through a literal `cd` earlier in the same
  line (`cd / && rm -rf *`). `.`, `..` and `*` alone are only "write": the working
  directory is unknown, and `cd build && rm -rf *` is an everyday clean-up.
* `rm`, truncation (`>`), `cp`/`mv`/`tee`/`truncate` onto /etc/passwd, shadow, group,
  gshadow, sudoers or fstab are dangerous; `>>` onto them is only "write".
* SQL drop statements count anywhere in the text, but only when the command is not
  otherwise read-only: `grep -i 'drop table' schema.sql` still only reads (a known false
  alarm: `grep 'drop table' f | less` is dangerous, as less is not on the read-only list).
* sudo, doas, su and ssh are never read-only; they are dangerous when what they run is.
* `iptables -P INPUT|OUTPUT DROP|REJECT` is dangerous, `-P FORWARD DROP` is not.
* `find` on such a directory with -delete or `-exec rm` is dangerous unless a -name,
  -path, -regex (not `*`) or -inum test picks the files and there is no -o:
  `find / -name core -delete` is only "write".
* A recursive shell function is treated as a fork bomb.
* A downloader piped into an interpreter is dangerous only when the interpreter runs what
  it reads: `curl ... | python3 -m json.tool` is only a write (python3 is not read-only).
* For commands whose options can write (sed, sort, git, find...), an argument the shell
  expands at run time into something that may start with `-` (`$OPTS`, an unquoted `*`)
  makes the command a write: it could become `-i` or `-delete`. `$HOME` is exempt.
"""

from __future__ import annotations

from kosmos.safety.builtins import BUILTINS
from kosmos.safety.catalogue import ALWAYS, SHELLS, VERSION_ONLY
from kosmos.safety.danger import text_danger
from kosmos.safety.rules import RULES
from kosmos.safety.shell import Dialect, ShellSyntaxError, parse
from kosmos.safety.verdict import Assessment, dangerous, worse_of, write
from kosmos.safety.walk import Walk, unparseable
from kosmos.safety.wrappers import WRAPPERS

__all__ = ["assess", "read_only_programs"]


def assess(command: str, shell: Dialect | None = None) -> Assessment:
    """Classify one command line as read_only, write or dangerous, with a one-line reason.

    `shell` is the dialect of the shell that will run it (bash, or a POSIX sh such as dash);
    None when that is not known yet: then the command must pass as both.
    """
    if shell is None:
        return worse_of(_assess(command, "bash"), _assess(command, "sh"))
    return _assess(command, shell)


def _assess(command: str, shell: Dialect) -> Assessment:
    try:
        script = parse(command, shell)
        walk = Walk(dialect=shell)
        walk.script(script)
    except ShellSyntaxError as e:
        return unparseable(command, str(e))
    except RecursionError:  # the parser bounds nesting; this is the last line of defence
        return unparseable(command, "too deeply nested to follow")
    result = walk.result()
    if result.verdict == "read_only" and script.bashisms:
        # sh reads the line one way, bash another: what runs depends on which shell it is.
        return write(f"bash and sh read {script.bashisms[0]!r} differently")
    if result.verdict == "write":
        reason = text_danger(command)
        if reason:
            return dangerous(reason)
    return result


def read_only_programs() -> frozenset[str]:
    """Every program name that some invocation of may be judged read-only."""
    return frozenset(
        {*ALWAYS, *RULES, *VERSION_ONLY, *WRAPPERS, *BUILTINS, *SHELLS, "python3", "pip3"}
    )
