"""The policy's differential corpus: commands for real shells to judge.

Sources, in order: the policy tests' tables, every command in the bundled skills and in
kosmos-panel's skills (`tests/data/kosmos-panel-commands.txt`), then generated variations of
the risky forms: payloads hidden behind quoting, escapes, comments, here-documents,
here-strings and substitutions in read-only carriers and wrappers; builtins that change how
later commands run, followed by the commands they would hijack; program options that run
programs or load config; arithmetic and expansions that evaluate a value as code; functions
that shadow commands; syntax only bash has; and the classes of `tests/policy_mutants.py`.
Then every one of those again with each option word respelled (`policy_mutants.mutants`).

The canaries these commands aim at (DIR, F, PWNED, evil.sh, evilbin/, repo/) are laid out by
`tests/shelljudge.py`.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path

from kosmos.safety.shell import Compound, Function, Script, ShellSyntaxError, Simple, parse
from tests.policy_mutants import SEEDS, mutants, quoted

ROOT = Path(__file__).resolve().parent.parent

PAYLOADS = ("rm -rf DIR", "touch PWNED", "./evil.sh", ": > F")


def _quoted(p: str) -> list[str]:
    """A payload hidden (or not) in one shell word or fragment, each way a shell may read."""
    return [
        f"'a; {p}; b'",
        f'"a; {p}; b"',
        f"a\\; {p}",
        f"a\\\\; {p}",
        f"$'a\\' ; {p} ; echo \\' #'",
        f"$'\\''; {p}; echo '",
        f'$"a; {p}"',
        f'"$({p})"',
        f"'$({p})'",
        f'"\\$({p})"',
        f"`{p}`",
        f'"\\`{p}\\`"',
        f"${{u:-$({p})}}",
        f"'a'\\''; {p}; '\\''b'",
        f'"a"\'; {p}; \'"b"',
        f"a#; {p}",
        f"a #; {p}",
        f"{{a,b}}; {p}",
        f"$((1)); {p}",
        f"\"$(echo ')'; {p})\"",
        f"$(case a in a) echo;; esac; {p})",
        f"\\$({p})",
        f"$'\\x27'; {p}; echo $'\\x27'",
        f'"a\n{p}"',
        f"a\n{p}",
        f"a \\\n; {p}",
        f"'a\\'; {p}; #'",
        f'"a\\"; {p}; #"',
        f"$'a\\\\'; {p}",
        f"$'\\''\"; {p}; #\"",
    ]


def _carriers(x: str) -> list[str]:
    """Read-only-looking commands that carry the fragment `x`."""
    return [
        f"echo {x}",
        f"printf '%s\\n' {x}",
        f": {x}",
        f"test -n {x}",
        f"[ -n {x} ]",
        f"echo {x} | cat",
        f"cat <<< {x}",
        f"true && echo {x}",
        f"false || echo {x}",
        f"(echo {x})",
        f"{{ echo {x}; }}",
        f"if true; then echo {x}; fi",
        f"for i in {x}; do :; done",
        f"case {x} in *) ;; esac",
        f'x={x}; echo "$x"',
        f"timeout 1 echo {x}",
        f"env echo {x}",
        f"command echo {x}",
        f"nice echo {x}",
        "bash -c " + shlex.quote(f"echo {x}"),
        "sh -c " + shlex.quote(f"echo {x}"),
        "eval " + shlex.quote(f"echo {x}"),
        f"find . -maxdepth 0 -exec echo {x} \\;",
        f"time echo {x}",
        f"grep -c {x} F",
        f"echo $(echo {x})",
        f'echo "$(echo {x})"',
        f"cat <<EOF\n{x}\nEOF",
        f"cat <<'EOF'\n{x}\nEOF",
        f"xargs echo {x} </dev/null",
    ]


def quoting() -> Iterator[str]:
    for payload in PAYLOADS:
        for fragment in _quoted(payload):
            yield from _carriers(fragment)


SETTERS = (
    "hash -p ./evil.sh ls",
    "hash -p /bin/rm ls",
    "read PATH <<< ./evilbin",
    "read -r PATH < <(echo ./evilbin)",
    "printf -v PATH %s ./evilbin",
    "declare -n x=PATH; x=./evilbin",
    "typeset PATH=./evilbin",
    "declare PATH=./evilbin",
    "export PATH=./evilbin",
    "PATH=./evilbin",
    "PATH=./evilbin:$PATH",
    "PATH+=:x; PATH=./evilbin",
    "IFS=/",
    "alias ls=./evil.sh",
    "shopt -s expand_aliases; alias ls=./evil.sh\n",
    "enable -n echo",
    "set -k",
    "set -a; PATH=./evilbin",
    "trap ./evil.sh EXIT",
    "trap 'rm -rf DIR' EXIT",
    "trap ./evil.sh ERR",
    "ulimit -f 0",
    "umask 777",
    "getopts a: PATH -a./evilbin",
    "BASH_ENV=./evil.sh",
    "export BASH_ENV=./evil.sh",
    "export ENV=./evil.sh",
    "PAGER=./evil.sh",
    "GIT_PAGER=./evil.sh",
    "EDITOR=./evil.sh",
    "export GIT_EXTERNAL_DIFF=./evil.sh",
    "export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0=./evil.sh",
    "ls() { ./evil.sh; }",
    "cat() { rm -rf DIR; }",
    "command_not_found_handle() { ./evil.sh; }",
    "mapfile -C ./evil.sh -c 1 lines < F",
    "readarray -C ./evil.sh -c 1 lines < F",
    "${PATH:=./evilbin}",
    ": ${PATH:=./evilbin}",
    "CDPATH=./DIR",
    "HOME=./DIR",
    "XDG_CONFIG_HOME=./DIR",
)
VICTIMS = (
    "ls",
    "ls -rf DIR",
    "cat F",
    "grep x F",
    "git -C repo status",
    "git -C repo log -1",
    "git -C repo diff",
    "id",
    "ps",
    "bash -c ls",
    "sh -c ls",
    "echo x",
    "nosuchcommand",
)


def hijacks() -> Iterator[str]:
    for setter in SETTERS:
        for victim in VICTIMS:
            for join in ("; ", "\n", " && "):
                yield f"{setter}{join}{victim}"
            yield f"{setter} {victim}"  # as a prefix, where the setter is an assignment


OPTIONS = (
    "git -c core.pager=./evil.sh -C repo log",
    "git -c core.fsmonitor=./evil.sh -C repo status",
    "git -c diff.external=./evil.sh -C repo diff HEAD",
    "git -c alias.st='!./evil.sh' -C repo st",
    "git -c core.sshCommand=./evil.sh -C repo ls-remote ssh://x/y",
    "git -c log.showSignature=true -C repo log -1",
    "git -c color.ui=never -C repo log -1",
    "git -c core.quotepath=off -C repo status",
    "EVIL=./evil.sh git --config-env=core.fsmonitor=EVIL -C repo status",
    "git --config-env=core.pager=HOME -C repo log",
    "GIT_CONFIG_PARAMETERS=\"'core.fsmonitor'='./evil.sh'\" git -C repo status",
    "git -C repo log --output=F",
    "git -C repo diff --output=F HEAD",
    "git -C repo grep -O./evil.sh tracked",
    "git -C repo grep --open-files-in-pager=./evil.sh tracked",
    "git -C repo diff --ext-diff HEAD",
    "git -C repo log --show-signature -1",
    "git -C repo verify-commit HEAD",
    "git -C repo ls-remote --upload-pack=./evil.sh .",
    "git -C repo ls-remote -u ./evil.sh .",
    "git -C repo ls-remote .",
    "git -C repo archive --remote=. --exec=./evil.sh HEAD",
    "git -C repo submodule foreach ./evil.sh",
    "git -C repo cat-file --textconv HEAD:tracked.txt",
    "git -C repo blame tracked.txt",
    "git -C repo log -1 --format=%H",
    "git -C repo status --porcelain",
    "git -C repo show HEAD --stat",
    "git -C repo rev-parse HEAD",
    "git -C repo --exec-path=. log",
    "git --exec-path",
    "git -C repo -p log -1",
    "git -C repo branch -a",
    "git -C repo config --get user.name",
    "git -C repo stash list",
    "git -C repo remote -v",
    "git -C repo reflog -1",
    "git -C repo worktree list",
    "git -C repo tag -l",
    "less F",
    "LESSOPEN='|./evil.sh %s' less F",
    "less +'!./evil.sh' F",
    "find . -maxdepth 1 -exec ./evil.sh {} +",
    "find . -maxdepth 1 -execdir ./evil.sh {} +",
    "find . -maxdepth 1 -ok ./evil.sh {} \\;",
    "find . -maxdepth 1 -fprint F",
    "find . -maxdepth 1 -fls F",
    "find . -name F -delete",
    "find . -maxdepth 1 -exec cat {} +",
    "find . -maxdepth 1 -exec sh -c './evil.sh' \\;",
    "find . -maxdepth 1 -type f -newer F",
    "tar --to-command=./evil.sh -xf a.tar",
    "tar -tf a.tar",
    "tar -tvf a.tar",
    "tar -xf a.tar",
    "tar -I ./evil.sh -tf a.tar",
    "tar --use-compress-program=./evil.sh -tf a.tar",
    "tar --checkpoint=1 --checkpoint-action=exec=./evil.sh -tf a.tar",
    "tar -tf a.tar --info-script=./evil.sh",
    "rsync -e ./evil.sh x:y .",
    "rsync --rsh=./evil.sh x:y .",
    "ssh -o ProxyCommand=./evil.sh x true",
    "ssh -oProxyCommand=./evil.sh x",
    "awk 'BEGIN{system(\"./evil.sh\")}'",
    "awk 'BEGIN { system (\"./evil.sh\") }'",
    "awk 'BEGIN{\"./evil.sh\" | getline x}'",
    'awk \'BEGIN{print "x" | "./evil.sh"}\'',
    'awk \'BEGIN{print "x" > "F"}\'',
    'awk \'BEGIN{printf "x" >> "F"}\'',
    "awk '{print > $1}' F",
    "awk '@load \"x\"; BEGIN{}'",
    "awk '@include \"evil.sh\"'",
    "awk -v 'x=1' '{print x}' F",
    "awk -f evil.sh F",
    "awk -i inplace '{print}' F",
    "awk '{print $1}' F",
    "awk 'BEGIN{while ((getline l < \"F\") > 0) print l}'",
    "sed 'e ./evil.sh' F",
    "sed '1e ./evil.sh' F",
    "sed 's/x/./evil.sh/e' F",
    "sed 's/canary/x/w G' F",
    "sed -n 'w G' F",
    "sed -n '/x/W G' F",
    "sed -i 's/x/y/' F",
    "sed -n '1p' F",
    "sed -f evil.sh F",
    "sed -s -n 1p F G",
    "sort --compress-program=./evil.sh F",
    "sort -o F G",
    "sort F -o F",
    "sort -u F",
    "uniq F G",
    "rg --pre ./evil.sh x .",
    "curl -K evil.sh http://127.0.0.1:9",
    "curl -o F http://127.0.0.1:9",
    "curl -s -w '%output{F}x' http://127.0.0.1:9",
    "curl --engine x http://127.0.0.1:9",
    "curl -s http://127.0.0.1:9",
    "curl -s -D F http://127.0.0.1:9",
    "curl -c F http://127.0.0.1:9",
    "wget -e 'output_document=F' -O - http://127.0.0.1:9",
    "wget --use-askpass=./evil.sh -O - http://127.0.0.1:9",
    "wget --config=evil.sh -O - http://127.0.0.1:9",
    "wget -O - http://127.0.0.1:9",
    "wget --save-cookies=F -O - http://127.0.0.1:9",
    "openssl x509 -in cert.pem -engine x -noout",
    "openssl rand -out F 8",
    "openssl rand -hex 8",
    "openssl version",
    "man -P ./evil.sh ls",
    "xargs ./evil.sh < F",
    "xargs -a F echo",
    "xargs -I{} sh -c 'echo {}' < F",
    "echo './evil.sh' | xargs sh -c",
    "echo F | xargs rm",
    "echo F | xargs cat",
    "watch -n 1 -x ./evil.sh",
    "systemctl -H x status",
    "systemctl --host=x status",
    "timedatectl -H x",
    "journalctl -n 1 --no-pager",
    "env -S './evil.sh' true",
    "env -i ./evil.sh",
    "nice ./evil.sh",
    "timeout 1 ./evil.sh",
    "stdbuf -oL ./evil.sh",
    "nohup ./evil.sh",
    "command ./evil.sh",
    "exec ./evil.sh",
    "time -o F ls",
    "date -f F",
    "date --set=now",
    "date -s now",
    "hostname x",
    "ping -c 1 127.0.0.1",
    "jq . data.json",
    "jq -n 'input' data.json",
    "column -t F",
    "diff F G",
    "cmp F G",
    "cut -d: -f1 F",
    "head -c 10 F",
    "tail -n 1 F",
    "tee F < G",
    "tee -a F < G",
    "dd if=F of=G",
    "dd if=F",
    "split F",
    "csplit F 1",
    "base64 F",
    "base64 -d data.json",
    "gzip -dc a.gz",
    "gzip -d a.gz",
    "gzip -l a.gz",
    "gunzip a.gz",
    "zcat a.gz",
    "zgrep zipped a.gz",
    "python3 --version",
    "python3 -c 'import os; os.remove(\"F\")'",
    "perl -e 'unlink \"F\"'",
    "perl -v",
    "dpkg -l bash",
    "dpkg-query -W bash",
    "dpkg --pager=./evil.sh -l",
    "apt list --installed bash",
    "apt-cache policy bash",
    "ip addr show",
    "ip -batch evil.sh",
    "ip netns exec x ./evil.sh",
    "ps aux",
    "ps -eo pid,comm",
    "lsblk",
    "df -h",
    "du -sh .",
    "du --files0-from=F",
    "stat F",
    "readlink -f F",
    "realpath F",
    "md5sum F",
    "sha256sum -c F",
    "wc -l F",
    "nl F",
    "od -c F",
    "hexdump -C F",
    "xxd F",
    "xxd F G",
    "strings F",
    "file F",
    "file -C -m F",
    "tree -o F .",
    "tree .",
    "printenv PATH",
    "env",
    "getent passwd root",
    "id -u",
    "uname -a",
    "expr 1 + 1",
    "seq 3",
    "sleep 0",
    "true",
    "test -f F",
    "[ -d DIR ]",
    "type ls",
    "command -v ls",
    "which ls",
    "locate x",
    "docker -H ssh://x ps",
    "docker --config ./DIR ps",
    "docker --context x ps",
    "kubectl --kubeconfig=F get pods",
    "openssl rand -engine x -hex 4",
    "awk '@include \"F\"'",
    "blkid",
    "blkid -p /dev/null",
    "blkid -c /dev/null",
    "git -c safe.directory=* -C repo status",
    "git -C repo status --help",
    "git -C repo log -h",
    "git -C repo --no-optional-locks status",
    "git --list-cmds=main",
    "journalctl -H x -n 1",
    "hostnamectl -H x",
    "gzip -c a.gz",
    "gzip -t a.gz",
    "gzip -dc a.gz > F",
    "xz -l a.gz",
    "zstd -o F a.gz",
    "bzcat a.gz",
)

WRAPPERS = ("", "timeout 2 ", "env ", "nice ", "command ", "nohup ", "stdbuf -oL ", "time ")


def options() -> Iterator[str]:
    for command in OPTIONS:
        for wrapper in WRAPPERS:
            yield wrapper + command
        for spelled in ("'./evil.sh'", '"./evil.sh"', "./e''vil.sh", "$'./evil.sh'", "./ev\\il.sh"):
            if "./evil.sh" in command:
                yield command.replace("./evil.sh", spelled, 1)


VALUES = (
    "x='a[$(./evil.sh)]'",
    'x="a[\\$(./evil.sh)]"',
    "read -r x <<< 'a[$(./evil.sh)]'",
    "x=$(printf '%s' 'a[$(./evil.sh)]')",
    "x=$(cat F)",
    "printf -v x %s 'a[$(./evil.sh)]'",
    "for x in 'a[$(./evil.sh)]'; do :; done",
    "IFS= read -r x < F",
)
SINKS = (
    "echo $((x))",
    "echo $(( x + 1 ))",
    "echo $(( $x ))",
    "echo $[x]",
    "((x))",
    "(( x > 1 ))",
    "let x",
    "let y=x",
    "[[ $x -eq 1 ]]",
    "[[ x -gt 0 ]]",
    '[ "$x" -eq 1 ]',
    'test "$x" -eq 1',
    "a=(1 2); echo ${a[x]}",
    "a=(1 2); echo ${a[$x]}",
    "y=abc; echo ${y:x}",
    "y=abc; echo ${y:0:x}",
    "echo ${x@P}",
    "echo ${x@Q}",
    "echo ${!x}",
    "declare -i y=x",
    "for ((i=x; i<1; i++)); do :; done",
    'printf -v "$x" %s 1',
    'read "$x" < F',
    'unset "$x"',
    'test -v "$x"',
    "[[ -v $x ]]",
    'eval "$x"',
    "$x",
    'echo "$x"',
    "printf '%s\\n' \"$x\"",
    "printf '%d\\n' \"$x\"",
    "echo ${#x}",
    "case $x in *) echo;; esac",
)


def evaluations() -> Iterator[str]:
    for value in VALUES:
        for sink in SINKS:
            yield f"{value}; {sink}"
    yield "echo $(( $(printf 'a[$(./evil.sh)]') ))"
    yield "echo $(( $(cat F) ))"
    yield "echo $(( $(nproc) * 2 ))"
    yield "echo $((1 + 2))"
    yield "a[$(./evil.sh)]=1"
    yield "a[x]=1"
    yield "x='$(./evil.sh)'; echo ${x@P}"


ESCAPES = (
    "{rm,-rf,DIR}",
    "sed {-i,s/a/b/,F}",
    "git {-c,core.pager=./evil.sh} -C repo log",
    "echo {a,b}{c,d}",
    "ls {1..100}",
    "{ls,-la}",
    "$'\\x72\\x6d' -rf DIR",
    '"r"m -rf DIR',
    "r\\m -rf DIR",
    "/bin/r? -rf DIR",
    "x=rm; $x -rf DIR",
    "read() { ./evil.sh; }; read x < F",
    "exec -a ls ./evil.sh",
    "time -p ./evil.sh",
    "coproc ./evil.sh",
    "! ./evil.sh",
    "ls | ./evil.sh",
    "ls > >(./evil.sh)",
    "cat <(./evil.sh)",
    "ls 2>&1 >/dev/null",
    "echo $(<F)",
    'echo "$(< ./evil.sh)"',
    ". ./evil.sh",
    "source ./evil.sh",
    "sh ./evil.sh",
    "sh < evil.sh",
    "ENV=./evil.sh sh -i -c ls",
    "bash --rcfile ./evil.sh -i -c ls",
    "bash -O extglob -c ls",
    "bash -x -c ls",
    "bash -e -u -c 'cat F'",
    "bash -c 'echo $((1+1))'",
    "sh -c 'echo $((1+1))'",
    "zsh -c 'ls'",
    "env -C DIR ls",
    "nice -n 5 ls",
    "xargs -I{} ls {} < F",
    "find . -maxdepth 1 -exec test -f {} \\;",
    "find . -name '*.sh' -exec {} \\;",
    "find . -maxdepth 1 -fprintf F '%p'",
    "timeout -s KILL 1 ls",
    "nohup ls > F",
    "stdbuf -i0 ls",
    "exec 5>F",
    "exec 5<F; cat <&5",
    'eval "$(printf ls)"',
    "command -p ls",
    "builtin echo x",
    "cd DIR && ls",
    "CDPATH=. cd DIR",
    "x='a[$(./evil.sh)]'; cat <<EOF\n$((x))\nEOF",
    "x='$(./evil.sh)'; cat <<EOF\n${x@P}\nEOF",
    "cat <<EOF\n$(( $(nproc) + 1 ))\nEOF",
    "echo $(( $(date +%s) - 60 ))",
    "echo $(( $(cat F | wc -l) + 1 ))",
    "[[ $(nproc) -gt 1 ]] && echo many",
    "[[ $# -eq 0 ]]",
    "echo ${#PATH}",
    "a=(1 2); echo ${a[1]} ${a[@]} ${#a[@]}",
    "echo ${HOME:0:4}",
    "echo ${!PA*}",
    "for PATH in ./evilbin; do ls; done",
    "for IFS in x; do :; done; ls",
    "for BASH_ENV in ./evil.sh; do bash -c ls; done",
    "for f in F G; do cat $f; done",
    "ls {PATH}</dev/null; ls",
    "cat {fd}</dev/null",
    "BASH_CMDS[ls]=./evil.sh; ls",
    "BASH_ALIASES[ls]=./evil.sh; ls",
)


FUNCTIONS = (
    "rm() { :; }; command rm -rf DIR",
    "rm() { :; }; builtin rm -rf DIR",
    "rm() { :; }; exec rm -rf DIR",
    "rm() { :; }; env rm -rf DIR",
    "rm() { :; }; \\rm -rf DIR",
    "rm() { :; }; unset rm; rm -rf DIR",
    "rm() { :; }; unset -f rm; rm -rf DIR",
    "if false; then rm() { :; }; fi; rm -rf DIR",
    "false && rm() { :; }; rm -rf DIR",
    "true || rm() { :; }; rm -rf DIR",
    "(rm() { :; }); rm -rf DIR",
    "rm() { :; } & rm -rf DIR",
    "rm() { :; } | :; rm -rf DIR",
    "for i in; do rm() { :; }; done; rm -rf DIR",
    "case x in y) rm() { :; };; esac; rm -rf DIR",
    "touch() { :; }; touch PWNED",
    "f() { ls; }; f",
    "function f { ls; }; f",
    "f() { ./evil.sh; }; f",
    "f() { ls; }; f; unset -f f; f",
    "ls() { echo x; }; ls",
    "ls() { command ls -la; }; ls",
    "f() { rm -rf DIR; }",
    "f() { cat F; }; f | head -n 1",
)

BASH_ONLY = (
    "cat F &>/dev/null",
    "ls &> F",
    "cat F &>> G",
    "ls |& cat",
    "cat <<< F",
    "diff <(cat F) <(cat G)",
    "cat >(cat)",
    "[[ -f F ]] && cat F",
    "((1)) && ls",
    "function f { ls; }",
    "echo {a,b}",
    "echo {1..3}",
    "{rm,-rf,DIR}",
    "echo $'\\x41'",
    'echo $"a"',
    "case a in a) echo ;& b) echo;; esac",
    "select x in a; do break; done",
    "coproc ls",
    "echo ${x//a/b}",
    "echo ${x^^}",
    "echo ${x:0:1}",
    "shopt",
    "shopt -p",
    "shopt -s extglob",
    "set -euo pipefail; ls",
    "set -o pipefail; ls | cat",
    "set -x; ls",
    "set -e; ls",
    "set +e; ls",
    "set -o",
    "set",
    "set -m; sleep 5 & ls",
    'set -- -rf DIR; rm "$@"',
    'set -- F; cat "$1"',
    "export",
    "export -p",
    "declare -p",
    "declare -f",
    "alias",
    "trap",
    "trap -p",
    "hash",
    "hash -t ls",
    "ulimit -a",
    "ulimit -n",
    "umask",
    "umask -S",
    "enable",
    'while IFS= read -r line; do echo "$line"; done < F',
    'read -r line < F; echo "$line"',
    "read -r a b <<< 'x y'; echo \"$a\"",
    'cat F | while read -r l; do echo "$l"; done',
    "unset x",
    "unset -v x",
    "unset PATH; ls",
)


def _spans(markdown: str) -> Iterator[str]:
    """Inline code spans and fenced blocks of a SKILL.md, placeholders filled in."""
    for block in re.findall(r"```[a-z]*\n(.*?)```", markdown, re.S):
        yield from (line for line in block.splitlines() if line.strip())
    text = re.sub(r"```.*?```", "", markdown, flags=re.S)
    yield from re.findall(r"`([^`\n]+)`", text)


def skill_commands() -> Iterator[str]:
    for path in sorted((ROOT / "skills").glob("*/SKILL.md")):
        for span in _spans(path.read_text()):
            yield re.sub(r"<[a-z_-]+>", "x", span)
    data = ROOT / "tests" / "data" / "kosmos-panel-commands.txt"
    for line in data.read_text().splitlines():
        if line and not line.startswith("# "):
            yield line.replace("\\n", "\n")


def table_commands() -> Iterator[str]:
    from tests import test_policy

    for name in dir(test_policy):
        value = getattr(test_policy, name)
        if name.isupper() and isinstance(value, list):
            yield from (c for c in value if isinstance(c, str))


def corpus() -> list[str]:
    """Every command for the real shells, once, in a stable order: the base, then every
    option respelled (quoted ones only where quote removal does not give the original's
    words back: those are `same_words`)."""
    base = base_corpus()
    changed = [v for v, original in quoted(base) if _words(v) != _words(original)]
    return list(dict.fromkeys([*base, *mutants(base), *changed]))


def same_words() -> list[tuple[str, str]]:
    """Quoted respellings whose words, after quote removal, are the original's."""
    pairs = [(v, o) for v, o in quoted(base_corpus()) if _words(v) == _words(o) is not None]
    return list(dict.fromkeys(pairs))


def _words(command: str) -> object:
    """The words a command line comes to after quote removal, in its tree; None when it
    does not parse."""
    try:
        return _tree(parse(command, "bash"))
    except ShellSyntaxError:
        return None


def _tree(node: object) -> object:
    if isinstance(node, Script):
        return tuple(tuple(map(_tree, p.commands)) for p in node.pipelines)
    if isinstance(node, Simple):
        words = tuple((w.text, w.glob, w.brace, w.tilde) for w in (*node.assigns, *node.words))
        return ("simple", words, tuple((r.op, r.target.text) for r in node.redirects))
    if isinstance(node, Compound):
        words = tuple(w.text for w in node.words)
        return (node.kind, words, tuple(map(_tree, node.bodies)))
    if isinstance(node, Function):
        return ("function", node.name, _tree(node.body))
    return node


def base_corpus() -> list[str]:
    """The commands as written, before their options are respelled."""
    sources = (
        table_commands(),
        skill_commands(),
        quoting(),
        hijacks(),
        options(),
        evaluations(),
        iter(ESCAPES),
        iter(FUNCTIONS),
        iter(BASH_ONLY),
        iter(SEEDS),
    )
    return list(dict.fromkeys(c for source in sources for c in source))


# Known ways past a policy that read the wrong dialect or missed a builtin; always in the
# fast sample. The first is a write only where dash runs it (bash reads $'...' as one word).
SH_ONLY = "echo $'a\\' ; rm -rf DIR ; echo \\' #'"
KNOWN = (
    SH_ONLY,
    "hash -p /bin/rm ls; ls -rf DIR",
    "EVIL='touch F' git --config-env=core.fsmonitor=EVIL -C repo status",
    "read PATH <<< ./evilbin; ls",
    "printf -v PATH %s ./evilbin; ls",
    "declare -n x=PATH; x=./evilbin; ls",
)


def sample(every: int = 25) -> list[str]:
    """A fast, stable slice of the corpus plus the known bypasses and the seeds."""
    base = base_corpus()
    respelled = list(mutants(base))
    return list(dict.fromkeys([*KNOWN, *SEEDS, *base[::every], *respelled[:: every * 8]]))
