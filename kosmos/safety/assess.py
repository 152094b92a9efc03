"""Decide whether a shell command only reads, writes, or is dangerous.

`assess` parses the command (`shell`, no shell runs) in the dialect of the shell that will
run it and walks every simple command it would run (`walk`): in pipelines and lists,
subshells, groups, functions, `$(...)`, backticks (also inside double quotes and
here-documents), `<(...)`, the scripts of `sh -c`, `eval`, `su -c`, `watch` and `ssh`, and
the commands that wrappers start (sudo, env, nice, ionice, timeout, nohup, time, command,
exec, stdbuf, xargs, find -exec).

* read_only: every command is on the read-only list with only read-only options, no
  redirection writes anywhere but /dev/null or another descriptor, no assignment sets a
  variable that changes what runs (PATH, LD_PRELOAD, a pager...), nothing reaches the
  network but an http or https read and a DNS question, and nothing reads secret material.
  A read through a local service's unix or netlink socket (`systemctl status`, `ss`,
  `docker ps`) says so in `Assessment.service`.
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
* For commands whose options can write (sed, sort, git, find...), and for every wrapper
  and builtin that takes options, an option word the shell builds at run time (`-$x`,
  `--$x=F`, `-n$x` unless n takes a value, `"$OPTS"`, an unquoted `*` or `-[i]` that may
  match a file named `-i`) makes the command a write. `$HOME` is exempt; so are programs
  none of whose options write (`ls -$x`). Quotes are removed first: `'-'i` is `-i`.
* Options are read as each program reads them: long options match by prefix as getopt_long
  and git's parse-options match them (`--in-pl`, `git config --remove-sec`); which options
  take a value is a table per program (`option_tables`), held to the installed programs by
  a test. git's own options, openssl's and dpkg's are matched whole, as those programs do.
* `xargs -I R` puts its input wherever R stands, the program's name included; what xargs
  appends may itself be an option, so `ls | xargs sed -n 1p` is a write.
* sed scripts and awk programs are read whole (`embedded`); one that cannot be read to its
  end is a write. `print > "/dev/stderr"` in awk is a read.
* Only http and https URLs are reads (curl, wget, also a URL without a scheme that curl
  would take for ftp, dict...); SOCKS proxies, `--unix-socket`, `wget -i`, `/dev/tcp` and
  `/dev/udp` redirections (even `<`), `openssl s_client -starttls/-proxy` and DNS queries
  to a port other than 53 are writes. An http GET may still reach a local service: it is a
  read by this rule, but only a GET: a body or another method (`-d`, `-F`, `--json`, `-T`,
  `-X`, `wget --post-data`, `--method`), `curl --doh-url` (which POSTs), a CR or LF in a
  header or any other word curl or wget sends (`$'...'` decoded), a header value built at run
  time or read from a file, a `Content-Length` or method-override header, `openssl s_client
  -unix`, and s_client fed anything but `</dev/null` or a bare `echo |` on stdin are writes.
  The service mark holds for a whole line only where each program is a service read or opens
  no socket of its own (`catalogue.NO_SOCKETS`). A `<` from a path built at run time is not
  followed (it sends nothing).
* `jobs -x`, `wait -p` into a risky name, `unset` of a name that changes what runs (PATH,
  IFS...), a `test` operator built at run time and `${#a[sub]}` are writes. `unset -f f`
  is not: the walk forgets the function, and a later `f` is judged as the program.
* Secret material (`secret_files`: private keys, /etc/shadow, .env, kubeconfig, cloud and
  docker credentials, .pgpass, .netrc, TLS keys, every process's /proc/PID/environ,
  kosmos's own settings, wp-config.php) is read only with a yes: a content reader naming it,
  a glob or an expansion that would match it (`cat ~/.ssh/*`, `cat /proc/$p/environ`), or a
  recursive reader of a directory holding it (`grep -r x /etc`, `find ~/.ssh -exec cat`).
  Names and metadata are not the secret: `ls ~/.ssh`, `stat`, `wc`, checksums, `grep -l`,
  public keys (`.pub`). `.` is not taken for the home directory: `grep -rn TODO .` stays a
  read. So are secret-named variables (`secret_vars`: `echo $AWS_SECRET_ACCESS_KEY`,
  `printenv DB_PASSWORD`, `env | grep -i token`, `env | rev`). Such a read is marked
  `Assessment.secret`: the kernel lock stops writes, not reads, so even the locked policy
  asks for it.
"""

from __future__ import annotations

import functools

from kosmos.safety.builtins import BUILTINS
from kosmos.safety.catalogue import ALWAYS, SHELLS, VERSION_ONLY
from kosmos.safety.danger import text_danger
from kosmos.safety.rules import RULES
from kosmos.safety.shell import Dialect, ShellSyntaxError, parse
from kosmos.safety.verdict import Assessment, dangerous, worse_of, write
from kosmos.safety.walk import Walk, unparseable
from kosmos.safety.wrappers import WRAPPERS

__all__ = ["assess", "read_only_programs"]


# A verdict depends on the text and the dialect alone, and an Assessment is frozen: a fleet
# judges the same few commands on every host (and a replay twice on each), so the last
# verdicts are kept.
@functools.lru_cache(maxsize=256)
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
