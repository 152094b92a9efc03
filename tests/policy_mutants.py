"""The corpus's second half: the classes a parser gets wrong, and every option respelled.

`SEEDS` are commands of the classes that slip past a parser that reads option words as
written: words that expand into options, abbreviated long options, option values the
tables get wrong, wrappers that rewrite their arguments, embedded languages read in part,
builtins that run or set, reads that reach the network, and reads of secret material.

`mutants` respells each option word of a command the ways a shell or a program still
accepts: built at run time (`o=i; sed -$o`), quoted (`'-'i`, `"-i"`), abbreviated
(`--in-pl`), split (`-ab` as `-a -b`), joined (`-a -b` as `-ab`) and moved after the next
word. A respelled command means the same or fails; a parser must not rate it read-only
where the real shell then writes or reaches a service. A quoted respelling whose words
come out of quote removal as the original's runs the same program with the same argv: it
must get the original's verdict, and needs no second run (`quoted`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

SEEDS = (
    # option words that are not literal
    "x=i; sed -$x s/a/b/ F",
    "x=elete; find . -name F -d$x",
    "x=output; git -C repo log --$x=F",
    'x=-i; sed "$x" s/a/b/ F',
    "x=i; sed -n$x s/a/b/ F",
    "sed -$(printf i) s/a/b/ F",
    "x=o; sort -$x G F",
    "x=in-place; sed --$x s/a/b/ F",
    # abbreviated long options
    "git -C repo config --remove-sec user",
    "git -C repo config --unset-a user.name",
    "git -C repo config --rename-s user x",
    "git -C repo config --ad user.x y",
    "git -C repo config --replace-a user.name x",
    "sed --in-pl s/a/b/ F",
    "sort --out=G F",
    "sort --comp=./evil.sh F",
    "git -C repo grep --open-files='./evil.sh;' tracked",
    "git -C repo grep --open-files-in=./evil.sh tracked",
    "git -C repo log --outp=F -1",
    "wget --output-f=F -O - http://127.0.0.1:9",
    "curl --outp F http://127.0.0.1:9",
    # option values the tables got wrong
    "ionice -t sh -c 'rm -rf DIR' ls",
    "xxd -C F G",
    "systemctl --root status disable ssh",
    "git -C repo stash -m list",
    "git -C repo stash -q list",
    "git -C repo remote -v add x y",
    "git -C repo notes --ref x add -m y",
    "timeout -k 1 1 ls",
    "timeout --foreground 1 rm -rf DIR",
    "nice -5 rm -rf DIR",
    "env -uX rm -rf DIR",
    "stdbuf -o L rm -rf DIR",
    # wrappers that rewrite their arguments
    "echo touch | xargs -I ls env ls PWNED",
    "echo touch | xargs -i{} env {} PWNED",
    "echo PWNED | xargs -I{} touch {}",
    "echo -i | xargs sed s/a/b/ F",
    "ls | xargs sed -n 1p",
    "echo x | xargs --process-slot-var=PATH ls",
    "ss -tln -D G",
    "rg --hostname-bin ./evil.sh --hyperlink-format default x .",
    "rpm -q --define '_x %(./evil.sh)' bash",
    # embedded languages read in part
    "sed -n ':a;w G' F",
    "sed -n 'bx;w G' F",
    "sed -n 'b;w G' F",
    "sed -n '/x/b;w G' F",
    "sed -n 't;w G' F",
    "sed -n 'y/a/b/;w G' F",
    "sed -e 'a\\' -e 'x' -e 'w G' F",
    "sed -n '$!{N};w G' F",
    "sed -n 's/a/b/;W G' F",
    "sed '1!G;h;$!d;e ./evil.sh' F",
    "sed -n -s '1{p;w G' -e '}' F",
    "awk '/;/{print > \"G\"}' F",
    "awk '/[;]/{print > \"G\"}' F",
    'awk \'{print $0 ";" > "G"}\' F',
    'awk \'{x=";"; print x > "G"}\' F',
    "awk '/a\\/;/ {print | \"./evil.sh\"}' F",
    'awk \'BEGIN { printf("%s", 1) > "G" }\'',
    "awk 'BEGIN{x=\"./evil.sh\"; system(x)}'",
    "awk 'BEGIN{while((\"./evil.sh\" | getline l) > 0) print l}'",
    "awk 'BEGIN { getline < \"F\"; print }'",
    "awk -W dump-variables=G 'BEGIN{}'",
    "awk 'BEGIN{print 1} # ; print > \"G\"'",
    "git -C repo -c core.pager='./evil.sh' -p log -1",
    # bash builtins that run or set
    "jobs -x ./evil.sh",
    "wait -p PATH; ls",
    "unset PATH; ls",
    "unset -v PATH; ls",
    "unset IFS; ls",
    "a=(1); x='a[$(./evil.sh)]'; echo ${#a[x]}",
    "x='a[$(./evil.sh)]'; echo ${#x[x]}",
    # reads that reach the network
    "curl -s 'gopher://127.0.0.1:6379/_FLUSHALL%0d%0a'",
    "curl -s dict://127.0.0.1:6379/FLUSHALL",
    "curl -s telnet://127.0.0.1:6379 </dev/null",
    "curl -s ftp://127.0.0.1/",
    "curl -s file:///etc/hostname",
    "curl -s ldap://127.0.0.1/",
    "curl -s smb://127.0.0.1/x",
    "curl -s scp://127.0.0.1/x",
    "curl -s mqtt://127.0.0.1/x",
    "curl -s imap://127.0.0.1/",
    "curl -s pop3://127.0.0.1/",
    "curl -s smtp://127.0.0.1/",
    "curl -s rtsp://127.0.0.1/",
    "curl -s tftp://127.0.0.1/x",
    "curl -s GOPHER://127.0.0.1:6379/_x",
    "curl -s ftp.example.com",
    "curl -s dict.example.com/x",
    "curl -s --proto-default ftp 127.0.0.1",
    "curl -s --url gopher://127.0.0.1:6379/_x",
    "curl -s http://127.0.0.1:6379/ 'gopher://127.0.0.1:6379/_x'",
    "curl -s -x socks5://127.0.0.1:1080 http://example.com",
    "curl -s --socks5 127.0.0.1:6379 http://example.com",
    "curl -s --unix-socket /run/x.sock http://x/",
    "curl -s --abstract-unix-socket x http://x/",
    "curl -s -K- http://127.0.0.1:9 <<< 'url = \"gopher://127.0.0.1:6379/_x\"'",
    "all_proxy=socks5://127.0.0.1:6379 curl -s http://example.com",
    "export all_proxy=socks5h://127.0.0.1:6379; curl -s http://example.com",
    "curl -s http://127.0.0.1:6379/",
    "curl -s 127.0.0.1:6379",
    "curl -sk https://127.0.0.1:6379/",
    "wget -qO- ftp://127.0.0.1/",
    "wget -b -O - http://127.0.0.1:9",
    "wget --background -O - http://127.0.0.1:9",
    "wget -qO- -i F",
    "wget -qO- http://127.0.0.1:6379/",
    # writes that look like reads, on the ports the lock allows: a second request smuggled
    # in a header, a body, another method, DNS over https POSTs, stdin sent over TLS
    "curl -s -H $'X: 1\\r\\n\\r\\nPOST /x HTTP/1.1' http://127.0.0.1:9/",
    "curl -s -A $'a\\r\\nX: y' http://127.0.0.1:9/",
    "curl -s --referer=$'a\\nX: y' http://127.0.0.1:9/",
    "curl -s --request-target $'/ HTTP/1.1\\r\\nX: y' http://127.0.0.1:9/",
    "curl -s -H 'X: 1\nPOST /x HTTP/1.1' http://127.0.0.1:9/",
    "h=$(printf 'X: 1\\r\\nY: 2'); curl -s -H \"$h\" http://127.0.0.1:9/",
    "curl -s -H @F http://127.0.0.1:9/",
    "curl -s -H 'Content-Length: 40' http://127.0.0.1:9/ http://127.0.0.1:9/x",
    "curl -s --doh-url http://127.0.0.1:9/x http://example.com/",
    "curl -s --json '{}' http://127.0.0.1:9/",
    "curl -s --data-b x http://127.0.0.1:9/",
    "curl -s -XDELETE http://127.0.0.1:9/",
    "curl -s --head 'gopher://127.0.0.1:6379/_x'",
    "wget -qO- --header=$'X: 1\\r\\nY: 2' http://127.0.0.1:9/",
    "wget -qO- --referer $'a\\r\\nX: y' http://127.0.0.1:9/",
    "wget -qO- -U$'a\\r\\nX: y' http://127.0.0.1:9/",
    "wget -qO- --post-d=x http://127.0.0.1:9/",
    "wget -qO- --meth=DELETE http://127.0.0.1:9/",
    "echo 'GET /x HTTP/1.0' | openssl s_client -quiet -connect 127.0.0.1:443",
    "openssl s_client -quiet -connect 127.0.0.1:443 <<< 'GET /x HTTP/1.0'",
    "openssl s_client -unix /run/x.sock </dev/null",
    "exec 3</dev/tcp/127.0.0.1/6379; echo FLUSHALL >&3",
    "exec 3<>/dev/tcp/127.0.0.1/6379",
    "cat < /dev/tcp/127.0.0.1/6379",
    "cat 3</dev/tcp/127.0.0.1/6379",
    "echo x > /dev/udp/127.0.0.1/514",
    "openssl s_client -connect 127.0.0.1:443 -msgfile F </dev/null",
    "openssl s_client -connect 127.0.0.1:443 -keylogfile F </dev/null",
    "openssl s_client -connect 127.0.0.1:443 -sess_out F </dev/null",
    "openssl s_client -connect 127.0.0.1:25 -starttls smtp </dev/null",
    "openssl s_client -connect 127.0.0.1:443 -proxy 127.0.0.1:6379 </dev/null",
    "openssl s_client -connect 127.0.0.1:443 </dev/null",
    "openssl req -in cert.pem -noout -text",
    "openssl x509 -in cert.pem -noout -subject",
    "dig @127.0.0.1 -p 6379 x",
    "dig +tcp @127.0.0.1 -p 6379 x",
    "nslookup -port=6379 x 127.0.0.1",
    "host -p 6379 x 127.0.0.1",
    "dig @127.0.0.1 x",
    # secrets
    "cat ~/.ssh/id_rsa",
    "base64 home/.ssh/id_ed25519",
    "xxd /etc/ssh/ssh_host_ed25519_key",
    "cat /etc/shadow",
    "tac .env",
    "cat ~/.kube/config",
    "cat ~/.aws/credentials",
    "grep -r password ~/.ssh",
    "tar c ~/.ssh",
    "find ~/.ssh -name 'id_*' -exec cat {} +",
    "cat ~/.ssh/*",
    "ls ~/.ssh",
    "cat ~/.ssh/id_rsa.pub",
)


_OPTION = re.compile(r"(?<![^\s;|&(])(--?[A-Za-z][A-Za-z0-9_-]*)(=\S*)?(?=[\s;|&)]|$)")


def _respelled(command: str, start: int, end: int, new: str) -> str:
    return command[:start] + new + command[end:]


def _one(command: str, m: re.Match[str], kind: str) -> str | None:
    name, value = m.group(1), m.group(2) or ""
    start, end = m.start(), m.end()
    long = name.startswith("--")
    letters = name.lstrip("-")
    if kind == "variable":
        return f"o={letters}; " + _respelled(
            command, start, end, f"{name[: 2 if long else 1]}$o{value}"
        )
    if kind == "single":
        return _respelled(command, start, end, f"'-'{name[1:]}{value}")
    if kind == "double":
        return _respelled(command, start, end, f'"{name}{value}"')
    if kind == "abbreviated" and long and len(letters) > 4:
        return _respelled(command, start, end, name[: 2 + max(3, len(letters) - 3)] + value)
    if kind == "split" and not long and len(letters) > 1 and not value:
        return _respelled(command, start, end, " ".join(f"-{c}" for c in letters))
    if kind == "moved":
        rest = command[end:]
        nxt = re.match(r"\s+([^\s;|&()<>'\"]+)", rest)
        if nxt:
            return command[:start] + nxt.group(1) + " " + name + value + rest[nxt.end() :]
    return None


def _joined(command: str) -> str | None:
    m = re.search(r"(?<=\s)-([A-Za-z]+)\s+-([A-Za-z]+)(?=[\s;|&)]|$)", command)
    return _respelled(command, m.start(), m.end(), f"-{m.group(1)}{m.group(2)}") if m else None


KINDS = ("variable", "abbreviated", "split", "moved")
QUOTES = ("single", "double")


def _respellings(commands: Iterable[str], kinds: tuple[str, ...]) -> Iterator[tuple[str, str]]:
    for command in commands:
        if len(command) > 300:
            continue
        for m in list(_OPTION.finditer(command))[:4]:
            for kind in kinds:
                out = _one(command, m, kind)
                if out and out != command:
                    yield out, command


def mutants(commands: Iterable[str]) -> Iterator[str]:
    """Every command's option words respelled so that the words the program gets change:
    built at run time, abbreviated, split, joined, moved; one word and one way at a time."""
    commands = list(commands)
    yield from (out for out, _ in _respellings(commands, KINDS))
    for command in commands:
        joined = _joined(command) if len(command) <= 300 else None
        if joined:
            yield joined


def quoted(commands: Iterable[str]) -> Iterator[tuple[str, str]]:
    """Every option word quoted (`'-'n`, `"-n"`), with the command it respells."""
    yield from _respellings(commands, QUOTES)
