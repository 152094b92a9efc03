"""Seals: what is reused across runs (a canary transcript, a shard's fleet.json) says whether it
is the file its run wrote, and, where the operator gives a key, whose run wrote it.

Each line of a transcript ends with a `seal` field: the SHA-256 digest of the line before's
digest and this line's bytes (the line without its seal), so that an edited, dropped or
inserted line breaks the chain from there on; the first line's digest starts from a fixed seed,
and the run's first event (`run_started`) carries the SKILL.md's digest and the parameters, so
they are bound too. With a key (`KOSMOS_SEAL_KEY`, or the file `KOSMOS_SEAL_KEY_FILE` or config
`seal_key_file` names, as CI secrets are given; never a flag), each digest is also signed
(HMAC-SHA256) and named by the key's id (an HMAC of a fixed text: it tells keys apart and
reveals nothing of the key). A fleet.json carries one seal over its own text and the last
digest of each transcript it names.

Without a key the chain catches an edit made by hand, not one made by someone who recomputes
it: a decision read from an unsigned file is never taken as this operator's.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from kosmos.errors import UsageError

SEED = hashlib.sha256(b"kosmos seal 1").digest()
_FIELD = b',"seal":"'

Trust = Literal["signed", "unsigned", "unsealed"]


class SealBroken(UsageError):
    """A sealed file that does not verify: edited after it was written, or signed by another
    key (exit 2, one line naming the first line that differs)."""


class _Secret(Protocol):
    def get_secret_value(self) -> str: ...


def key_bytes(secret: _Secret | None) -> bytes | None:
    """The seal key as the seals use it (None: unsigned seals)."""
    return secret.get_secret_value().encode("utf-8") if secret is not None else None


def key_id(key: bytes) -> str:
    """A short name for `key` that reveals nothing of it."""
    return hmac.new(key, b"kosmos seal key id", hashlib.sha256).hexdigest()[:12]


def _link(prev: bytes, body: bytes) -> bytes:
    return hashlib.sha256(prev + body).digest()


def _mac(key: bytes, digest: bytes) -> str:
    return hmac.new(key, digest, hashlib.sha256).hexdigest()


class Sealer:
    """Seals the lines of one file in order; `last` is the digest of the last line sealed."""

    def __init__(self, key: bytes | None) -> None:
        self.key = key
        self.kid = key_id(key) if key else None
        self.last = SEED

    def seal(self, body: bytes) -> bytes:
        """`body` (one JSON object, no newline) with its seal as its last field."""
        if not body.endswith(b"}") or body == b"{}":
            raise ValueError("a sealed line is a JSON object with fields")
        self.last = digest = _link(self.last, body)
        tag = digest.hex()
        if self.key is not None:
            tag += f":{self.kid}:{_mac(self.key, digest)}"
        return body[:-1] + _FIELD + tag.encode() + b'"}'


def last_line(path: Path) -> bytes | None:
    """The last complete line of `path`, read from its end (a torn line after it, from a run
    killed mid-write, is passed over); None for a missing file or one without a whole line."""
    try:
        f = open(path, "rb")  # noqa: SIM115 (closed below)
    except FileNotFoundError:
        return None
    with f:
        at = f.seek(0, os.SEEK_END)
        buf = b""
        while at > 0:
            step = min(65536, at)
            at -= step
            f.seek(at)
            buf = f.read(step) + buf
            cut = buf.rfind(b"\n")
            if cut < 0:
                continue
            whole = buf[: cut + 1]
            start = whole.rfind(b"\n", 0, len(whole) - 1)
            if start >= 0 or at == 0:
                return whole[start + 1 :]
        return None


def continued(path: Path, key: bytes | None) -> Sealer | None:
    """A sealer that goes on with the chain of what `path` already holds (a resumed run appends
    to its transcript); None where it holds unsealed lines, which stay unsealed."""
    sealer = Sealer(key)
    line = last_line(path)
    if line is None:
        return sealer
    split = _split(line)
    if split is None:
        return None
    sealer.last = bytes.fromhex(split[1].partition(":")[0])
    return sealer


def last_digest(path: Path) -> str | None:
    """The digest that ends `path`'s chain as its last line says (not verified)."""
    line = last_line(path)
    split = _split(line) if line is not None else None
    return split[1].partition(":")[0] if split is not None else None


def _split(line: bytes) -> tuple[bytes, str] | None:
    """The line as it was before its seal, and the seal; None for a line without one."""
    line = line.rstrip(b"\n")
    at = line.rfind(_FIELD)
    if at < 0 or not line.endswith(b'"}'):
        return None
    return line[:at] + b"}", line[at + len(_FIELD) : -2].decode("ascii", "replace")


@dataclass(frozen=True)
class Verified:
    """What a file's seal says: `signed` by the key given, a chain `unsigned` (or signed with a
    key this run does not have), or `unsealed` (an older kosmos); `last` ends the chain."""

    trust: Trust
    last: str = ""
    note: str = ""


def verify_lines(lines: Iterable[bytes], key: bytes | None, source: str) -> Verified:
    """Check a transcript's chain (and, with `key`, its signatures); SealBroken names the first
    line that does not verify."""
    prev = SEED
    sealed: str | None = None
    signed_by: str | None = None
    for number, line in enumerate(lines, 1):
        split = _split(line)
        if split is None:
            if sealed:
                raise SealBroken(f"{source} line {number}: not sealed: edited after it was written")
            sealed = ""
            continue
        if sealed == "":
            raise SealBroken(f"{source} line {number}: sealed after unsealed lines: edited")
        sealed = "yes"
        body, tag = split
        digest, _, signature = tag.partition(":")
        prev = _link(prev, body)
        if digest != prev.hex():
            raise SealBroken(
                f"{source} line {number} does not verify: the file was edited after it was written"
            )
        kid, _, mac = signature.partition(":")
        if number == 1:
            signed_by = kid or None
        elif (kid or None) != signed_by:
            raise SealBroken(f"{source} line {number}: sealed otherwise than line 1: edited")
        if key is not None and kid:
            if kid != key_id(key):
                raise SealBroken(
                    f"{source}: sealed by another key (id {kid}, KOSMOS_SEAL_KEY's is "
                    f"{key_id(key)}); give the key its run was sealed with"
                )
            if not hmac.compare_digest(mac, _mac(key, prev)):
                raise SealBroken(
                    f"{source} line {number} does not verify against the seal key: the file "
                    "was edited after it was written"
                )
    if not sealed:
        return Verified("unsealed", note=f"{source} is not sealed (made by an older kosmos?)")
    if key is not None and signed_by:
        return Verified("signed", prev.hex())
    why = (
        f"{source} is signed (key id {signed_by}) and no seal key is set (KOSMOS_SEAL_KEY)"
        if signed_by
        else f"{source} is not signed (it was written without a seal key)"
    )
    return Verified("unsigned", prev.hex(), why)


def verify_file(path: Path, key: bytes | None, source: str | None = None) -> Verified:
    """`verify_lines` over a transcript file's whole lines (a torn last one is passed over, as
    reading it does)."""
    with open(path, "rb") as f:
        lines = [line for line in f if line.endswith(b"\n")]
    return verify_lines(lines, key, source or str(path))


def _document_digest(data: Mapping[str, Any], transcripts: Mapping[str, str]) -> bytes:
    body = {k: v for k, v in data.items() if k != "seal"}
    text = json.dumps([body, dict(transcripts)], sort_keys=True, ensure_ascii=False)
    return _link(SEED, text.encode("utf-8"))


def seal_document(
    data: dict[str, Any], transcripts: Mapping[str, str], key: bytes | None
) -> dict[str, Any]:
    """`data` (a fleet.json) with its seal: its digest, the last digest of each transcript it
    names (by file name), and with `key` the signature."""
    digest = _document_digest(data, transcripts)
    seal: dict[str, Any] = {"digest": digest.hex(), "transcripts": dict(transcripts)}
    if key is not None:
        seal["key_id"] = key_id(key)
        seal["mac"] = _mac(key, digest)
    return {**data, "seal": seal}


def verify_document(data: Mapping[str, Any], key: bytes | None, source: str) -> dict[str, str]:
    """Check a fleet.json's seal; the transcripts' last digests it vouches for. SealBroken names
    what differs."""
    seal = data.get("seal")
    if not isinstance(seal, dict) or not isinstance(seal.get("transcripts"), dict):
        raise SealBroken(
            f"{source}: not sealed (made by an older kosmos, or its seal was removed); merge "
            "run directories this kosmos wrote"
        )
    transcripts = {str(k): str(v) for k, v in seal["transcripts"].items()}
    digest = _document_digest(data, transcripts)
    if seal.get("digest") != digest.hex():
        raise SealBroken(f"{source} does not verify: it was edited after the run")
    kid = seal.get("key_id")
    if key is not None and kid:
        if kid != key_id(key):
            raise SealBroken(
                f"{source}: sealed by another key (id {kid}, KOSMOS_SEAL_KEY's is "
                f"{key_id(key)}); give the key its run was sealed with"
            )
        if not hmac.compare_digest(str(seal.get("mac", "")), _mac(key, digest)):
            raise SealBroken(f"{source} does not verify against the seal key: it was edited")
    elif key is not None:
        raise SealBroken(
            f"{source}: not signed, and a seal key is set; run the shards with KOSMOS_SEAL_KEY"
        )
    return transcripts
