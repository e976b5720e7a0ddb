"""Running ripgrep for content search: where the binary is, what it is told, what it said.

ripgrep does the walking and matching (fast, parallel, ``.gitignore``-aware); this module
keeps it inside codeward's rules:

- the binary comes from the ``ripgrep`` wheel installed next to codeward, else from ``PATH``;
  no configuration file or environment variable of the user can add options (``--no-config``),
  and nothing it could execute (``--pre``, ``--search-zip``) is ever asked for;
- the ignore rules are git's, as every walker of codeward sees them (:mod:`codeward.engines.files.ignore`):
  ``.gitignore`` files and ``.git/info/exclude``, never ripgrep's own ``.ignore``/``.rgignore`` nor
  the user's global excludes; ignore files are read only inside the workspace: ripgrep's own
  walk up the parents (which goes past the workspace root, to ``/``) is off, and the ignore
  files between the root and the searched folder are handed over re-anchored, as if ripgrep
  had read them itself;
- the blacklist goes to ripgrep as exclusion globs placed *after* the caller's (the last glob
  that matches decides), and every reported path is checked again by the caller;
- a search has a deadline and a cancel switch; the process group is killed on either.

Output is read as bytes in ripgrep's plain ``--null`` format (path NUL line:column:text), which
costs ripgrep and Python less than ``--json``.
"""

from __future__ import annotations

import contextlib
import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from codeward.kernel.result import ErrorKind, Result, quoted

CaseMode = Literal["smart", "sensitive", "insensitive"]
ALWAYS_EXCLUDED = (".git/", ".hg/", ".svn/", ".codeward/")
"""Version-control internals and codeward's own state are never searched (hidden files are)."""
MAX_COLUMNS = 1 << 20
"""Longer lines come back as their first this-many bytes (a data blob); a minified file's line fits."""
READ_CHUNK = 1 << 16
_PLAIN_NAME = re.compile(r"^[^/{},\\!\[\]]+$")
"""A glob that is a bare name pattern (no slash, brace, comma, class or escape): safe inside {a,b}."""
_MATCH_LINE = re.compile(rb"(\d+)([:-])")
_COLUMN = re.compile(rb"(\d+):")
_MATCH_MARK = re.compile(rb"\0\d+:")
"""A matching line's path end and line number (a NUL appears nowhere else in match output)."""
_MATCH_ENTRY = re.compile(rb"^\d+:", re.MULTILINE)
_BINARY_NOTICE = re.compile(rb'^(.*): binary file matches \(found "\\0" byte around offset \d+\)$', re.DOTALL)
"""What ripgrep prints instead of the lines of a file it was named explicitly that turns out binary."""


@dataclass(frozen=True, slots=True)
class Query:
    """What to search for and how; mirrors the tool's arguments."""

    pattern: str
    literal: bool = False
    case: CaseMode = "smart"
    word: bool = False
    multiline: bool = False
    globs: tuple[str, ...] = ()
    file_type: str = ""
    context: int = 0
    hidden: bool = True
    include_ignored: bool = False


@dataclass(frozen=True, slots=True)
class Line:
    """One output line of a match listing: a matching line (with the column) or a context line."""

    path: bytes
    number: int
    is_match: bool
    column: int
    text: bytes


@dataclass(frozen=True, slots=True)
class BinaryHit:
    """A binary file that matches (ripgrep shows no lines of it)."""

    path: bytes


@dataclass(frozen=True, slots=True)
class Counted:
    """One file of a count listing (``--count-matches``) or a file listing (count 0)."""

    path: bytes
    count: int


def find_binary() -> str | None:
    """``rg`` from the ``ripgrep`` wheel in this environment, else from ``PATH``."""
    for folder in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        candidate = os.path.join(folder, "rg")
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("rg")


def query_args(query: Query, *, blacklist: Sequence[str], ignore_file: Path | None) -> list[str]:
    """The options every mode shares: matching, filtering, ignore handling, safety."""
    args = ["--no-config", "--no-messages", "--color=never", "--no-ignore-parent", "--no-ignore-global",
            "--no-ignore-dot", "--no-require-git", f"--max-columns={MAX_COLUMNS}", "--max-columns-preview"]
    args.append({"smart": "--smart-case", "sensitive": "--case-sensitive",
                 "insensitive": "--ignore-case"}[query.case])
    if query.literal:
        args.append("--fixed-strings")
    if query.word:
        args.append("--word-regexp")
    if query.multiline:
        args.append("--multiline")
    if query.hidden:
        args.append("--hidden")
    if query.include_ignored:
        args.append("--no-ignore")
    if query.file_type:
        args.append(f"--type={query.file_type}")
    for glob in query.globs:
        args.append(f"--glob={glob}")
    # Exclusions last: among globs, the last one that matches a path decides. Names without a
    # slash (most of them) go in one alternation, which ripgrep tests faster than many globs.
    excluded = (*ALWAYS_EXCLUDED, *blacklist)
    names = [glob for glob in excluded if _PLAIN_NAME.match(glob)]
    if names:
        args.append("--iglob=!{" + ",".join(names) + "}" if len(names) > 1 else f"--iglob=!{names[0]}")
    args.extend(f"--iglob=!{glob}" for glob in excluded if glob not in names)
    if ignore_file is not None:
        args.append(f"--ignore-file={ignore_file}")
    args.append(f"--regexp={query.pattern}")
    return args


def reanchored_ignores(parents: Sequence[tuple[str, str]]) -> str:
    """Ignore-file texts of parent folders rewritten to be read from the workspace root.

    ``parents`` holds (folder relative to the root, '' for the root itself; file text), lowest
    precedence first (later lines win). A pattern with a slash before its end is anchored to its
    own folder, so it gets that folder as a prefix; one without (``*.o``, ``build/``) matches at
    any depth below its folder, which, for a search inside that folder, is any depth at all: it
    stays as it is.
    """
    out: list[str] = []
    for folder, text in parents:
        for raw in text.removeprefix("\ufeff").removesuffix("\n").split("\n"):
            line = raw.rstrip("\r")
            if not line.strip() or line.startswith("#"):
                out.append(line)
                continue
            negated = line.startswith("!")
            body = line[1:] if negated else line
            anchored = "/" in body.rstrip("/") or body.startswith("/")
            if anchored and folder and not body.startswith("**/"):
                body = f"/{folder}/{body.lstrip('/')}"
            out.append(("!" if negated else "") + body)
    return "\n".join(out) + "\n"


class Search:
    """One ripgrep process: start it, read its lines, stop it (deadline, cancel, or enough read).

    Use as a context manager; leaving it kills the process group if ripgrep is still running.
    """

    def __init__(self, binary: str, args: list[str], cwd: Path, *, timeout: float,
                 cancelled: threading.Event | None = None) -> None:
        self._binary = binary
        self._args = args
        self._cwd = cwd
        self._deadline = time.monotonic() + timeout
        self._timeout = timeout
        self._cancelled = cancelled
        self._process: subprocess.Popen[bytes] | None = None
        self._stderr = bytearray()
        self.timed_out = False
        self.was_cancelled = False
        self.stopped = False

    def __enter__(self) -> Search:
        env = {key: value for key, value in os.environ.items() if not key.startswith("RIPGREP_")}
        env["LC_ALL"] = "C"
        self._process = subprocess.Popen([self._binary, *self._args], cwd=self._cwd, env=env,
                                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, start_new_session=True)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
        process = self._process
        if process is not None:
            for stream in (process.stdout, process.stderr):
                if stream is not None:
                    stream.close()
            process.wait()

    def stop(self) -> None:
        """Kill ripgrep (and anything it started) if it is still running."""
        process = self._process
        if process is not None and process.poll() is None:
            self.stopped = True
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)

    @property
    def returncode(self) -> int | None:
        return self._process.returncode if self._process is not None else None

    @property
    def stderr(self) -> str:
        return self._stderr.decode("utf-8", "replace").strip()

    def chunks(self) -> Iterator[bytes]:
        """ripgrep's stdout in pieces of whole lines (the last newline dropped), until it ends or is stopped."""
        process = self._process
        assert process is not None and process.stdout is not None and process.stderr is not None
        out_fd, err_fd = process.stdout.fileno(), process.stderr.fileno()
        pending = b""
        with selectors.DefaultSelector() as selector:
            selector.register(out_fd, selectors.EVENT_READ)
            selector.register(err_fd, selectors.EVENT_READ)
            open_fds = 2
            while open_fds:
                if self._cancelled is not None and self._cancelled.is_set():
                    self.was_cancelled = True
                    self.stop()
                    return
                remaining = self._deadline - time.monotonic()
                if remaining <= 0:
                    self.timed_out = True
                    self.stop()
                    return
                for key, _events in selector.select(timeout=min(remaining, 0.25)):
                    fd = key.fd
                    chunk = os.read(fd, READ_CHUNK)
                    if not chunk:
                        selector.unregister(fd)
                        open_fds -= 1
                        continue
                    if fd == err_fd:
                        if len(self._stderr) < 16_384:
                            self._stderr += chunk
                        continue
                    cut = chunk.rfind(b"\n")
                    if cut < 0:
                        pending += chunk
                        continue
                    yield pending + chunk[:cut]
                    pending = chunk[cut + 1:]
        if pending:
            yield pending
        process.wait()

    def lines(self) -> Iterator[bytes]:
        """ripgrep's stdout line by line (without the newline)."""
        for chunk in self.chunks():
            yield from chunk.split(b"\n")


@dataclass
class Grouped:
    """Match-listing output grouped by file, in the order read: each entry ``N:C:text`` or ``N-text``."""

    files: dict[bytes, list[bytes]]
    matched: int
    """Matching lines read (context lines not counted)."""
    binary: bytes | None = None
    """A file named explicitly that turned out binary (ripgrep shows no lines of it)."""


def group_match_lines(search: Search, cap: int) -> Grouped:
    """Read ``--null --line-number --column`` output into per-file lists until the end or past ``cap`` matches.

    Per line this only splits off the path: a search with thousands of matches costs ripgrep's
    time, not Python's. Lines are parsed (:func:`parse_entry`) only for what gets shown.
    """
    files: dict[bytes, list[bytes]] = {}
    matched = 0
    carry = b""
    for chunk in search.chunks():
        matched += len(_MATCH_MARK.findall(chunk))
        for piece in chunk.split(b"\n"):
            if carry:
                piece, carry = carry + b"\n" + piece, b""
            path, sep, rest = piece.partition(b"\0")
            if not sep:
                binary = _BINARY_NOTICE.match(piece)
                if binary is not None:
                    search.stop()
                    return Grouped(files, matched, binary.group(1))
                if piece != b"--":
                    carry = piece  # the start of a path that holds a newline
                continue
            entries = files.get(path)
            if entries is None:
                entries = files[path] = []
            entries.append(rest)
        if matched > cap:
            search.stop()
            break
    return Grouped(files, matched)


def count_matching(entries: list[bytes]) -> int:
    """How many of a file's entries are matching lines."""
    return len(_MATCH_ENTRY.findall(b"\n".join(entries)))


def parse_entry(path: bytes, entry: bytes) -> Line | None:
    """One ``N:C:text`` (matching) or ``N-text`` (context) entry as a :class:`Line`."""
    head = _MATCH_LINE.match(entry)
    if head is None:
        return None
    number, kind = int(head.group(1)), head.group(2)
    body = entry[head.end():]
    column = 0
    if kind == b":":
        col = _COLUMN.match(body)
        if col is not None:
            column, body = int(col.group(1)), body[col.end():]
    return Line(path, number, kind == b":", column, body)


def parse_match_lines(raw: Iterator[bytes]) -> Iterator[Line | BinaryHit | None]:
    """Lines of ``--null --line-number --column`` output; None for a group separator (``--``).

    A path may hold a newline (a file name can): a piece without the NUL that ends every path
    is the start of such a path and is joined to what follows.
    """
    carry = b""
    for piece in raw:
        if carry:
            piece = carry + b"\n" + piece
            carry = b""
        cut = piece.find(b"\0")
        if cut < 0:
            binary = _BINARY_NOTICE.match(piece)
            if piece == b"--":
                yield None
            elif binary is not None:
                yield BinaryHit(binary.group(1))
            else:
                carry = piece
            continue
        line = parse_entry(piece[:cut], piece[cut + 1:])
        if line is not None:
            yield line


def parse_counts(raw: Iterator[bytes]) -> Iterator[Counted]:
    """Lines of ``--null --count-matches`` output: path NUL count."""
    carry = b""
    for piece in raw:
        if carry:
            piece = carry + b"\n" + piece
            carry = b""
        path, sep, count = piece.rpartition(b"\0")
        if not sep:
            carry = piece
            continue
        if count.isdigit():
            yield Counted(path, int(count))


def parse_files(raw: Iterator[bytes]) -> Iterator[Counted]:
    """``--null --files-with-matches`` output: NUL-terminated paths (newlines are part of names)."""
    pending = b""
    for piece in raw:
        pending = pending + b"\n" + piece if pending else piece
        *paths, pending = pending.split(b"\0")
        for path in paths:
            yield Counted(path, 0)
    if pending:
        yield Counted(pending, 0)


def failure(search: Search, timeout: float, query: Query) -> Result[None] | None:
    """The error a finished search reports, or None when it went well (exit 0 or 1, or stopped)."""
    if search.timed_out:
        return Result.fail(ErrorKind.TIMEOUT, f"the search did not finish within {timeout:.0f}s",
                           "Narrow it: a subfolder (path), file globs (glob=['*.py']), or a more specific pattern.")
    if search.was_cancelled:
        return Result.fail(ErrorKind.TIMEOUT, "the search was cancelled", "Run it again if it is still needed.")
    if search.stopped or search.returncode in (0, 1):
        return None
    message = search.stderr
    if "regex parse error" in message or "error parsing regex" in message:
        detail = "\n".join(line.strip() for line in message.splitlines()[1:] if line.strip())
        return Result.fail(ErrorKind.INVALID_INPUT,
                           f"pattern {quoted(query.pattern)} is not a valid regular expression: {detail or message}",
                           "ripgrep uses Rust regex syntax (no look-around or back-references); escape special "
                           "characters, or pass literal=true to search for the text as it is.")
    if "unrecognized file type" in message:
        return Result.fail(ErrorKind.INVALID_INPUT, f"file_type {quoted(query.file_type)} is not a type ripgrep knows",
                           "Use a type such as py, js, ts, rust, go, c, cpp, java, md, or give globs instead "
                           "(glob=['*.ext']).")
    if "glob" in message.lower():
        return Result.fail(ErrorKind.INVALID_INPUT, f"a glob is not valid: {message.splitlines()[0]}",
                           "Globs look like '*.py', 'src/**/*.ts' or '!tests/**' (a leading ! excludes).")
    if not message:
        return None  # exit 2 with nothing said: some file could not be read (--no-messages)
    return Result.fail(ErrorKind.INTERNAL, f"ripgrep failed: {message.splitlines()[0]}")


@contextlib.contextmanager
def ignore_file(text: str) -> Iterator[Path | None]:
    """A temporary file holding re-anchored parent ignore patterns (None when there are none)."""
    if not text.strip():
        yield None
        return
    fd, name = tempfile.mkstemp(prefix="codeward-ignore-", suffix=".txt")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as handle:
            handle.write(text)
        yield Path(name)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(name)
