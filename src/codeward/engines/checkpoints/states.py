"""What a path is at one moment: absent, a file (content hash, mode), a folder, a link.

A checkpoint stores the state of each changed path before and after a tool call; undo compares
the state on disk now with the recorded "after" to tell whether something changed outside
codeward since. States are captured without following a link at the path itself (a link is
recorded as a link) and without blocking on a FIFO.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

Kind = Literal["absent", "file", "dir", "link", "other"]
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CHUNK = 1 << 20


class FileState(BaseModel):
    """One path's state; ``stored`` says whether a file's bytes are kept (so undo can put them back)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Kind
    digest: str = ""
    """sha256 of a file's bytes."""
    mode: int = 0
    """Permission bits of a file or folder."""
    size: int = 0
    target: str = ""
    """Where a link points."""
    stored: bool = False

    def same_as(self, other: FileState) -> bool:
        """The same content: kind, and a file's bytes or a link's target (not modes or times)."""
        if self.kind != other.kind:
            return False
        if self.kind == "file":
            return self.digest == other.digest
        if self.kind == "link":
            return self.target == other.target
        return True

    def describe(self) -> str:
        if self.kind == "file":
            return f"a file of {self.size:,} bytes"
        return {"absent": "absent", "dir": "a folder", "link": f"a link to {self.target}",
                "other": "a special file"}.get(self.kind, self.kind)


ABSENT = FileState(kind="absent")

def capture(path: Path, limit: int = 0) -> tuple[FileState, bytes | None]:
    """The state of ``path`` now, and a file's bytes when it has at most ``limit`` of them.

    Raises ``OSError`` for what cannot be read (permissions): a caller recording a change must
    know it could not.
    """
    try:
        info = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return ABSENT, None
    mode = stat.S_IMODE(info.st_mode)
    if stat.S_ISLNK(info.st_mode):
        return FileState(kind="link", target=os.readlink(path)), None
    if stat.S_ISDIR(info.st_mode):
        return FileState(kind="dir", mode=mode), None
    if not stat.S_ISREG(info.st_mode):
        return FileState(kind="other", mode=mode), None
    fd = os.open(path, _READ_FLAGS)
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode):  # swapped since the lstat
            return FileState(kind="other", mode=stat.S_IMODE(opened.st_mode)), None
        if opened.st_size <= limit:
            data = _read_all(fd)
            if len(data) <= limit:
                state = FileState(kind="file", digest=hashlib.sha256(data).hexdigest(), mode=mode, size=len(data))
                return state, data
        digest, size = _hash_stream(fd)
        return FileState(kind="file", digest=digest, mode=mode, size=size), None
    finally:
        os.close(fd)


def state_of(path: Path) -> FileState:
    """:func:`capture` without keeping any bytes."""
    return capture(path)[0]


def _read_all(fd: int) -> bytes:
    chunks: list[bytes] = []
    while chunk := os.read(fd, _CHUNK):
        chunks.append(chunk)
    return b"".join(chunks)


def _hash_stream(fd: int) -> tuple[str, int]:
    digest = hashlib.sha256()
    size = 0
    while chunk := os.read(fd, _CHUNK):
        digest.update(chunk)
        size += len(chunk)
    return digest.hexdigest(), size
