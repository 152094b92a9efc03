"""The policy's tables, as data: read-only programs and the options that make them write,
the variables that change what runs, system paths, and the patterns of dangerous text.

Two more tables live apart, being long: `option_tables` (which options of each program take
a value) and `secret_files` (where secret material lives). The code that applies them lives
beside: `walk` (the command tree), `rules`, `network`, `system` and `git` (one program's
options), `embedded` (sed and awk programs), `wrappers` (programs that run programs),
`secret_reads` (what reads secret material) and `danger` (what can wreck a host).
"""

from __future__ import annotations

import re

from kosmos.safety.options import name_set, split_words

# -- paths ---------------------------------------------------------------------------------------


HOME = "/home/~"  # stands for the user's home: `~/..` then lands on /home, as it would


CRITICAL_DIRS = frozenset(
    {
        "/",
        HOME,
        *(
            f"/{d}"
            for d in split_words(
                "bin boot dev etc home lib lib32 lib64 libx32 opt root sbin srv usr var "
                "usr/bin usr/sbin usr/lib usr/lib64 var/lib"
            )
        ),
    }
)


CRITICAL_FILES = frozenset(
    f"/etc/{f}" for f in ("passwd", "shadow", "group", "gshadow", "sudoers", "fstab")
)


BLOCK_PREFIXES = tuple(
    f"/dev/{p}"
    for p in ("sd", "vd", "xvd", "hd", "nvme", "mmcblk", "md", "dm-", "mapper/", "disk/")
)


SINKS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/fd/1", "/dev/fd/2"})


# bash's network redirections: `exec 3</dev/tcp/HOST/PORT` connects.
NET_DEVICES = ("/dev/tcp/", "/dev/udp/")


BIN_DIRS = frozenset(
    {"/bin", "/usr/bin", "/sbin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin"}
)


# -- programs ------------------------------------------------------------------------------------


DOWNLOADERS = frozenset({"curl", "wget", "fetch"})


SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish"})


SCRIPTING = frozenset({"perl", "ruby", "node", "nodejs", "php", "lua"})


PYTHON = re.compile(r"python[0-9.]*")


# Variables a command line may set: lower-case names are the shell's own (programs read
# upper-case ones); of the upper-case names only these change nothing that runs.
HARMLESS_VARS = name_set(
    "LANG LANGUAGE TZ COLUMNS LINES TERM NO_COLOR CLICOLOR LS_COLORS GREP_COLOR GREP_COLORS "
    "TIME_STYLE QUOTING_STYLE POSIXLY_CORRECT BLOCK_SIZE BLOCKSIZE DF_BLOCK_SIZE "
    "DU_BLOCK_SIZE LS_BLOCK_SIZE SYSTEMD_COLORS REPLY OPTIND OPTARG"
)
HARMLESS_PREFIXES = ("LC_",)
# Lower-case names that programs do read: curl and wget take their proxy from these, and a
# SOCKS proxy sends what a local service may act on.
RISKY_LOWER = name_set("http_proxy https_proxy ftp_proxy all_proxy socks_proxy rsync_proxy")


# `set` flags and `-o` options that only make the shell stricter or louder.
SAFE_SET_FLAGS = frozenset("euxvfnCh")
SAFE_SET_OPTIONS = name_set(
    "errexit nounset xtrace verbose pipefail noglob noclobber noexec hashall"
)


HARMLESS_PAGERS = frozenset({"", "cat", "less", "more", "less -R", "less -FRX"})


ALWAYS = name_set(
    """
    ls cat head tail grep egrep fgrep wc cut tr
    df du free uptime uname whoami id ps pgrep pidof lsof netstat getent
    stat readlink realpath basename dirname locate which whereis type echo true false
    printenv lsblk findmnt lscpu lsmem lspci lsusb lsmod nproc vmstat iostat
    mpstat last w who users groups md5sum sha1sum sha224sum sha256sum sha384sum sha512sum
    b2sum cksum sum cmp diff comm column jq hexdump od strings nl tac rev fold fmt paste join
    seq sleep getfacl namei lsattr base64 expand unexpand dpkg-query tty arch logname expr
    : cd pwd pushd popd dirs shift exit return break continue
    """
)


# Programs whose reads go through a local service's unix socket (systemd's D-Bus, docker's
# socket, NetworkManager, a container runtime) or the kernel's netlink sockets: their
# read-only verdicts say so (`Assessment.service`), for a kernel lock that closes such
# sockets to everything else.
SERVICE_READS = name_set(
    """
    systemctl service loginctl hostnamectl timedatectl localectl resolvectl busctl networkctl
    nmcli docker podman docker-compose crictl ss ip ifconfig iptables ip6tables nft ufw
    """
)


# Programs that, as the policy lets them run, open no unix or netlink socket of their own
# choosing: text filters, file and process readers, shell builtins (at most the C library's
# fixed name lookups, NSS and nscd, go through one). The socket exception that a service read
# gets (`Assessment.service`) holds for the whole command line, so it is given only when every
# program in it is a service read or one of these: `ss -s; curl -s http://127.0.0.1/` does not
# get it (were curl's `--unix-socket` not a write itself), `systemctl status x | grep y` does.
NO_SOCKETS = name_set(
    """
    ls cat head tail grep egrep fgrep wc cut tr sort uniq sed awk jq column nl tac rev fold
    fmt paste join expand unexpand comm diff cmp base64 hexdump od strings xxd md5sum sha1sum
    sha224sum sha256sum sha384sum sha512sum b2sum cksum sum stat readlink realpath basename
    dirname echo printf true false seq sleep expr tee find xargs ps pgrep pidof netstat df
    du free uptime uname nproc date arch tty pwd wait test [ : cd pushd popd dirs shift exit
    return break continue read mapfile readarray set shopt declare typeset local readonly
    export unset let getopts hash jobs alias type which command env printenv id whoami groups
    getent hostname who w users last logname lsblk findmnt lscpu lsmem lspci lsusb lsmod
    vmstat iostat mpstat
    """
) | {"(( ))"}


# Tools that only read when asked for their version: name -> the flags that do that.
VERSION_ONLY = {
    "python": ("--version", "-V", "-VV"),
    "node": ("--version", "-v"),
    "nodejs": ("--version", "-v"),
    "java": ("-version", "--version"),
    "javac": ("-version", "--version"),
    "go": ("version",),
    "perl": ("-v", "-V", "--version"),
    "ruby": ("--version",),
    "php": ("-v", "--version"),
    "lua": ("-v",),
    "rustc": ("--version", "-V"),
    "cargo": ("--version", "-V"),
    "gcc": ("--version",),
    "g++": ("--version",),
    "cc": ("--version",),
    "clang": ("--version",),
    "make": ("--version",),
    "nginx": ("-v", "-V"),
    "apache2": ("-v", "-V"),
    "httpd": ("-v", "-V"),
    "psql": ("--version", "-V"),
    "mysql": ("--version", "-V"),
    "mysqld": ("--version", "-V"),
    "postgres": ("--version", "-V"),
    "redis-server": ("--version", "-v"),
    "redis-cli": ("--version", "-v"),
    "terraform": ("version", "-version", "--version"),
    "ansible": ("--version",),
    "helm": ("version",),
}


# -- options of wrappers and tools ----------------------------------------------------------------


FIND_NAMES = name_set(
    "-name -iname -path -ipath -wholename -iwholename -regex -iregex -inum -samefile"
)


SYSTEMCTL_DOWN = name_set(
    "reboot poweroff halt kexec soft-reboot rescue emergency isolate suspend hibernate "
    "hybrid-sleep suspend-then-hibernate"
)


DOWN_TARGETS = frozenset(
    f"{t}.target" for t in split_words("reboot poweroff halt kexec rescue emergency")
)


SYSTEMCTL_READ = name_set(
    "status show cat list-units list-unit-files list-timers list-sockets list-dependencies "
    "list-jobs list-machines list-paths list-automounts is-active is-enabled is-failed "
    "is-system-running get-default show-environment help"
)


# Objects in the order ip matches abbreviations, each with its actions in ip's own order
# (`ip a s` is show, `ip link s` is set); "!" marks the actions that change something.
IP_OBJECTS = (
    ("address", "add! change! chg! replace! delete! list show lst flush! save! showdump restore!"),
    ("route", "add! change! chg! replace! prepend! append! test! delete! list show lst get flush!"),
    ("link", "add! set! change! replace! delete! show lst list xstats afstats"),
    ("neighbour", "add! change! chg! replace! delete! get show list lst flush!"),
    ("neighbor", "add! change! chg! replace! delete! get show list lst flush!"),
    ("rule", "add! delete! list show lst flush! save! restore!"),
    ("maddress", "add! delete! list show lst"),
    ("netns", "list list-id add! attach! set! delete! identify pids! exec! monitor!"),
)


GIT_READ = name_set(
    "status log diff show rev-parse ls-files ls-tree blame annotate describe shortlog grep "
    "show-ref cat-file rev-list for-each-ref name-rev count-objects whatchanged merge-base var "
    "check-ignore check-attr version cherry show-branch diff-tree diff-files diff-index"
)
# git's own options before the subcommand: those that take a value, and plain flags.
GIT_GLOBAL_VALUE = name_set("-C --git-dir --work-tree --namespace")
GIT_GLOBAL_FLAGS = name_set(
    "-p --paginate -P --no-pager --bare --no-replace-objects --literal-pathspecs "
    "--glob-pathspecs --noglob-pathspecs --icase-pathspecs --no-optional-locks --exec-path"
)
# Options of the reading subcommands that write a file or run a program: the value of a
# diff or log --output, gpg for signatures, external diff and textconv drivers, a pager for
# grep's matches, the manual for --help.
GIT_WRITING_OPTIONS = (
    "--output",
    "--show-signature",
    "--ext-diff",
    "--textconv",
    "--filters",
    "--open-files-in-pager",
    "--help",
)


# `git -c` settings that change only how output looks.
GIT_SAFE_CONFIG = (
    "color.",
    "column.",
    "core.quotepath",
    "core.abbrev",
    "log.decorate",
    "log.date",
    "log.abbrevcommit",
)


DOCKER_READ = name_set("ps images logs inspect version info top port history diff")


DOCKER_GROUPS = {
    "container": name_set("ls list ps inspect logs top port diff stats"),
    "image": name_set("ls list inspect history"),
    "network": name_set("ls list inspect"),
    "volume": name_set("ls list inspect"),
    "system": name_set("df info"),
    "context": name_set("ls list show inspect"),
    "compose": name_set("ps logs config ls images top version port"),
}


KUBECTL_READ = name_set("get describe logs top version explain api-resources api-versions events")


KUBECTL_CONFIG_READ = name_set("view get-contexts current-context get-clusters get-users")


BUSCTL_READ = name_set("list status tree introspect get-property help")


NETWORKCTL_READ = name_set("list status lldp label cat")


# nmcli's objects, each with its commands, in the order nmcli matches abbreviations; the
# first is what a bare object does. "!" marks a change, "?" a read only without a value.
NMCLI_OBJECTS = (
    ("general", "status hostname? permissions logging? reload!"),
    ("monitor", "monitor!"),
    ("networking", "status on! off! connectivity"),
    ("radio", "all? wifi? wwan?"),
    (
        "connection",
        "show up! down! add! modify! clone! edit! delete! monitor! reload! load! import! export!",
    ),
    (
        "device",
        "status show set! connect! reapply! modify! disconnect! delete! monitor! wifi "
        "lldp up! down!",
    ),
    ("agent", "secret! polkit! all!"),
)


CRICTL_READ = name_set(
    "ps images img pods inspect inspecti inspectp logs stats statsp info version imagefsinfo"
)


# `kubectl get secret x -o yaml` prints what the secret holds.
KUBECTL_SECRETS = name_set("secret secrets")


# What makes curl or wget more than a GET: each option, with the reason the verdict gives.
# Long options match by prefix (both programs take an unambiguous abbreviation: curl 7 and
# wget's getopt_long), so `--post-d=x` and `--doh-u` are these too.
CURL_SENDS: tuple[tuple[tuple[str, ...], str], ...] = (
    (
        ("-d", "--data", "--data-ascii", "--data-binary", "--data-raw", "--data-urlencode"),
        "curl -d sends a body (a POST)",
    ),
    (("-F", "--form", "--form-string"), "curl -F sends a form (a POST)"),
    (("--json",), "curl --json sends a body (a POST)"),
    (("-T", "--upload-file"), "curl -T uploads a file (a PUT)"),
    # DNS over https: every name curl looks up is POSTed to this URL, which may be any
    # local service's (`--doh-url https://127.0.0.1/api/delete`).
    (("--doh-url",), "curl --doh-url POSTs its DNS queries to a URL"),
)
WGET_SENDS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("--post-data", "--post-file"), "wget --post-data sends a body (a POST)"),
    (("--body-data", "--body-file"), "wget --body-data sends a body"),
)
# Methods that only fetch: `-X`/`--request` and `--method` with another one change things.
FETCH_METHODS = frozenset({"GET", "HEAD"})

# Options whose values curl and wget write into the request's header lines (the request
# line for --request-target) as given: a CR or LF there ends the header and starts another
# one, or a whole second request on the same connection (`-H $'X: 1\r\n\r\nPOST /x ...'`).
# So such a value must be written out in the command, with no expansion whose text is known
# only at run time, and with no line break; curl's `@FILE` (header lines from a file, or
# stdin) is refused for the same reason. A CR or LF in any other word they get is a write
# too, but for curl -w's format, which curl only prints.
CURL_HEADER_OPTIONS = (
    "-H", "--header", "--proxy-header",  # whole header lines
    "-A", "--user-agent", "-e", "--referer",  # User-Agent, Referer
    "--request-target",  # the request line's target
    "-b", "--cookie",  # Cookie (a value with no `=` names a cookie file, parsed by curl)
    "-u", "--user", "--proxy-user",  # base64 in Authorization, but not for every scheme
    "--oauth2-bearer",  # Authorization: Bearer, as given
    "-r", "--range",  # Range: bytes=, as given
    "--url-query",  # into the request line; `+` skips curl's encoding
    "--aws-sigv4",  # its provider names make header names
)  # fmt: skip
CURL_PRINT_ONLY = ("-w", "--write-out")
WGET_HEADER_OPTIONS = (
    "--header", "--referer", "-U", "--user-agent",
    "--user", "--password", "--http-user", "--http-password",  # Authorization (Basic)
    "--proxy-user", "--proxy-password",  # Proxy-Authorization
)  # fmt: skip
# Headers that make a GET carry a body or count as another method: a server that honours
# Content-Length or Transfer-Encoding reads the next request on the connection as the body,
# and method overrides (Rails, Laravel, Express's method-override, ASP.NET) turn a GET into a
# DELETE or a PUT.
BODY_HEADERS = name_set(
    "content-length transfer-encoding x-http-method-override x-http-method x-method-override"
)


OPENSSL_READ = name_set(
    "x509 s_client version verify crl asn1parse ciphers dgst list errstr pkcs7 rand req"
)


# Options of openssl's reading subcommands that write a file (-out, the session, the key
# log, the random seed, a CA serial) or send more than a TLS handshake (-starttls speaks
# the protocol first, -proxy sends an http CONNECT, -unix talks to a local service's
# socket, as curl --unix-socket does), or read a config that loads code. What s_client reads
# on its standard input it sends on: a read needs `</dev/null` (`walk`).
OPENSSL_WRITES = name_set(
    "-out -keyout -writerand -CAcreateserial -CAserial -sess_out -keylogfile -msgfile "
    "-starttls -proxy -unix -config -ssl_config -outdir"
)


# -- text patterns -------------------------------------------------------------------------------


# SQL that destroys data, anywhere in a command line that is not read-only anyway.
SQL_DROP = re.compile(
    r"\b(?:drop\s+(?:database|schema|table)|truncate\s+table)\b|\bdropDatabase\s*\(",
    re.IGNORECASE,
)


FORK_BOMB = re.compile(r"([\w:.]+)\s*\(\s*\)\s*\{[^}]*\1\s*[|&]")
