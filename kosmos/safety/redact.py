"""Keep secrets out of everything kosmos shows or stores: the LLM, transcripts, logs, --json.

A `Redactor` masks, in this order:

1. the literal secrets it was given (API keys, a sudo password typed at run time) and the
   values of environment variables whose name looks secret, longest first so that a secret
   containing another one does not leak its tail; then any run of 12 or more characters of a
   key it was given, forwards or reversed, across blanks and line breaks (`kosmos.safety.
   key_runs`: `cut -c 20-`, `rev`, `fold`);
2. private key blocks (OpenVPN's static keys among them), to their END line or, when that is
   missing, to the end of the text, and PuTTY's private lines; then what shows only across
   lines (`kosmos.safety.redact_lines`): a key's body without its BEGIN and END lines or
   upside down (`tac`), a .netrc entry spread over lines, a secret-named YAML key's value on
   the lines below it, and lines whose shape says what they hold (.pgpass, DES hashes in
   shadow and htpasswd lines); a value on the line below its name (redis-cli's `CONFIG GET
   requirepass`) and a GitHub token folded over two lines;
3. what looks like a credential: AWS and Google keys, vendor tokens (GitHub, GitLab, Slack,
   OpenAI-style, Stripe, Hugging Face, npm, age, Vault's `hvs.` and bare `s.` tokens), JWTs,
   Slack webhook URLs, Sentry DSNs, the values of session-like cookies, `Bearer`/`Basic`
   authorization, passwords in URLs (`/` and `@` in them too) and on command lines as `ps`
   shows them (`mysql -p`, `sshpass -p`, `redis-cli -a`, `-U user%pass`, `htpasswd -b`,
   `ldapsearch -w`), kubeconfig's `client-key-data`, Azure `AccountKey=`, WordPress's
   `define('DB_PASSWORD', '...')` and its keys and salts, `*_KEY=` variables
   (`APP_KEY=base64:...`), and `key=value`,
   `key: value`, `"key": "value"`, `config["KEY"] = "value"` pairs whose key names a
   secret (`SECRET_KEY = '...'` in Django and Flask settings among them);
4. passwords in config files that have no `=` or `:`: `.netrc` (`machine h login u password
   x`, or the `password x` line of an entry spread over lines), redis.conf (`requirepass x`,
   `masterauth x`, also as grep shows them and in `CONFIG SET`), LDAP's `bindpw` and
   `rootpw`, and a Kubernetes Secret's
   values under keys ending in `.key` (`tls.key: <base64>`; keys ending in `password` or
   `token` are pairs already);
5. password hashes: crypt(3) in its MD5, SHA-256/512, bcrypt, yescrypt, GOST yescrypt,
   scrypt and Argon2 forms, Apache's `$apr1$` and `{SHA}`, wherever they stand, so the
   password field of an /etc/shadow or htpasswd line is masked and the rest stays.

Labels stay visible (`password=[REDACTED]`, `Bearer [REDACTED]`, `ghp_[REDACTED]`,
`https://user:[REDACTED]@host`, `requirepass [REDACTED]`, `root:[REDACTED]:19000:0:99999:7:::`)
so the reader still knows what was there. The patterns are a table of their own, in
`kosmos.safety.secret_patterns`.

Judgement calls: environment values shorter than 6 characters, plain paths, and variables
named like sockets, files, directories, URLs or IDs (SSH_AUTH_SOCK, GIT_ASKPASS,
XAUTHORITY, ..._FILE, ..._DIR) are not treated as secrets: masking them everywhere would
mangle ordinary output. A key must end in the secret word (`db_password`, `api_key`,
`PGPASSWORD`) so `max_tokens=512`, `key_size=2048` and `tokenizer: bpe` stay readable;
`PWD=/home/me` is a directory, not a password. An unquoted value that reads as code or a
placeholder (`password: str`, `token = os.environ[...]`, `PGPASSWORD=$PW`, `null`,
`config["TOKEN"] = token`) is left alone; a quoted one is always masked. Hex strings are
never guessed at: git SHAs and UUIDs pass through. A hash needs its full shape (`$6$`, a
salt, `$`, 43 or more characters), so `$1`, `$HOME` and `price $5` are text; the `*`, `!`,
`!!` of a shadow line hold no password and stay; a DES hash (13 bare characters) is told
apart from a word only where nothing but a hash can stand. `.netrc` keywords are lower-case
words: `default` must start its line and a lone `password` line's value must not end a
sentence, so `the default password is` and `password combination.` in wrapped prose stay
(under its `machine` line it may). A
block of base64 lines is a key's body only at a key's width (64 or 70) and not under the
armour of a certificate or public key; `base64` wraps at 76. A URL's `host:8080/@scope` is a
port, not a password. redis.conf's directives start their
line (`# The requirepass is not compatible` is prose). A `.key` value must be 16 or more
base64 characters: `tls.key:  1704 bytes` (kubectl describe) and key paths stay; `tls.crt`
is public.

The redactor is stateless between calls. A caller that streams output redacts whole lines
and carries multi-line secrets over from chunk to chunk: `open_block` says whether a chunk
ends inside a private key (or PuTTY's private lines), and `block_end` where, in a later
chunk, that block ends; everything before it is secret (`kosmos.engine.guard.LineRedactor`,
which also redacts each chunk below the lines before it).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote

from kosmos.safety.key_runs import KeyRuns
from kosmos.safety.redact_lines import (
    mask_colon_lines,
    mask_key_bodies,
    mask_netrc_entries,
    mask_yaml_values,
)
from kosmos.safety.secret_patterns import (
    ACROSS_LINES,
    ANY_HINT,
    KEY_END,
    KEY_HINTS,
    KEY_TAIL,
    KEY_VALUE,
    KEYWORD,
    KEYWORD_ANY_CASE,
    LEADING_HINTS,
    MASK,
    NOT_A_VALUE,
    PRIVATE_KEY,
    PUTTY_KEY,
    PUTTY_REST,
    SECRET_KEY,
    TOKENS,
    Token,
)

__all__ = ["MASK", "Redactor", "block_end", "open_block"]

# Shorter literals match too much ordinary text to be worth masking.
MIN_SECRET_LEN = 4
MIN_ENV_SECRET_LEN = 6

_ENV_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|CREDENTIAL|AUTH|PRIVATE")
_ENV_NOT_SECRET = re.compile(
    r"(?:_SOCK|_SOCKET|_PATH|_FILE|_DIR|_HOME|_URL|_URI|_HOST|_PORT|_USER|_USERNAME|_ID|_TYPE"
    r"|_MODE|_METHOD|_TIMEOUT|_TTL)$|ASKPASS|^XAUTHORITY$|KEYMAP|KEYBOARD"
)
_PLAIN_PATH = re.compile(r"[~/][\w./@+-]*")

# Past this size, the token patterns run only on the lines that hold one of their hints:
# none of them spans lines, and a regex scan of every line of a long log costs far more.
_LINEWISE_FROM = 4096


def _sub_tokens(text: str, lower: str, active: list[Token]) -> str:
    if len(text) < _LINEWISE_FROM:
        for _, pattern, replacement in active:
            text = pattern.sub(replacement, text)
        return text
    if len(lower) != len(text):
        return _sub_tokens_by_line(text, lower, active)  # positions would not line up
    for hints, pattern, replacement in active:
        if len(hints) == 1 and hints[0] in LEADING_HINTS:
            new = pattern.sub(replacement, text)
            if new != text:
                text, lower = new, new.lower()
            continue
        out: list[str] = []
        done = 0
        for start, end in _lines_with(lower, hints):
            line = text[start:end]
            new = pattern.sub(replacement, line)
            if new != line:
                out += (text[done:start], new)
                done = end
        if out:
            out.append(text[done:])
            text = "".join(out)
            lower = text.lower()
    return text


def _lines_with(lower: str, hints: tuple[str, ...]) -> list[tuple[int, int]]:
    """(start, end) of each line of `lower` that holds one of `hints`, in order.

    The hints are found by str.find, which skips the lines without them at C speed; a loop
    over every line in Python costs more than the pattern on the few lines that matter.
    """
    spans: set[tuple[int, int]] = set()
    for hint in hints:
        at = lower.find(hint)
        while at != -1:
            start = lower.rfind("\n", 0, at) + 1
            end = lower.find("\n", at)
            end = len(lower) if end == -1 else end
            spans.add((start, end))
            at = lower.find(hint, end)
    return sorted(spans)


def _sub_tokens_by_line(text: str, lower: str, active: list[Token]) -> str:
    lines, lowers = text.split("\n"), lower.split("\n")
    for i, low in enumerate(lowers):
        line = lines[i]
        for hints, pattern, replacement in active:
            if any(h in low for h in hints):
                new = pattern.sub(replacement, line)
                if new != line:
                    line, low = new, new.lower()
        lines[i] = line
    return "\n".join(lines)


def _sub_across(text: str) -> str:
    """The secrets whose value is below its label or folded onto the next line."""
    lower = text.lower()
    for hints, pattern, replacement in ACROSS_LINES:
        if any(hint in lower for hint in hints):
            text = pattern.sub(replacement, text)
    return text


def _mask_pair(m: re.Match[str]) -> str:
    key, sep, dq, sq, bare = m.groups()
    value = dq if dq is not None else sq if sq is not None else bare
    if not value or value.endswith(MASK):
        return m.group()  # empty, or already masked (`OPENAI_API_KEY=sk-[REDACTED]`)
    if bare is not None and (
        NOT_A_VALUE.fullmatch(value) or value.rstrip(")") == key or sep.startswith(("']", '"]'))
    ):
        return m.group()  # code: `password: str`, `config["TOKEN"] = token`
    if key.lower() == "pwd" and value.startswith("/"):
        return m.group()  # PWD=/home/me is the working directory
    quote_char = '"' if dq is not None else "'" if sq is not None else ""
    return f"{key}{sep}{quote_char}{MASK}{quote_char}"


def _mask_pairs(text: str, lower: str) -> str:
    # lower() can change the length of some non-ASCII text; positions must line up.
    words = KEYWORD.finditer(lower) if len(lower) == len(text) else KEYWORD_ANY_CASE.finditer(text)
    out: list[str] = []
    done = 0
    for word in words:
        if word.start() < done:
            continue
        # The key ends with its secret word: right after it come a separator, a quote, or a
        # quote and a bracket (`app.config["SECRET_KEY"] = ...`).
        end = word.end()
        if end < len(text) and text[end] in "\"'":
            end += 1
            if end < len(text) and text[end] == "]":
                end += 1
        while end < len(text) and text[end] in " \t":
            end += 1
        if end >= len(text) or text[end] not in "=:":
            continue
        start = _key_start(text, word.start())
        pair = None if start is None else KEY_VALUE.match(text, start)
        if pair is not None:
            out += (text[done : pair.start()], _mask_pair(pair))
            done = pair.end()
    out.append(text[done:])
    return "".join(out)


_QUICK_UPTO = 512
_HINTS = frozenset(hint for token in TOKENS for hint in token[0])
# How many texts (of up to how many characters) a Redactor remembers the result for: the
# session redacts each message when it is kept and again in the event that reports it.
_MEMO_SIZE = 1024
_MEMO_TEXT = 16 * 1024


_KEY_CHARS = frozenset("_.-")
_MAX_KEY_LEN = 64


def _key_start(text: str, pos: int) -> int | None:
    """Where the key holding the secret word at `pos` begins; None past a sane key length."""
    start = pos
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] in _KEY_CHARS):
        start -= 1
        if pos - start > _MAX_KEY_LEN:
            return None
    return start


# What may follow a key's BEGIN line: base64, or a PEM header (Proc-Type, DEK-Info).
_KEY_LINE = re.compile(r"[ \t]*(?:[A-Za-z0-9+/=]*|[A-Za-z-]+: [^\n]*)\r?")


def _private_key(m: re.Match[str]) -> str:
    begin, end = m.group(1), m.group(2)
    if not end and _key_follows(m.group()[len(begin) :]) is False:
        return m.group()  # a BEGIN line printed last (`tac`): no key below it
    return f"{begin}{MASK}{end}"


def _key_follows(after: str) -> bool | None:
    """Whether the line after a BEGIN line is key material; None when it is not there yet."""
    lines = after.split("\n")
    if len(lines) < 2 or (len(lines) == 2 and not lines[1]):
        return None
    return _KEY_LINE.fullmatch(lines[1]) is not None


def open_block(text: str) -> str | None:
    """The multi-line secret that `text` ends inside of: "key", "putty", or None.

    A caller that streams uses it to carry the block over to the next chunk, whose start
    `block_end` then finds the end of.
    """
    if any(hint in text for hint in KEY_HINTS):
        key = _last(PRIVATE_KEY, text)
        if key is not None and not key.group(2):
            # Everything after a BEGIN line without its END is key, if key follows it.
            follows = _key_follows(key.group()[len(key.group(1)) :])
            if follows is None:
                return "key-start"
            if follows:
                return "key"
    if "Private-Lines:" in text:
        putty = _last(PUTTY_KEY, text)
        if putty is not None and putty.end() == len(text):
            return "putty"
    return None


def _last(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    last = deque(pattern.finditer(text), maxlen=1)
    return last[0] if last else None


def block_end(text: str, block: str) -> int | None:
    """Where the `block` that `text` continues ends in it; None when it runs on past it.

    A key ends where its END line starts (the END line is shown); PuTTY's private lines end
    at the first line that is not base64. A BEGIN line that ended the last chunk was not a
    key's if the line after it is not key material (`tac` prints BEGIN last).
    """
    if block == "key-start":
        follows = _key_follows("\n" + text.lstrip("\r").removeprefix("\n"))
        if follows is False:
            return 0
        block = "key"
    if block == "key":
        end = KEY_END.search(text)
        return end.start() if end else None
    lines = PUTTY_REST.match(text)
    return None if lines is None or lines.end() == len(text) else lines.end()


def env_secrets(env: Mapping[str, str]) -> list[str]:
    """Values of environment variables whose name looks secret, minus obvious non-secrets."""
    found = []
    for name, value in env.items():
        upper = name.upper()
        if not _ENV_SECRET_NAME.search(upper) or _ENV_NOT_SECRET.search(upper):
            continue
        value = value.strip()
        if len(value) < MIN_ENV_SECRET_LEN or _PLAIN_PATH.fullmatch(value):
            continue
        found.append(value)
    return found


class Redactor:
    """Masks secrets in text and in event payloads; one per run, fed as secrets appear."""

    def __init__(
        self, secrets: Iterable[str] = (), *, env: Mapping[str, str] | None = None
    ) -> None:
        self._secrets: set[str] = set()
        # The keys it was given, whose pieces are masked too (not the environment's values,
        # which may be words).
        self._keys: set[str] = set()
        self._runs = KeyRuns(())
        self._literal: re.Pattern[str] | None = None
        self._memo: dict[str, str] = {}
        for secret in secrets:
            if self._remember(secret):
                self._keys.add(secret.strip())
        for secret in env_secrets(env or {}):
            self._remember(secret)
        self._compile()

    def add(self, secret: str) -> None:
        """Mask `secret` from now on (a password typed at run time); short values are ignored."""
        if self._remember(secret):
            self._keys.add(secret.strip())
            self._compile()

    def _remember(self, secret: str) -> bool:
        secret = secret.strip("\r\n")
        if len(secret.strip()) < MIN_SECRET_LEN or secret in self._secrets:
            return False
        self._secrets.add(secret)
        # The same secret inside a URL or a form arrives percent-encoded.
        encoded = quote(secret, safe="")
        if encoded != secret:
            self._secrets.add(encoded)
        return True

    def _compile(self) -> None:
        self._memo.clear()
        self._runs = KeyRuns(self._keys)
        if not self._secrets:
            self._literal = None
            return
        ordered = sorted(self._secrets, key=len, reverse=True)
        self._literal = re.compile("|".join(re.escape(s) for s in ordered))

    def __call__(self, text: str) -> str:
        """`text` with every secret replaced by the mask."""
        if not text:
            return text
        if len(text) > _MEMO_TEXT:
            return self._redact(text)
        clean = self._memo.get(text)
        if clean is None:
            clean = self._redact(text)
            if len(self._memo) >= _MEMO_SIZE:
                self._memo.clear()
            self._memo[text] = clean
        return clean

    def _redact(self, text: str) -> str:
        if self._literal is not None:
            text = self._literal.sub(MASK, text)
            text = self._runs(text)
        if any(hint in text for hint in KEY_HINTS):
            text = PRIVATE_KEY.sub(_private_key, text)
            text = KEY_TAIL.sub(lambda m: f"{MASK}\n{m.group(1)}", text)
        if "Private-Lines:" in text:
            text = PUTTY_KEY.sub(lambda m: f"{m.group(1)}{MASK}\n", text)
        if "\n" in text:  # what shows only across lines (kosmos.safety.redact_lines)
            text = mask_yaml_values(mask_netrc_entries(mask_key_bodies(text)))
            text = _sub_across(text)
        text = mask_colon_lines(text)
        lower = text.lower()
        if len(text) <= _QUICK_UPTO and len(lower) == len(text) and not ANY_HINT.search(lower):
            return text
        # Each hint looked up once, however many patterns share it (`:`, `-u`, `password`).
        present = {hint for hint in _HINTS if hint in lower}
        active = [t for t in TOKENS if not present.isdisjoint(t[0])]
        if active:
            text = _sub_tokens(text, lower, active)
            lower = text.lower()
        return _mask_pairs(text, lower)

    def redact_obj(self, value: Any) -> Any:
        """A copy of `value` with strings redacted through dicts, lists and tuples.

        A string under a key that names a secret (`password`, `api_key`, `Authorization`)
        is masked whole.
        """
        if isinstance(value, str):
            return self(value)
        if isinstance(value, Mapping):
            out = {}
            for key, item in value.items():
                secret_key = isinstance(key, str) and SECRET_KEY.fullmatch(key)
                if secret_key and isinstance(item, str) and item:
                    out[self(key)] = MASK
                else:
                    out[self(key) if isinstance(key, str) else key] = self.redact_obj(item)
            return out
        if isinstance(value, list):
            return [self.redact_obj(v) for v in value]
        if isinstance(value, tuple):
            return tuple(self.redact_obj(v) for v in value)
        return value
