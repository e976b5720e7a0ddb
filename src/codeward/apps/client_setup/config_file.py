"""One server entry merged into a client's JSON config file, changing nothing else in it.

The file is the person's (and the client's): other servers and keys codeward does not know stay as
they are, a file that is not a JSON object is refused before anything is written, an entry that is
already right leaves the file untouched, and a file that does change is first copied to
``<file>.bak-<timestamp>``. Writes are atomic and keep the file's mode; a new file that holds a
token is created readable by its owner only.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codeward.engines.files.textfile import atomic_write


class ConfigFileError(ValueError):
    """The existing file cannot be merged into; the message names the problem and leaves it unchanged."""


@dataclass(frozen=True)
class Installed:
    path: Path
    status: str
    """``created`` (a new file), ``updated`` (backup made) or ``unchanged``."""
    backup: Path | None = None


def install_entry(path: Path, servers_at: Sequence[str], name: str, entry: dict[str, Any], *,
                  private: bool = False, now: float | None = None) -> Installed:
    """Put ``entry`` under ``name`` at ``servers_at`` in the JSON file ``path`` (made if missing)."""
    real = path.resolve() if path.is_symlink() else path
    if real.exists() and not real.is_file():
        raise ConfigFileError(f"{path} is not a file; move it aside and run this again")
    existing = real.read_bytes() if real.exists() else None
    document = _parse(path, existing) if existing is not None and existing.strip() else {}
    servers = _servers(path, document, servers_at)
    if servers.get(name) == entry:
        return Installed(path, "unchanged")
    servers[name] = entry
    text = json.dumps(document, indent=_indent_of(existing), ensure_ascii=False) + "\n"
    backup = None
    if existing is not None:
        backup = _backup(real, now)
    else:
        real.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(real, text.encode("utf-8"))
    if existing is None and private:
        os.chmod(real, 0o600)
    return Installed(path, "updated" if existing is not None else "created", backup)


def _parse(path: Path, data: bytes) -> dict[str, Any]:
    try:
        document = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise ConfigFileError(f"{path} is not UTF-8 text ({exc.reason}); nothing was changed. Fix or move the "
                              "file, or use --print and add the entry by hand") from None
    except json.JSONDecodeError as exc:
        hint = " (comments and trailing commas are not JSON)" if re.search(rb"^\s*//|,\s*[}\]]", data, re.M) else ""
        raise ConfigFileError(f"{path} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}{hint}; "
                              "nothing was changed. Fix the file (or move it aside) and run this again, or use "
                              "--print and add the entry by hand") from None
    if not isinstance(document, dict):
        raise ConfigFileError(f"{path} holds a JSON {type(document).__name__}, not an object; nothing was changed. "
                              "Fix or move the file and run this again")
    return document


def _servers(path: Path, document: dict[str, Any], servers_at: Sequence[str]) -> dict[str, Any]:
    """The object at ``servers_at`` (made where missing); refused when something else sits there."""
    node = document
    for depth, key in enumerate(servers_at):
        child = node.setdefault(key, {})
        if not isinstance(child, dict):
            where = ".".join(servers_at[: depth + 1])
            raise ConfigFileError(f"{path}: {where!r} is a JSON {type(child).__name__}, expected an object of "
                                  "servers; nothing was changed. Fix that key and run this again")
        node = child
    return node


def _indent_of(existing: bytes | None) -> int | str:
    """The file's own indentation (two spaces for a new file), so a rewrite changes only the entry."""
    if existing:
        found = re.search(rb"^([ \t]+)\"", existing, re.M)
        if found:
            indent = found.group(1).decode()
            return indent if "\t" in indent else len(indent)
    return 2


def _backup(path: Path, now: float | None) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    backup = path.with_name(f"{path.name}.bak-{stamp}")
    number = 1
    while backup.exists():
        number += 1
        backup = path.with_name(f"{path.name}.bak-{stamp}-{number}")
    shutil.copy2(path, backup)
    return backup
