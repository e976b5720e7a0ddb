"""Members set in a client's JSON(C) config file, changing nothing else in it.

The file is the person's (and the client's): other servers, keys codeward does not know, comments
and trailing commas (VS Code's ``mcp.json`` is JSONC) stay as they are (:mod:`.jsonc`); a file that
is not a JSON(C) object is refused before anything is written; members that are already right leave
the file untouched; a file that does change is first copied into codeward's data folder
(``backups/``, mode 0600: it may hold a token), never beside it, where a project's copy would be
committed. Writes are atomic and keep the file's mode, except that a file holding a token is made
readable by its owner only.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codeward.apps.client_setup.jsonc import JsoncError, parse, set_member
from codeward.engines.files.textfile import atomic_write

BOM = b"\xef\xbb\xbf"
Change = tuple[tuple[str, ...], Any]
"""Where a member goes (the keys from the top) and its value."""


class ConfigFileError(ValueError):
    """The existing file cannot be merged into; the message names the problem and leaves it unchanged."""


@dataclass(frozen=True)
class Installed:
    path: Path
    status: str
    """``created`` (a new file), ``updated`` (backup made) or ``unchanged``."""
    backup: Path | None = None
    tightened: bool = False
    """The file was readable by others and now holds a token: its mode became 0600."""


def install_entry(path: Path, changes: Sequence[Change], *, backups: Path, private: bool = False,
                  now: float | None = None) -> Installed:
    """Set each change in the JSON(C) file ``path`` (made if missing); ``backups``: the folder that
    receives a copy of a file before it changes."""
    real = path.resolve() if path.is_symlink() else path
    if real.exists() and not real.is_file():
        raise ConfigFileError(f"{path} is not a file; move it aside and run this again")
    existing = real.read_bytes() if real.exists() else None
    text = _decode(path, existing) if existing is not None else ""
    if not text.strip():
        text = "{}\n"
    try:
        document = parse(text)
    except JsoncError as exc:
        raise ConfigFileError(f"{path} is not valid JSON: {exc}; nothing was changed. Fix the file (or move it "
                              "aside) and run this again, or use --print and add the entry by hand") from None
    wanted = [change for change in changes if _value_at(document.value, change[0]) != change[1]]
    tightened = existing is not None and private and _readable_by_others(real)
    if not wanted and existing is not None:
        if tightened:
            os.chmod(real, 0o600)
        return Installed(path, "unchanged", tightened=tightened)
    for keys, value in wanted:
        try:
            text = set_member(parse(text), keys, value)
        except JsoncError as exc:
            raise ConfigFileError(f"{path}: {exc}; nothing was changed. Fix that key and run this again") from None
    data = text.encode("utf-8")
    backup = None
    if existing is not None:
        backup = _backup(real, existing, backups, now)
        data = BOM + data if existing.startswith(BOM) else data
    else:
        real.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(real, data)
    if private and (existing is None or tightened):
        os.chmod(real, 0o600)
    return Installed(path, "updated" if existing is not None else "created", backup, tightened)


def _decode(path: Path, data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigFileError(f"{path} is not UTF-8 text ({exc.reason}); nothing was changed. Fix or move the "
                              "file, or use --print and add the entry by hand") from None


def _value_at(document: dict[str, Any], keys: tuple[str, ...]) -> Any:
    node: Any = document
    for key in keys:
        if not isinstance(node, dict) or key not in node:
            return _MISSING
        node = node[key]
    return node


_MISSING = object()


def _readable_by_others(path: Path) -> bool:
    return bool(stat.S_IMODE(path.stat().st_mode) & 0o077)


def backup_name(path: Path, now: float | None) -> str:
    """``<name>.<timestamp>.<8 hex digits of the file's path>``: which file, when, and never two files' copies
    under one name."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    digest = hashlib.sha256(str(path.absolute()).encode()).hexdigest()[:8]
    return f"{path.name}.{stamp}.{digest}"


def _backup(path: Path, data: bytes, folder: Path, now: float | None) -> Path:
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    base = backup_name(path, now)
    backup = folder / base
    number = 1
    while backup.exists():
        number += 1
        backup = folder / f"{base}-{number}"
    fd = os.open(backup, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    return backup
