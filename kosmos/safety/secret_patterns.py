"""The shapes of secrets the redactor looks for: a catalogue, kept apart from the code.

What each entry masks, and why some look-alikes are left alone, is told in the docstring of
`kosmos.safety.redact`, which applies them; the comments here say why a pattern has the
shape it has.
"""

from __future__ import annotations

import re

MASK = "[REDACTED]"


class LazyPattern:
    """A regex compiled the first time it is used.

    A table pattern runs only on a text that holds one of its hints, and most runs meet few
    of them: compiling the whole table when the module loads cost every run several ms of
    start-up for patterns it never used.
    """

    __slots__ = ("_compiled", "pattern")

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._compiled: re.Pattern[str] | None = None

    def sub(self, repl: str, text: str) -> str:
        if self._compiled is None:
            self._compiled = re.compile(self.pattern)
        return self._compiled.sub(repl, text)


# (hints, pattern, replacement): see the table below.
Token = tuple[tuple[str, ...], LazyPattern, str]

# Key names: the long words may follow any prefix (PGPASSWORD, aws_secret_access_key); the
# short ones only a whole component (db_pass, x-auth), or `bypass` and `author` would match.
LONG_KEYS = (
    r"password|passwd|passphrase|secret[_-]?key(?:[_-]?base)?|secret|token|api[_-]?key"
    r"|access[_-]?key|private[_-]?key|preshared[_-]?key"
    r"|client[_-]?secret|credentials?|account[_-]?key|shared[_-]?access[_-]?(?:key|signature)"
)
SHORT_KEYS = r"pwd|pass|auth|psk"
_KEY = rf"(?:[\w.-]*?(?:{LONG_KEYS})|-{{0,2}}(?:[A-Za-z0-9]+[_.-])*(?:{SHORT_KEYS}))"
SECRET_KEY = re.compile(rf"(?:{_KEY}|authorization|proxy-authorization)", re.IGNORECASE)

# What a private key's armour names: PEM and OpenSSH keys, PGP's private blocks, and
# OpenVPN's static keys (tls-auth, tls-crypt, secret), which are private though named otherwise.
_KEY_KIND = r"(?:[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?|OpenVPN Static key V1)"
KEY_HINTS = ("PRIVATE KEY", "OpenVPN Static key")
PRIVATE_KEY = re.compile(
    rf"(-----BEGIN {_KEY_KIND}-----).*?(-----END {_KEY_KIND}-----|\Z)",
    re.DOTALL,
)
# The tail of a key block whose BEGIN line was cut off (a capped output, a second chunk).
KEY_TAIL = re.compile(
    rf"^(?:[A-Za-z0-9+/=]{{16,}}\r?\n)+(-----END {_KEY_KIND}-----)",
    re.MULTILINE,
)
KEY_END = re.compile(rf"-----END {_KEY_KIND}-----")
# A PuTTY key's private lines follow its `Private-Lines: N` line. A line already masked
# counts as one of them, so that redacting twice changes nothing.
_PUTTY_LINES = re.compile(rf"(?:(?:[A-Za-z0-9+/=]+|{re.escape(MASK)})(?:\r?\n|\r|\Z))*")
PUTTY_KEY = re.compile(rf"(Private-Lines:[ \t]*\d+[ \t]*(?:\r?\n|\r)){_PUTTY_LINES.pattern}")
# The same lines at the start of a later chunk, which may begin with the \n of a \r\n.
PUTTY_REST = re.compile(rf"\n?{_PUTTY_LINES.pattern}")

# Password hashes in crypt(3) form, as /etc/shadow, htpasswd files and databases keep them:
# MD5 (and Apache's), SHA-256/512, bcrypt, yescrypt, GOST yescrypt, scrypt, Argon2. Each
# needs its full shape, so `$1`, `$5` or `$HOME` in a script never match. Their hint is a
# lone `$`: one character is found at memchr speed, where a dozen `$6$`-like hints would
# each cost a scan of the text.
_CRYPT_CHARS = r"[./0-9A-Za-z]"
# The pattern starts with its `$`, the lookbehind after it, so that the regex engine skips
# to each `$` instead of trying every position.
_CRYPT = (
    r"\$(?<![\w$]\$)(?:"
    rf"(?:1|apr1)\${_CRYPT_CHARS}{{0,8}}\${_CRYPT_CHARS}{{22,}}"
    rf"|[56]\$(?:rounds=\d+\$)?{_CRYPT_CHARS}{{0,16}}\${_CRYPT_CHARS}{{43,}}"
    rf"|2[abxy]?\$\d\d\${_CRYPT_CHARS}{{53,}}"
    rf"|g?y\${_CRYPT_CHARS}+\${_CRYPT_CHARS}*\${_CRYPT_CHARS}{{43,}}"
    rf"|7\${_CRYPT_CHARS}{{11,}}\${_CRYPT_CHARS}{{43,}}"
    r"|argon2(?:id|i|d)\$(?:v=\d+\$)?m=\d+,t=\d+,p=\d+\$[A-Za-z0-9+/]+\$[A-Za-z0-9+/]+)"
)

# (hints, pattern, replacement). A pattern runs only when one of its hints occurs in the
# text (lower-cased hints are looked up in the lower-cased text): substring tests are far
# cheaper than a regex pass, and most output holds none of them. Group 1, where present, is
# the label that stays visible.
_TABLE: tuple[Token, ...] = tuple(
    (hints, LazyPattern(pattern), replacement)
    for hints, pattern, replacement in (
        (("AKIA", "ASIA", "ABIA", "ACCA"), r"\b(AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b", rf"\1{MASK}"),
        (("AIza",), r"\b(AIza)[0-9A-Za-z_-]{35}", rf"\1{MASK}"),
        (("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), r"\b(gh[pousr]_)[A-Za-z0-9]{20,}", rf"\1{MASK}"),
        (("github_pat_",), r"\b(github_pat_)[A-Za-z0-9_]{20,}", rf"\1{MASK}"),
        (("glpat-",), r"\b(glpat-)[A-Za-z0-9_-]{20,}", rf"\1{MASK}"),
        (("xox",), r"\b(xox[abposr]-)[A-Za-z0-9-]{10,}", rf"\1{MASK}"),
        # OpenAI-style keys; not OpenSSH's FIDO key types (sk-ssh-ed25519@openssh.com).
        (
            ("sk-",),
            r"(?<![\w-])(sk-)(?!ssh-|ecdsa-)(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[\w-]{20,}",
            rf"\1{MASK}",
        ),
        (("k_live_", "k_test_"), r"\b((?:sk|rk)_(?:live|test)_)[A-Za-z0-9]{10,}", rf"\1{MASK}"),
        (("hf_",), r"\b(hf_)[A-Za-z0-9]{30,}", rf"\1{MASK}"),
        (("npm_",), r"\b(npm_)[A-Za-z0-9]{30,}", rf"\1{MASK}"),
        (("ya29.",), r"\b(ya29\.)[\w-]{20,}", rf"\1{MASK}"),
        (("eyJ",), r"\beyJ[\w-]{5,}\.eyJ[\w-]{5,}\.[\w-]*", MASK),
        (("earer",), r"\b([Bb]earer[ \t]+)(?=[\w.~+/-]*\d)[\w.~+/-]{8,}=*", rf"\1{MASK}"),
        (
            ("authorization",),
            r"(?i)\b((?:proxy-)?authorization[ \t]*:[ \t]*(?:[a-z0-9-]+[ \t]+)?)[^\s\"'\\]+",
            rf"\1{MASK}",
        ),
        # A password in a URL, `/` and `@` in it included: up to the last `@` of the word that
        # a host follows (a port's digits before a path's `@` are not a password).
        (
            ("://",),
            r"(?i)\b([a-z][a-z0-9+.-]*://[^\s/:@]*:)(?!\d{1,5}(?:/|\s|$))(\S+)"
            r"(@[A-Za-z0-9.-]+(?::\d+)?)(?=[/?#\s\"'<>]|$)",
            rf"\1{MASK}\3",
        ),
        (
            ("sig=", "signature="),
            r"(?i)([?&](?:sig|X-Amz-Signature|X-Goog-Signature)=)[^&\s\"']+",
            rf"\1{MASK}",
        ),
        (
            ("</",),
            r"(?i)(<([\w-]*:)?(?:password|passwd|secret|token|api_?key)>)[^<]+",
            rf"\1{MASK}",
        ),
        (
            ("--",),
            r"(?i)(--(?:password|passwd|pass|token|secret|api-key|apikey|auth-token|"
            r"access-token|client-secret|requirepass|masterauth)[ \t]+['\"]?)[^\s'\"]+",
            rf"\1{MASK}",
        ),
        # .netrc: `machine h login u password x` on one line, or the password on its own
        # line under its machine. Its keywords are lower-case (`Password expired` is prose),
        # `default` starts a line (`the default password is`), and a lone line's value does
        # not end a sentence (`password combination.` in wrapped prose).
        (
            ("password",),
            r"(?m)((?:(?<![\w-])machine[ \t]+\S+|^[ \t]*default)"
            r"(?:[ \t]+(?:login|account|port)[ \t]+\S+)*[ \t]+password[ \t]+"
            r"|^[ \t]*password[ \t]+(?=\S*[^\s.,;:!?)][ \t\r]*$))\S+",
            rf"\1{MASK}",
        ),
        # redis.conf (also as grep shows it, `file:line:`, and commented out) and CONFIG SET.
        (
            ("requirepass", "masterauth"),
            r"(?im)(^(?:[^\s:]*:(?:\d+:)?)?[ \t]*(?:#[ \t]*)?(?:requirepass|masterauth)[ \t]+"
            r"|\bconfig[ \t]+set[ \t]+(?:requirepass|masterauth)[ \t]+)"
            r"(?:\"[^\"\n]*\"|'[^'\n]*'|[^\s\"']\S*)",
            rf"\1{MASK}",
        ),
        # A Kubernetes Secret's `tls.key: <base64>` (any key ending in .key, YAML or JSON).
        (
            (".key",),
            r"(?i)((?<![\w.-])[\w.-]*\.key[\"']?[ \t]*[:=][ \t]*[\"']?)"
            r"[A-Za-z0-9+/]{16,}={0,2}(?![\w+/=.-])",
            rf"\1{MASK}",
        ),
        (("$",), _CRYPT, MASK),
        (("{sha", "{ssha"), r"\{S?SHA(?:256|384|512)?\}[A-Za-z0-9+/]{20,}={0,2}", MASK),
        (
            ("curl",),
            r"\b(curl\b[^\n|;&]*?[ \t](?:-u|--user)[ \t]*['\"]?[^\s:'\"]+:)[^\s'\"]+",
            rf"\1{MASK}",
        ),
        (
            ("mysql", "mariadb"),
            r"\b((?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n|;&]*?[ \t]-p)"
            r"(?:'[^'\n]*'|\"[^\"\n]*\"|[^\s'\"-][^\s'\"]*)",
            rf"\1{MASK}",
        ),
        (("sshpass",), r"\b(sshpass\b[^\n|;&]*?[ \t]-p[ \t]*)[^\s'\"]+", rf"\1{MASK}"),
        # Passwords on command lines as `ps` shows them: redis-cli -a, smbclient and the other
        # Samba tools' -U user%password, htpasswd -b's last argument.
        (
            ("redis-cli",),
            r"\b(redis-cli\b[^\n|;&]*?[ \t](?:-a|--pass)[ \t]+)"
            r"(?:'[^'\n]*'|\"[^\"\n]*\"|[^\s'\"]+)",
            rf"\1{MASK}",
        ),
        (
            ("-u", "--user"),
            r"((?:^|[ \t])(?:-U|--user(?:name)?)(?:[ \t]+|=)['\"]?[^\s%'\"]+%)[^\s'\"]+",
            rf"\1{MASK}",
        ),
        (
            ("htpasswd",),
            r"(?m)\b(htpasswd\b(?=[^\n|;&]*[ \t]-[A-Za-z]*b)[^\n|;&]*[ \t])([^\s|;&]+)"
            r"(?=[ \t]*(?:[|;&]|$))",
            rf"\1{MASK}",
        ),
        # Kubernetes' kubeconfig: the client key, base64 of its PEM.
        (
            ("client-key-data",),
            r"((?<![\w.-])client-key-data[\"']?[ \t]*:[ \t]*[\"']?)[A-Za-z0-9+/]{16,}={0,2}",
            rf"\1{MASK}",
        ),
        (("age-secret-key-1",), r"\b(AGE-SECRET-KEY-1)[0-9A-Z]{20,}", rf"\1{MASK}"),
        # HashiCorp Vault's service, batch and recovery tokens.
        (("hvs.", "hvb.", "hvr."), r"\b(hv[sbr]\.)[A-Za-z0-9_-]{20,}", rf"\1{MASK}"),
        # Vault's older service token: a bare `s.` and 24 base62 characters, both cases in
        # them (a word such as `s.readthedocumentation` is all lower case).
        (
            ("s.",),
            r"(s\.)(?<![\w.]s\.)(?=[A-Za-z0-9]*[A-Z])(?=[A-Za-z0-9]*[a-z])[A-Za-z0-9]{24,}(?!\w)",
            rf"\1{MASK}",
        ),
        # A GitHub token's head at the end of a line: the rest may be folded onto the next one
        # (ACROSS_LINES), and a stream may show this line before that one arrives.
        (
            ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
            r"(?m)\b(gh[pousr]_)[A-Za-z0-9]{8,}(?=\r?$)",
            rf"\1{MASK}",
        ),
        # WordPress's wp-config.php: DB_PASSWORD and the keys and salts, as define() calls.
        (
            ("define",),
            r"(?i)(\bdefine\s*\(\s*([\"'])[A-Z0-9_]*(?:PASSWORD|PASSWD|SECRET|TOKEN|KEY|SALT)\2"
            r"\s*,\s*)([\"'])(?:\\.|(?!\3)[^\\\n])*\3",
            rf"\1\3{MASK}\3",
        ),
        # Slack's incoming webhooks and workflow triggers: the path is the credential.
        (
            ("hooks.slack.com",),
            r"(?i)(hooks\.slack(?:-gov)?\.com/(?:services|workflows|triggers)/)[\w/-]+",
            rf"\1{MASK}",
        ),
        # A Sentry DSN: the key is the URL's user part (https://KEY@o1.ingest.sentry.io/2).
        (
            ("sentry",),
            r"(?i)\b([a-z][a-z0-9+.-]*://)[0-9a-f]{16,}((?::[^\s@/]*)?@[\w.-]*sentry[\w.-]*)",
            rf"\1{MASK}\2",
        ),
        # The values of session-like cookies, in Set-Cookie and Cookie headers.
        (
            ("cookie",),
            r"(?i)((?:\bcookie[ \t]*:|;)[ \t]*[^\s=;:]*(?:sess|sid|auth|token|login|logged"
            r"|remember|jwt|csrf|xsrf|identity|secret|wordpress_sec)[^\s=;]*=)[^\s;\"']+",
            rf"\1{MASK}",
        ),
        # `*_KEY=` variables (ENCRYPTION_KEY, APP_KEY=base64:..., STRIPE_KEY): a value of eight
        # or more characters that is not a path, a variable or code; public keys are public.
        (
            ("_key",),
            r"(?i)((?<![\w.-])(?![\w]*(?:public|pub)_key)[A-Za-z0-9_]*_key[ \t]*=[ \t]*([\"']?))"
            r"(?![/~$.{\[(<])(?![^\s\"',;&()]*\[REDACTED\])[^\s\"',;&()]{8,}(?![^\s\"',;&])",
            rf"\1{MASK}",
        ),
        # LDAP: nslcd's and pam_ldap's bindpw, slapd's rootpw, sssd's authtok (also as grep
        # shows them), and the -w password of the ldap tools on a command line.
        (
            ("bindpw", "rootpw", "authtok"),
            r"(?im)(^(?:[^\s:]*:(?:\d+:)?)?[ \t]*(?:bindpw|rootpw|ldap_default_authtok)"
            r"(?:[ \t]*=[ \t]*|[ \t]+))\S+",
            rf"\1{MASK}",
        ),
        (
            ("ldap",),
            r"\b(ldap(?:search|modify|add|delete|whoami|passwd|compare|modrdn)\b[^\n|;&]*?"
            r"[ \t]-w[ \t]*)(?:'[^'\n]*'|\"[^\"\n]*\"|[^\s'\"]+)",
            rf"\1{MASK}",
        ),
    )
)

# Secrets whose value is on the line below its label, or folded over two lines. They run on
# the whole text (the one-line table runs line by line on long texts), before it.
_ACROSS: tuple[Token, ...] = tuple(
    (hints, LazyPattern(pattern), replacement)
    for hints, pattern, replacement in (
        # redis-cli's `CONFIG GET requirepass`: the name on one line, the value on the next
        # (`1) "requirepass"` / `2) "value"` with --no-raw, bare lines with --raw).
        (
            ("requirepass", "masterauth"),
            r"(?im)(^[ \t]*(?:\d+\)[ \t]*)?\"?(?:requirepass|masterauth)\"?[ \t]*\r?\n"
            r"[ \t]*(?:\d+\)[ \t]*)?)(?:(\")[^\"\n]*\"|(?!\[REDACTED\])[^\s\"]\S*)",
            rf"\1\2{MASK}\2",
        ),
        # A GitHub token folded over two lines (`fold`, a narrow terminal, a wrapped log).
        (
            ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
            r"\b(gh[pousr]_)[A-Za-z0-9]{8,35}(\r?\n)[A-Za-z0-9]{1,35}(?![\w])",
            rf"\1{MASK}\2{MASK}",
        ),
    )
)

# Hints that begin their pattern and are common in text (a `$` on most lines of a script, an
# `s.` in most prose): the pattern runs over the whole text, where the regex engine skips to
# each of them as fast as str.find would, not line by line.
LEADING_HINTS = frozenset({"$", "s."})

# The same, with lower-cased hints looked up in the lower-cased text: one scan per hint.
TOKENS: tuple[Token, ...] = tuple(
    (tuple(h.lower() for h in hints), pattern, repl) for hints, pattern, repl in _TABLE
)
ACROSS_LINES: tuple[Token, ...] = tuple(
    (tuple(h.lower() for h in hints), pattern, repl) for hints, pattern, repl in _ACROSS
)

# Key/value pairs are found from their secret word outwards, not by trying the full
# pattern at every position of the text; the word is looked for in the lower-cased text,
# which is an order of magnitude faster than an IGNORECASE search.
KEYWORD = re.compile(rf"{LONG_KEYS}|{SHORT_KEYS}")
KEYWORD_ANY_CASE = re.compile(rf"{LONG_KEYS}|{SHORT_KEYS}", re.IGNORECASE)
KEY_VALUE = re.compile(
    rf"(?<![\w./-])({_KEY})"
    r"((?:[\"']\]?)?[ \t]*(?:=>|=|:(?!//))[ \t]*)"
    r"(?:\"((?:[^\"\\\n]|\\.)*)\"|'([^'\n]*)'|([^\s\"',;&]+))",
    re.IGNORECASE,
)

# Unquoted values that are code or placeholders, not secrets: `password: str`,
# `token = os.environ["TOKEN"]`, `password=getpass()`, `PGPASSWORD=$PW`, `"password": null`.
NOT_A_VALUE = re.compile(
    r"str|int|float|bool|bytes|none|null|nil|true|false|secretstr|string|number|boolean"
    r"|any|required|optional|undefined|[{\[($%<].*|[A-Za-z_][\w.]*[(\[].*"
    # a YAML block scalar's indicator: the value is on the lines below (redact_lines)
    r"|[|>][-+0-9]*",
    re.IGNORECASE,
)

# Every hint and secret word in one pattern: a short text in which it finds nothing holds no
# secret a pattern could catch. (Past a few hundred characters, looking the hints up one by
# one is cheaper than this alternation.)
ANY_HINT = re.compile(
    "|".join(
        [re.escape(h) for h in sorted({h for t in TOKENS for h in t[0]}, key=len)[::-1]]
        + [LONG_KEYS, SHORT_KEYS]
    )
)
