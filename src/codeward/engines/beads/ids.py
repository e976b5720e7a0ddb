"""Bead ids like Beads' own: ``<prefix>-<short base36 hash>``, longer as a project grows.

Hash ids need no counter, so two clones (or two agents) creating beads at once do not
collide the way sequential numbers would; a clash with an existing id just draws again.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Collection

ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"
PREFIX_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")
ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*-[A-Za-z0-9.]+$")
DEFAULT_PREFIX = "bd"


def id_length(existing: int) -> int:
    """Beads' adaptive length: 4 characters for small projects, more as they grow."""
    if existing < 500:
        return 4
    if existing < 1500:
        return 5
    return 6


def new_id(prefix: str, title: str, created_at: str, taken: Collection[str]) -> str:
    """A fresh id for a bead, not in ``taken``."""
    length = id_length(len(taken))
    for attempt in range(64):
        if attempt and attempt % 8 == 0:
            length += 1
        digest = hashlib.sha256(f"{title}\0{created_at}\0{secrets.token_hex(8)}".encode()).digest()
        candidate = f"{prefix}-{base36(digest)[:length]}"
        if candidate not in taken:
            return candidate
    raise RuntimeError("could not find a free bead id")  # 64 collisions in a row: a bug, not bad luck


def base36(data: bytes) -> str:
    number = int.from_bytes(data, "big")
    digits: list[str] = []
    while number:
        number, rest = divmod(number, 36)
        digits.append(ALPHABET[rest])
    return "".join(reversed(digits)) or "0"


def prefix_from_name(name: str) -> str:
    """A prefix from a folder name (Beads' default): lower case, letters, digits and dashes."""
    cleaned = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")[:32].strip("-")
    return cleaned if cleaned and PREFIX_PATTERN.match(cleaned) else DEFAULT_PREFIX
