"""Signature lines: the first line of a signed item, and what it signs.

``# codeward:signed:v1:<key id>:2026-01-28T12:34:56Z:<Ed25519 signature, base64url>`` in a
Python tool; ``<!-- codeward:signed:v1:...:... -->`` in Markdown. The signature is not over the
file alone but over a *manifest* (:func:`manifest_bytes`): the item's name and kind, the digest
of every file of its closure (for a tool: itself, every local module it can import, its
executor chain), its declared dependencies and the third-party names it imports — so changing
any of them, adding a module that shadows one, or copying the line onto another item breaks it.

Two older first lines are recognised so that they can be refused with a clear message: the
seed's ``# kiwi-mcp:validated:<time>:<sha256>`` and codeward's own former
``# codeward:validated:<time>:<sha256>``. Both are a bare content hash that anyone who can
write the file can compute — *unkeyed legacy signatures*, never trusted.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

FORMAT = "v1"
TAG = "codeward:signed"
_STAMP = r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)"
_SIGNED = re.compile(rb"^codeward:signed:v1:([0-9a-f]{16}):" + _STAMP.encode() + rb":([A-Za-z0-9_-]{86})$")
_LEGACY = re.compile(rb"^(kiwi-mcp|codeward):validated:(\S*):([0-9a-f]{64})$")
_PY_WRAP = re.compile(rb"^#\s?(.*?)\s*\r?$")
_MD_WRAP = re.compile(rb"^<!--\s*(.*?)\s*-->\s*\r?$")


class SignatureStatus(StrEnum):
    """What an item's signature says, from the strongest to the weakest."""

    VALID = "valid"
    """Signed by a trusted key, and everything the signature covers is unchanged."""
    MODIFIED = "modified"
    """Signed, but the signature does not match the item's closure as it is now."""
    UNTRUSTED = "untrusted"
    """Signed by a key the user does not trust."""
    LEGACY = "legacy"
    """An unkeyed content hash (``kiwi-mcp:validated`` or ``codeward:validated``): anyone can write one."""
    UNSIGNED = "unsigned"


@dataclass(frozen=True)
class SignatureLine:
    """A parsed ``codeward:signed`` line."""

    key_id: str
    signed_at: str
    signature: bytes


@dataclass(frozen=True)
class LegacyLine:
    """A parsed unkeyed legacy line (``kiwi-mcp:validated`` or ``codeward:validated``)."""

    origin: str
    signed_at: str
    digest: str


Header = SignatureLine | LegacyLine


def split_signature(data: bytes, *, markdown: bool = False) -> tuple[Header | None, bytes]:
    """The signature on the first line (if any) and the bytes after it."""
    first, newline, rest = data.partition(b"\n")
    wrapped = (_MD_WRAP if markdown else _PY_WRAP).match(first)
    if wrapped is None:
        return None, data
    inner = wrapped.group(1)
    signed = _SIGNED.match(inner)
    body = rest if newline else b""
    if signed is not None:
        try:
            raw = base64.urlsafe_b64decode(signed.group(3) + b"==")
        except (binascii.Error, ValueError):
            return None, data
        return SignatureLine(signed.group(1).decode(), signed.group(2).decode(), raw), body
    legacy = _LEGACY.match(inner)
    if legacy is not None:
        return LegacyLine(legacy.group(1).decode(), legacy.group(2).decode("ascii", "replace"),
                          legacy.group(3).decode()), body
    return None, data


def body_of(data: bytes, *, markdown: bool = False) -> bytes:
    """A file's bytes without its signature line (the part a digest covers)."""
    return split_signature(data, markdown=markdown)[1]


def digest(data: bytes, *, markdown: bool = False) -> str:
    """``sha256:<hex>`` of a file's bytes after its signature line (if it has one)."""
    return "sha256:" + hashlib.sha256(body_of(data, markdown=markdown)).hexdigest()


def stamp(now: datetime | None = None) -> str:
    return (now or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def manifest_bytes(covered: dict[str, Any], key_id: str, signed_at: str) -> bytes:
    """The exact bytes a signature is made over: the covered facts, the key and the time, as
    canonical JSON (sorted keys, no spaces, ASCII)."""
    document = {"codeward-signature": FORMAT, "key": key_id, "signed_at": signed_at, **covered}
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def signature_line(key_id: str, signed_at: str, signature: bytes, *, markdown: bool = False) -> str:
    encoded = base64.urlsafe_b64encode(signature).decode("ascii").rstrip("=")
    line = f"{TAG}:{FORMAT}:{key_id}:{signed_at}:{encoded}"
    return f"<!-- {line} -->" if markdown else f"# {line}"


def with_signature(data: bytes, line: str, *, markdown: bool = False) -> bytes:
    """The file's bytes with ``line`` as its first line (an old signature line replaced)."""
    return line.encode("ascii") + b"\n" + body_of(data, markdown=markdown)


def header_status(data: bytes, *, markdown: bool = False) -> tuple[SignatureStatus, Header | None]:
    """What the first line alone says (``valid`` meaning "signed": trust and closure are checked
    by :mod:`codeward.engines.registry.trust`)."""
    header, _body = split_signature(data, markdown=markdown)
    if header is None:
        return SignatureStatus.UNSIGNED, None
    if isinstance(header, LegacyLine):
        return SignatureStatus.LEGACY, header
    return SignatureStatus.VALID, header


def legacy_message(name: str, header: LegacyLine) -> tuple[str, str]:
    """The refusal of an unkeyed legacy signature: what it is, and how to re-sign."""
    what = "the seed's" if header.origin == "kiwi-mcp" else "an older codeward's"
    return (f"{name} carries {what} unkeyed legacy signature ({header.origin}:validated, a bare SHA-256 of the "
            "file that anyone who can write the file can compute), so it is not trusted and does not run",
            f"Review the file, then sign it with your key: `codeward sign {name}`.")
