"""Which options of each program take a value, as the program itself reads them.

A table that misses a value-taking option reads that option's value as an operand (a
subcommand, the command a wrapper runs: `systemctl --root status disable ssh` is not a
`status`); one that lists a flag as taking a value swallows the next word (`ionice -t sh -c
...` runs `sh`). So the tables follow the programs (GNU coreutils 9, util-linux 2.38, systemd
252, procps 4, wget 1.21, curl 7.88, git 2.39, docker 20+, mawk and gawk 5, OpenSSH 9), and
`tests/test_option_tables.py` asks each installed program which of these options it really
reads a value for.

name -> (short options that take a value, long options that take a value). Options whose
value is optional (`--color[=WHEN]`, `sed -i[SUFFIX]`) take it only when attached, so they
are not listed. A key with a space is a subcommand: `git stash`.

A long option given whole is that option, never an abbreviation of a longer one (getopt_long,
curl 7 and git's parse-options all take an exact name first). For the names in the first
table that is known; `EXACT_FLAGS` lists the plain flags whose names start a value-taking
option's name (`curl --head` is -I, not an abbreviated `--header` that eats the URL).
"""

from __future__ import annotations

OptionTable = tuple[str, tuple[str, ...]]


def split_words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


_SYSTEMD = ("HM", ("host", "machine"))

OPTION_VALUES: dict[str, OptionTable] = {
    # text tools
    "sed": ("Vefl", split_words("expression file line-length")),
    # mawk and gawk: the union (-e, -E, -i, -l are gawk's; -W takes a value in both)
    "awk": ("EFWefilv", split_words("field-separator assign file include exec source load")),
    "sort": (
        "STkoty",
        split_words(
            "batch-size buffer-size compress-program field-separator files0-from key output "
            "parallel random-source sort temporary-directory"
        ),
    ),
    "uniq": ("fsw", split_words("check-chars skip-chars skip-fields")),
    "date": ("dfrs", split_words("date file reference rfc-3339 set")),
    "hostname": ("F", ("file",)),
    "blkid": (
        "HLOSUcnostuw",
        split_words(
            "cache-file hint label match-tag match-token match-types offset output size usages uuid"
        ),
    ),
    "file": (
        "FPefm",
        split_words("exclude exclude-quiet files-from magic-file parameter separator"),
    ),
    "rg": (
        "ABCEMTdefgjmrt",
        split_words(
            "after-context before-context context encoding max-columns type-not max-depth "
            "regexp file glob iglob threads max-count replace type pre pre-glob type-add "
            "type-clear colors context-separator field-context-separator "
            "field-match-separator ignore-file max-filesize path-separator sort sortr "
            "dfa-size-limit regex-size-limit engine hostname-bin hyperlink-format"
        ),
    ),
    "sar": ("ABIPbdefimnoqrsuvwy", ()),
    "tree": ("HILPTo", split_words("charset filelimit timefmt sort")),
    # the kernel, logins, systemd
    "ss": ("ADFNf", split_words("diag family filter net query socket")),
    "lastlog": ("Rbtu", split_words("before root time user")),
    "dmesg": (
        "Fflns",
        split_words("buffer-size console-level facility file level since time-format until"),
    ),
    "sysctl": ("r", ("pattern",)),
    "crontab": ("u", ("user",)),
    "systemctl": (
        "HMPnopst",
        split_words(
            "boot-loader-entry boot-loader-menu check-inhibitors host image job-mode kill-whom "
            "kill-value legend lines machine output preset-mode property root signal state "
            "timestamp type what drop-in when reboot-argument message"
        ),
    ),
    "journalctl": (
        "DFMSUcgoptu",
        split_words(
            "after-cursor cursor cursor-file directory facility field file grep identifier "
            "image interval machine namespace output output-fields priority root since unit "
            "until user-unit vacuum-files vacuum-size vacuum-time verify-key host "
            "exclude-identifier image-policy"
        ),
    ),
    "loginctl": ("HMPnops", split_words("host kill-whom lines machine output property signal")),
    "hostnamectl": ("HM", split_words("host json machine")),
    "timedatectl": ("HMp", split_words("host machine property")),
    "localectl": _SYSTEMD,
    "resolvectl": ("HMipt", split_words("host machine interface protocol type class")),
    "busctl": (
        "HM",
        split_words(
            "address allow-interactive-authorization augment-creds auto-start destination "
            "expect-reply host json machine match size timeout watch-bind"
        ),
    ),
    "networkctl": ("n", split_words("json lines")),
    "nmcli": ("cefgmw", split_words("colors escape fields get-values mode wait")),
    "crictl": ("cirt", split_words("config image-endpoint runtime-endpoint timeout")),
    # network
    "wget": (
        "ABDIOPQRTUXYaeilnotw",
        split_words(
            "accept accept-regex append-output base bind-address body-data body-file "
            "ca-certificate ca-directory certificate certificate-type ciphers compression "
            "config connect-timeout crl-file cut-dirs default-page directory-prefix "
            "dns-timeout domains exclude-directories exclude-domains execute follow-tags "
            "ftp-password ftp-user header hsts-file http-password http-user ignore-tags "
            "include-directories input-file level limit-rate load-cookies local-encoding "
            "max-redirect method output-document output-file password pinnedpubkey post-data "
            "post-file prefer-family private-key private-key-type progress proxy-password "
            "proxy-user quota read-timeout referer regex-type reject reject-regex "
            "rejected-log remote-encoding retry-on-http-error save-cookies secure-protocol "
            "start-pos timeout tries use-askpass user user-agent wait waitretry warc-dedup "
            "warc-file warc-header warc-max-size warc-tempdir"
        ),
    ),
    "curl": (
        "ACDEFHKPQTUXYbcdemortuwxyz",
        split_words(
            "abstract-unix-socket alt-svc aws-sigv4 cacert capath cert cert-type ciphers "
            "config connect-timeout connect-to continue-at cookie cookie-jar create-file-mode "
            "crlfile curves data data-ascii data-binary data-raw data-urlencode delegation "
            "dns-interface dns-ipv4-addr dns-ipv6-addr dns-servers doh-url dump-header "
            "egd-file engine etag-compare etag-save expect100-timeout form form-string "
            "ftp-account ftp-alternative-to-user ftp-method ftp-port ftp-ssl-ccc-mode "
            "happy-eyeballs-timeout-ms header hostpubmd5 hostpubsha256 hsts interface json "
            "keepalive-time key key-type krb libcurl limit-rate local-port login-options "
            "mail-auth mail-from mail-rcpt max-filesize max-redirs max-time netrc-file noproxy "
            "oauth2-bearer output output-dir parallel-max pass pinnedpubkey preproxy proto "
            "proto-default proto-redir proxy proxy-cacert proxy-capath proxy-cert "
            "proxy-cert-type proxy-ciphers proxy-crlfile proxy-header proxy-key proxy-key-type "
            "proxy-pass proxy-pinnedpubkey proxy-service-name proxy-tls13-ciphers "
            "proxy-tlsauthtype proxy-tlspassword proxy-tlsuser proxy-user proxy1 pubkey quote "
            "random-file range rate referer request request-target resolve retry retry-delay "
            "retry-max-time sasl-authzid service-name socks4 socks4a socks5 "
            "socks5-gssapi-service socks5-hostname speed-limit speed-time stderr "
            "telnet-option tftp-blksize time-cond tls-max tls13-ciphers tlsauthtype "
            "tlspassword tlsuser trace trace-ascii unix-socket upload-file url url-query user "
            "user-agent write-out variable expand-url ip-tos vlan-priority ssl-sessions "
            "ech proxy-http2 trace-config"
        ),
    ),
    "ping": ("cFiIlmMpQsStTwW", ()),
    "nft": ("DIf", split_words("define includepath file")),
    "dig": ("bcfkpqtxy", ()),
    "host": ("cNRtWm", ()),
    # containers and clusters
    "docker": ("Hcl", split_words("config context host log-level tlscacert tlscert tlskey")),
    "docker compose": (
        "fp",
        split_words("file project-name project-directory profile env-file ansi parallel progress"),
    ),
    "kubectl": (
        "nsv",
        split_words(
            "as as-group as-uid cache-dir certificate-authority client-certificate client-key "
            "cluster context kubeconfig log-flush-frequency namespace password profile "
            "profile-output request-timeout server tls-server-name token user username v "
            "vmodule"
        ),
    ),
    # packages
    "dpkg": (
        "D",
        split_words(
            "abort-after admindir assert debug force ignore-depends instdir log no-force "
            "path-exclude path-include post-invoke pre-invoke refuse root status-fd "
            "status-logger verify-format showformat"
        ),
    ),
    "apt": ("cot", ("option", "config-file", "target-release")),
    "apt-cache": ("co", ("option", "config-file")),
    "pip": (
        "",
        split_words(
            "python log cache-dir proxy retries timeout exists-action cert client-cert "
            "trusted-host use-deprecated use-feature"
        ),
    ),
    "yum": (
        "cdeRx",
        split_words("config installroot enablerepo disablerepo releasever setopt repo"),
    ),
    # compressors
    "gzip": ("Sb", ("suffix",)),
    "xz": ("CFMST", split_words("threads suffix format check memlimit")),
    "zstd": (
        "Do",
        split_words(
            "auto-threads filelist maxdict output-dir-flat output-dir-mirror patch-from "
            "size-hint stream-size target-compressed-block-size trace"
        ),
    ),
    "bzip2": ("", ()),
    # programs that run programs
    "env": ("CSu", split_words("chdir split-string unset")),
    "nice": ("n", ("adjustment",)),
    "ionice": ("Pcnpu", split_words("class classdata pgid pid uid")),
    "timeout": ("ks", split_words("kill-after signal")),
    "stdbuf": ("eio", split_words("error input output")),
    "xargs": (
        "EILPadns",
        split_words("arg-file delimiter max-args max-chars max-procs process-slot-var"),
    ),
    "watch": ("nq", split_words("equexit interval")),
    "time": ("fo", split_words("format output")),
    "sudo": (
        "CDRTUacgprtu",
        split_words(
            "chdir chroot close-from command-timeout group host other-user prompt role type user"
        ),
    ),
    "doas": ("uC", ()),
    "pkexec": ("", ("user",)),
    "su": (
        "Gcgsuw",
        split_words("command group session-command shell supp-group whitelist-environment"),
    ),
    "runuser": (
        "Gcgsuw",
        split_words("command group session-command shell supp-group user whitelist-environment"),
    ),
    "ssh": ("BDEFIJLOQRSWbceilmopw", ()),
    # shells: -o and -O name an option; -c takes the script as the first operand instead
    "sh": ("oO", split_words("rcfile init-file")),
    # git: its own options, then each reading subcommand's (git's parse-options)
    "git": ("Cc", split_words("git-dir work-tree namespace config-env super-prefix")),
    "git config": ("ft", split_words("blob default file type comment")),
    "git grep": (
        "ABCefm",
        split_words("after-context before-context context max-count max-depth threads"),
    ),
    "git log": ("GILOSln", split_words("decorate-refs decorate-refs-exclude")),
    "git show": ("GILOSln", split_words("decorate-refs decorate-refs-exclude")),
    "git diff": ("GIOSln", ()),
    "git stash": ("m", split_words("message pathspec-from-file")),
    "git branch": ("u", split_words("format points-at set-upstream-to sort")),
    "git tag": ("Fmu", split_words("cleanup file format local-user message sort")),
    "git notes": ("", ("ref",)),
    "git remote": ("", ()),
    "git submodule": ("", ()),
    "git worktree list": ("", ("expire",)),
}


# name -> long flags (no value) whose names begin a value-taking option of the same table:
# given whole, they are the flag, and the next word is an operand (`curl --head URL`).
EXACT_FLAGS: dict[str, tuple[str, ...]] = {
    "curl": split_words("crlf ftp-ssl-ccc head netrc parallel socks5-gssapi ssl"),
    "docker": ("tls",),
    "dpkg": ("status", "verify"),
    "journalctl": ("user", "verify"),
    "git log": ("decorate",),
    "git show": ("decorate",),
}
