"""Reading and atomically rewriting text files without changing what the edit did not touch.

A file is decoded once into a :class:`TextFile` that remembers its encoding, byte-order mark
and line-ending style. Edits work on text with ``\\n`` line endings; :meth:`TextFile.encode`
puts the original style back, so a CRLF file with a BOM stays one after any edit.

Lines are what git, ripgrep and ``sed`` call lines: text up to and including ``\\n``
(:func:`split_lines`); a form feed or a lone ``\\r`` inside a line does not end it.

Text that is not UTF-8 is read in the encoding it is in: a byte-order mark names UTF-16/32;
bytes with no valid UTF-8 sequence at all (a Latin-1, Windows-1252, Shift JIS... file) are
decoded in the encoding ``chardet`` detects, when that gives the same bytes back exactly; UTF-8
with a few stray bytes keeps them as they are (shown as U+FFFD, written back unchanged).
:meth:`TextFile.encoding_note` says which, so a reader is never shown one text as another.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import os
import re
import secrets
import stat
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from codeward.kernel.content import LONE_SURROGATE
from codeward.kernel.context import ChangeJournal
from codeward.kernel.result import ErrorKind, Result
from codeward.kernel.workspace import Access, Workspace, private_key_marker

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
BINARY_SNIFF_BYTES = 8192
TEMP_NAME_KEEP = 50
"""Characters of the file name kept in its temporary sibling's name (which must stay under 255 bytes)."""
MAX_DETECT_BYTES = 256 * 1024
"""Bytes of a file that is not UTF-8 that its encoding is detected from."""
MIN_DETECT_CONFIDENCE = 0.1
"""chardet's guesses below this are noise (a few accented Latin words read as Greek): Windows-1252 then."""
MAX_TEXT_FILE_BYTES = 32 * 1024 * 1024
"""Text tools refuse bigger files: each holds a file in memory several times over (text, lines, edits)."""


@dataclass(frozen=True, slots=True)
class TextFile:
    """Decoded text (``\\n`` line endings when the file is consistent) plus how to re-encode it."""

    text: str
    encoding: str = "utf-8"
    bom: bytes = b""
    newline: str = "\n"
    undecodable: int = 0
    """Bytes that are not UTF-8 in a UTF-8 file (kept as lone surrogates, written back as they were)."""
    detected: bool = False
    """The encoding was detected (no byte-order mark, not UTF-8)."""

    def encoding_note(self) -> str:
        """A line for readers when the text is not plain UTF-8 ("" when it is)."""
        if self.undecodable:
            return (f"[the file is not valid UTF-8: {self.undecodable:,} byte{'s' if self.undecodable != 1 else ''} "
                    "could not be decoded and show as \ufffd; edits write them back unchanged]")
        if self.detected:
            return (f"[encoding: {self.encoding} (detected; the file is not UTF-8); edits write it back in "
                    f"{self.encoding}]")
        if self.encoding != "utf-8":
            return f"[encoding: {self.encoding} (byte-order mark); edits keep it]"
        return ""

    def encode(self, text: str | None = None) -> bytes:
        """Bytes for ``text`` (default: this file's text) in the original encoding and style."""
        body = self.text if text is None else text
        if self.newline != "\n":
            body = body.replace("\r\n", "\n").replace("\n", self.newline)
        return self.bom + body.encode(self.encoding, errors="surrogateescape" if self.encoding == "utf-8" else "strict")

    def with_text(self, text: str) -> TextFile:
        return replace(self, text=text)


def split_lines(text: str) -> list[str]:
    """``text`` cut after each ``\\n`` (kept), as git, ripgrep and sed number lines.

    :meth:`str.splitlines` also cuts at form feeds, lone ``\\r``, ``\\x1c``-``\\x1e``, ``\\x85``
    and U+2028/2029, which would number a file's lines unlike every other tool.
    """
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def decode(data: bytes) -> TextFile | None:
    """Decode file bytes, or ``None`` when they look binary."""
    bom, encoding = b"", "utf-8"
    for mark, name in _BOMS:
        if data.startswith(mark):
            bom, encoding = mark, name
            break
    body = data[len(bom) :]
    if not bom and b"\x00" in body[:BINARY_SNIFF_BYTES]:
        return None
    undecodable, detected = 0, False
    try:
        text = body.decode(encoding)
    except UnicodeDecodeError:
        if bom:
            return None
        text = body.decode("utf-8", errors="surrogateescape")
        undecodable = len(LONE_SURROGATE.findall(text))
        legacy = None if _VALID_NON_ASCII.search(text) else _legacy_encoding(body)
        if legacy is not None:
            text, encoding, undecodable, detected = body.decode(legacy), legacy, 0, True
    crlf = text.count("\r\n")
    lf = text.count("\n")
    if crlf and crlf == lf:
        return TextFile(text.replace("\r\n", "\n"), encoding, bom, "\r\n", undecodable, detected)
    return TextFile(text, encoding, bom, "\n", undecodable, detected)


_C1_CONTROL = re.compile("[\x80-\x9f]")
_VALID_NON_ASCII = re.compile("[\u0080-\udc7f\udd00-\U0010ffff]")
"""A character that valid UTF-8 decoded to (not a lone surrogate standing for a stray byte)."""


def _legacy_encoding(body: bytes) -> str:
    """The single- or multi-byte legacy encoding ``body`` is in, when one decodes it and gives it back exactly.

    ``chardet`` names it (reading a coding declaration too) when it is fairly sure; Windows-1252,
    the most common such encoding, and then Latin-1 (which decodes any byte) are the fallbacks,
    so such a file is always read as text, never as U+FFFD.
    A guess that turns bytes into C1 control characters (an ISO-8859 reading of Windows quotes
    and dashes) is passed over: text does not hold those.
    """
    import chardet  # only for files that are not UTF-8

    found = chardet.detect(body[:MAX_DETECT_BYTES])
    guess = found.get("encoding") if (found.get("confidence") or 0) >= MIN_DETECT_CONFIDENCE else None
    for name in (guess, "cp1252"):
        if not name:
            continue
        try:
            codec = codecs.lookup(name).name
            text = body.decode(codec)
        except (LookupError, UnicodeError):
            continue
        if text.encode(codec) == body and not _C1_CONTROL.search(text):
            return codec
    return "latin-1"


def read_text(path: Path, display: str, workspace: Workspace | None = None) -> Result[TextFile]:
    """Read and decode a file, with clear errors for missing, directory, special, huge and binary paths.

    See :func:`read_checked` for how the file is opened; binary files are refused.
    """
    empty = TextFile("")
    data = read_checked(path, display, workspace, limit=MAX_TEXT_FILE_BYTES, reader="text tools",
                        hint="Look inside it with a search tool, or with head/tail/grep in run_shell.")
    if not data.ok:
        return data.cast(empty)
    decoded = decode(data.data)
    if decoded is None:
        return Result.fail(ErrorKind.INVALID_INPUT, f"{display} is a binary file ({len(data.data)} bytes)",
                           "Only text files can be read or edited with these tools.", data=empty)
    return Result.success(decoded)


def read_text_plain(workspace: Workspace, raw: object) -> tuple[Path, TextFile] | None:
    """The common case of a read, without resolving symlinks: a plain path to a readable text file.

    ``raw`` must pass :meth:`Workspace.plain_path` (already normal, inside, not blacklisted, by
    its text alone). It is opened with ``O_NOFOLLOW``, and the descriptor must lead to that very
    path (``/proc/self/fd``): then no symlink was followed on the way, so the file read is the one
    :meth:`Workspace.resolve` would have judged, with the same answer. Anything else — no such
    file, a link anywhere on the path, no ``/proc``, not a regular file, too big, binary, a private
    key — gives None, and the caller takes the full path (:meth:`Workspace.resolve`, then
    :func:`read_text`), which gives the usual answer or error.
    """
    plain = workspace.plain_path(raw)
    if plain is None:
        return None
    try:
        fd = os.open(plain, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        if os.readlink(f"/proc/self/fd/{fd}") != plain:
            return None
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_TEXT_FILE_BYTES:
            return None
        data = _read_at_most(fd, MAX_TEXT_FILE_BYTES + 1, info.st_size + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) > MAX_TEXT_FILE_BYTES or private_key_marker(data):
        return None
    decoded = decode(data)
    return None if decoded is None else (Path(plain), decoded)


def read_checked(path: Path, display: str, workspace: Workspace | None, *, limit: int, reader: str,
                 hint: str) -> Result[bytes]:
    """A regular file's bytes, up to ``limit``, with clear errors for missing, directory, special and huge paths.

    The file is opened without blocking and checked on the open descriptor, so a FIFO (which
    would wait forever for a writer) or a device is refused instead of read, and no more than
    ``limit`` bytes are ever read. With the ``workspace`` the path was resolved in, the file
    actually opened is checked against it (a symlink swapped in after resolving).
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return Result.fail(ErrorKind.NOT_FOUND, f"file not found: {display}",
                           "Check the name with list_directory or search_files.", data=b"")
    except OSError as exc:
        return Result.fail(ErrorKind.PERMISSION, f"cannot read {display}: {exc.strerror}",
                           "Check the file's permissions, or use another file.", data=b"")
    try:
        if workspace is not None:
            _check_opened(fd, path, None, workspace, Access.READ)
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            return Result.fail(ErrorKind.INVALID_INPUT, f"{display} is a directory, not a file",
                               "Use list_directory or get_tree for directories.", data=b"")
        if not stat.S_ISREG(info.st_mode):
            return Result.fail(ErrorKind.INVALID_INPUT, f"{display} is not a regular file (a FIFO, socket or device)",
                               "Only regular files can be read or edited with these tools.", data=b"")
        size = info.st_size
        data = b"" if size > limit else _read_at_most(fd, limit + 1, size + 1)
    except PathChanged as exc:
        return Result.fail(ErrorKind.PERMISSION, f"{display} changed while being opened: {exc.strerror}",
                           "Nothing was read. It was replaced (by a symlink?); check it, then retry.", data=b"")
    except OSError as exc:
        return Result.fail(ErrorKind.PERMISSION, f"cannot read {display}: {exc.strerror}",
                           "Check the file's permissions, or use another file.", data=b"")
    finally:
        os.close(fd)
    if size > limit or len(data) > limit:
        return Result.fail(ErrorKind.TOO_LARGE,
                           f"{display} is {max(size, len(data)):,} bytes; {reader} read files up to {limit:,} bytes",
                           hint, data=b"")
    if workspace is not None and (marker := private_key_marker(data)):
        return Result.fail(ErrorKind.PERMISSION, f"{display} holds a private key ({marker})",
                           "Keys are never readable or writable by tools, whatever the file is called.", data=b"")
    return Result.success(data)


def _read_at_most(fd: int, limit: int, expected: int) -> bytes:
    """Up to ``limit`` bytes; ``expected`` (the size from fstat, plus one) sizes the first read."""
    chunks: list[bytes] = []
    remaining = limit
    while remaining > 0:
        chunk = os.read(fd, min(remaining, max(expected, 1 << 16)))
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


class PathChanged(OSError):
    """The file or its folder, once opened, turned out to lie where the workspace forbids."""


def atomic_write(path: Path, data: bytes, workspace: Workspace | None = None) -> None:
    """Replace ``path`` with ``data`` so that readers see the old or the new file, never half.

    Writes a temporary file in the same directory, fsyncs it, gives it the original file's
    permission bits and owner, renames it over the target and fsyncs the directory. Every step
    works relative to one descriptor of the directory; with a ``workspace``, the directory that
    descriptor really is gets checked first, so a folder swapped for a symlink after the path was
    resolved cannot send the write outside (:class:`PathChanged`).
    """
    dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        if workspace is not None:
            _check_opened(dir_fd, path.parent, path.name, workspace, Access.WRITE)
        _replace_in(dir_fd, path.name, data)
    finally:
        os.close(dir_fd)


def _replace_in(dir_fd: int, name: str, data: bytes) -> None:
    try:
        old: os.stat_result | None = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        old = None
    if old is not None and not stat.S_ISREG(old.st_mode):
        old = None  # nothing to inherit from a link (which the rename replaces, not follows)
    tmp_name = f".{name[:TEMP_NAME_KEEP]}.{secrets.token_hex(4)}.codeward-tmp"
    fd = os.open(tmp_name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(fd)
            if old is None:
                umask = os.umask(0)
                os.umask(umask)
                os.fchmod(fd, 0o666 & ~umask)
            else:
                os.fchmod(fd, stat.S_IMODE(old.st_mode))
                created = os.fstat(fd)
                if (created.st_uid, created.st_gid) != (old.st_uid, old.st_gid):
                    with contextlib.suppress(OSError):  # only root may give a file away
                        os.fchown(fd, old.st_uid, old.st_gid)
        os.replace(tmp_name, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name, dir_fd=dir_fd)
        raise
    with contextlib.suppress(OSError):
        os.fsync(dir_fd)


@contextlib.contextmanager
def checked_dir(folder: Path, workspace: Workspace | None, name: str | None = None) -> Iterator[int]:
    """A descriptor of ``folder`` for ``*at`` calls, checked once open: the folder it really is (and
    ``name`` in it) must be writable in ``workspace``, so a folder swapped for a link after the path
    was resolved cannot redirect the operation (:class:`PathChanged`)."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        if workspace is not None:
            _check_opened(fd, folder, name, workspace, Access.WRITE)
        yield fd
    finally:
        os.close(fd)


def _check_opened(fd: int, expected: Path, name: str | None, workspace: Workspace, access: Access) -> None:
    """Raise :class:`PathChanged` unless the opened file (or ``name`` in the opened directory) is allowed.

    Where the descriptor really leads is what counts; when that is the (resolved) path the
    caller gave, the gate already said yes to it.
    """
    try:
        opened = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:  # no /proc: the check made when the path was resolved stands alone
        return
    if opened == os.fspath(expected):
        return
    checked = workspace.resolve(os.path.join(opened, name) if name else opened, access)
    if not checked.ok:
        raise PathChanged(errno.EACCES, checked.errors[0].message)


def write_text(path: Path, original: TextFile, new_text: str, display: str,
               workspace: Workspace | None = None, *, journal: ChangeJournal | None = None) -> Result[None]:
    """Atomically write ``new_text`` in ``original``'s encoding, BOM and line endings.

    Pass the ``workspace`` the path was resolved in: the folder actually written to is checked
    against it once open (see :func:`atomic_write`). Pass the call's ``journal`` (``ctx.call.journal``)
    when ``path`` is not one of the tool's declared write paths, so that the change is checkpointed.
    """
    if journal is not None:
        journal.before(path)
    try:
        data = original.encode(new_text)
    except UnicodeEncodeError as exc:
        return Result.fail(ErrorKind.INVALID_INPUT,
                           f"the new text cannot be encoded as {original.encoding} for {display}: {exc.reason}",
                           "Use characters the file's encoding can represent.")
    try:
        atomic_write(path, data, workspace)
    except PathChanged as exc:
        return Result.fail(ErrorKind.PERMISSION, f"{display} changed while being written: {exc.strerror}",
                           "Nothing was written. A folder on its path was replaced (by a symlink?); check it, "
                           "then retry.")
    except OSError as exc:
        return Result.fail(ErrorKind.PERMISSION, f"cannot write {display}: {exc.strerror}",
                           "Check the file and folder permissions.")
    return Result.success(None)
