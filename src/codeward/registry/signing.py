"""Content signatures: the first line records when an item was validated and the hash of the rest.

``# codeward:validated:2026-01-28T12:34:56Z:<sha256 of every byte after this line>`` in a Python
tool; ``<!-- codeward:validated:...:... -->`` in Markdown. A tool runs only when the hash still
matches — any edit after signing (one byte) makes it "modified", and it must be re-signed.
The hash is over the file's bytes, so line endings and encodings count too.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum

TAG = "codeward:validated"
_PY_LINE = re.compile(rb"^# codeward:validated:(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ):([0-9a-f]{64})\r?$")
_MD_LINE = re.compile(rb"^<!-- codeward:validated:(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ):([0-9a-f]{64}) -->\r?$")


class SignatureStatus(StrEnum):
    VALID = "valid"
    MODIFIED = "modified"
    UNSIGNED = "unsigned"


@dataclass(frozen=True)
class Signature:
    signed_at: str
    digest: str


@dataclass(frozen=True)
class SignatureCheck:
    status: SignatureStatus
    signed_at: str = ""
    stored: str = ""
    actual: str = ""


def split_signature(data: bytes, *, markdown: bool = False) -> tuple[Signature | None, bytes]:
    """The signature on the first line (if any) and the bytes it covers."""
    first, newline, rest = data.partition(b"\n")
    match = (_MD_LINE if markdown else _PY_LINE).match(first)
    if match is None:
        return None, data
    return Signature(match.group(1).decode(), match.group(2).decode()), rest if newline else b""


def content_hash(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def check_signature(data: bytes, *, markdown: bool = False) -> SignatureCheck:
    signature, body = split_signature(data, markdown=markdown)
    actual = content_hash(body)
    if signature is None:
        return SignatureCheck(SignatureStatus.UNSIGNED, actual=actual)
    status = SignatureStatus.VALID if signature.digest == actual else SignatureStatus.MODIFIED
    return SignatureCheck(status, signature.signed_at, signature.digest, actual)


def sign(data: bytes, *, markdown: bool = False, now: datetime | None = None) -> tuple[bytes, str]:
    """The signed file content (an old signature line replaced) and the new signature line."""
    _old, body = split_signature(data, markdown=markdown)
    stamp = (now or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    line = f"{TAG}:{stamp}:{content_hash(body)}"
    line = f"<!-- {line} -->" if markdown else f"# {line}"
    return line.encode("ascii") + b"\n" + body, line
