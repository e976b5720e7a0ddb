"""The unified diff between two trees as a person should judge it: every file, its executable bit, links.

Approval prompts show what a call would change (:mod:`codeward.approval.previews`, run on copies) and what
a shell run holds back for a person (:mod:`codeward.engines.contained.write_back`); both compare a file, link or
folder before with one after. Besides the text diff, git's mode lines say what a text diff does
not: ``new file mode 100755`` for a new executable (a hook), ``old mode``/``new mode`` for a
``chmod``, ``120000`` for a link (its target shown as its text).
"""

from __future__ import annotations

import difflib
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from codeward.engines.files.textfile import decode

MAX_READ = 8 << 20
"""The most of one file a diff reads."""


def tree_diff(before: Path, after: Path, rel: str) -> str:
    """The unified diff from ``before`` to ``after`` (a file, link or folder each, or missing), named
    ``rel``: a folder's files one by one; a new executable file, a mode change or a link said as git
    says it (``new file mode 100755``, ``old mode``/``new mode``, ``120000`` for a link)."""
    old = dict(_entries(before, rel))
    new = dict(_entries(after, rel))
    return "".join(_file_diff(name, old.get(name), new.get(name)) for name in sorted(set(old) | set(new)))


_Entry = tuple[int, bytes]
"""A file's mode (``st_mode``) and bytes; a link's mode and target."""


def _entries(path: Path, rel: str) -> Iterator[tuple[str, _Entry]]:
    try:
        info = path.lstat()
    except OSError:
        return
    if stat.S_ISLNK(info.st_mode):
        yield rel, (info.st_mode, os.fsencode(os.readlink(path)))
    elif stat.S_ISREG(info.st_mode):
        yield rel, (info.st_mode, _head(path))
    elif stat.S_ISDIR(info.st_mode):
        try:
            names = sorted(os.listdir(path))
        except OSError:
            return
        for name in names:
            yield from _entries(path / name, f"{rel}/{name}")


def _file_diff(rel: str, old: _Entry | None, new: _Entry | None) -> str:
    if old == new:
        return ""
    lines: list[str] = []
    old_mode, new_mode = _git_mode(old), _git_mode(new)
    if old is None:
        if new_mode != "100644":
            lines.append(f"new file mode {new_mode}\n")
    elif new is None:
        if old_mode != "100644":
            lines.append(f"deleted file mode {old_mode}\n")
    elif old_mode != new_mode:
        lines += [f"old mode {old_mode}\n", f"new mode {new_mode}\n"]
    before, after = _shown(old), _shown(new)
    if before is None or after is None:
        if (old and old[1]) != (new and new[1]):
            lines.append(f"(binary file {rel} would change)\n")
        return "".join(lines)
    old_name = f"a/{rel}" if old is not None else "/dev/null"
    new_name = f"b/{rel}" if new is not None else "/dev/null"
    body = "".join(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                        old_name, new_name))
    if lines and not body:  # the mode alone changed: name the file as git does
        lines.insert(0, f"diff --git a/{rel} b/{rel}\n")
    return "".join(lines) + body


def _git_mode(entry: _Entry | None) -> str:
    if entry is None:
        return ""
    mode = entry[0]
    if stat.S_ISLNK(mode):
        return "120000"
    return "100755" if mode & 0o111 else "100644"


def _shown(entry: _Entry | None) -> str | None:
    if entry is None:
        return ""
    if stat.S_ISLNK(entry[0]):
        return os.fsdecode(entry[1]) + "\n"
    decoded = decode(entry[1])
    return None if decoded is None else decoded.text


def _head(path: Path) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read(MAX_READ)
    except OSError:
        return b""
