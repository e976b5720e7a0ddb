"""The built-in Beads store: ``.beads/issues.jsonl`` read whole, changed under a lock, rewritten atomically.

Every change takes an exclusive ``flock`` on ``.beads/issues.jsonl.lock``, reads the file,
applies the change and replaces the file with a complete new one (temp file, fsync, rename).
Writers in other threads or processes wait for the lock, so none of them works from a stale
copy and no bead is lost; readers never see a half-written file. A file that cannot be read
back exactly (bad JSON, git conflict markers) is reported, and never rewritten.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from pydantic import ValidationError

from codeward.engines.beads.ids import PREFIX_PATTERN, prefix_from_name
from codeward.engines.beads.model import Bead
from codeward.engines.files.textfile import TextFile, read_text, write_text
from codeward.kernel.result import ErrorKind, Result
from codeward.kernel.state_dir import flock_within
from codeward.kernel.workspace import Access, Workspace

T = TypeVar("T")
BEADS_DIR = ".beads"
ISSUES_FILE = "issues.jsonl"
LOCK_FILE = "issues.jsonl.lock"
CONFIG_FILE = "config.yaml"
LOCK_TIMEOUT_SECONDS = 15.0
NO_WORKSPACE = "no active workspace to run beads tools."
NO_WORKSPACE_HINT = ("Create one in the project root with `codeward beads init` (or `bd init`); "
                     "Beads keeps its issues in .beads/issues.jsonl.")
_PREFIX_LINE = re.compile(r"""^issue-prefix:\s*["']?([A-Za-z0-9_-]+)["']?\s*(#.*)?$""", re.MULTILINE)
_CONFLICT_MARKERS = ("<<<<<<< ", "=======", ">>>>>>> ")

Change = Callable[[list[Bead]], Result[tuple[list[Bead], T]]]
"""Gets the current beads; returns the complete new list and a value for the caller."""


@dataclass(frozen=True)
class Loaded:
    beads: list[Bead]
    original: TextFile
    sources: dict[str, tuple[Bead, str]]
    """Each bead as read and the line it was read from, by id: unchanged beads are written back verbatim."""

    def line_for(self, bead: Bead) -> str:
        source = self.sources.get(bead.id)
        if source is None:
            return bead.to_json_line()
        read, line = source
        if read == bead:
            return line
        return bead.to_json_line(list(json.loads(line)))


@dataclass(frozen=True)
class BeadsStore:
    """The ``.beads`` folder of a project (already vetted by the workspace gate)."""

    directory: Path
    display: str
    """How the issues file is named in messages (relative to the workspace root)."""

    @property
    def issues_path(self) -> Path:
        return self.directory / ISSUES_FILE

    def load(self) -> Result[list[Bead]]:
        loaded = self._load()
        return loaded.cast(loaded.data.beads)

    def change(self, change: Change[T], empty: T) -> Result[T]:
        """Apply ``change`` under the lock and write the result; nothing is written on failure."""
        with _exclusive(self.directory / LOCK_FILE, LOCK_TIMEOUT_SECONDS) as acquired:
            if not acquired:
                return Result.fail(ErrorKind.TIMEOUT,
                                   f"{self.display} stayed locked by another writer for {LOCK_TIMEOUT_SECONDS:g} s",
                                   "Retry in a moment; if it persists, a crashed process may hold the lock.",
                                   data=empty)
            loaded = self._load()
            if not loaded.ok:
                return loaded.cast(empty)
            outcome = change(list(loaded.data.beads))
            if not outcome.ok:
                return outcome.cast(empty)
            beads, value = outcome.data
            text = "".join(loaded.data.line_for(bead) + "\n" for bead in beads)
            written = write_text(self.issues_path, loaded.data.original, text, self.display)
            if not written.ok:
                return written.cast(empty)
            return Result.success(value, *outcome.notes)

    def prefix(self, beads: list[Bead]) -> str:
        """The id prefix: config.yaml's ``issue-prefix``, else the one existing ids use, else the folder name."""
        with contextlib.suppress(OSError, UnicodeDecodeError):
            found = _PREFIX_LINE.search((self.directory / CONFIG_FILE).read_text(encoding="utf-8"))
            if found:
                return found.group(1)
        used = Counter(b.id.rsplit("-", 1)[0] for b in beads if "-" in b.id)
        if used:
            return used.most_common(1)[0][0]
        return prefix_from_name(self.directory.parent.name)

    def _load(self) -> Result[Loaded]:
        empty = Loaded([], TextFile(""), {})
        if not self.issues_path.exists():
            return Result.success(empty)
        read = read_text(self.issues_path, self.display)
        if not read.ok:
            return read.cast(empty)
        beads: list[Bead] = []
        sources: dict[str, tuple[Bead, str]] = {}
        for number, line in enumerate(read.data.text.split("\n"), 1):
            if not line.strip():
                continue
            if line.startswith(_CONFLICT_MARKERS):
                return Result.fail(ErrorKind.CONFLICT, f"{self.display} has a git merge conflict marker on line "
                                   f"{number}", "Resolve the conflict (keep the beads of both sides, one JSON "
                                   "object per line) and retry; nothing was changed.", data=empty)
            try:
                bead = Bead.model_validate(json.loads(line))
            except json.JSONDecodeError as exc:
                return Result.fail(ErrorKind.INVALID_INPUT,
                                   f"line {number} of {self.display} is not valid JSON: {exc.msg}",
                                   "Fix or remove that line; nothing was changed.", data=empty)
            except ValidationError as exc:
                problem = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'line'}: {e['msg']}" for e in exc.errors())
                return Result.fail(ErrorKind.INVALID_INPUT, f"line {number} of {self.display} is not a bead "
                                   f"({problem})", "Each line must be a JSON object with at least id and "
                                   "title; fix that line. Nothing was changed.", data=empty)
            beads.append(bead)
            sources[bead.id] = (bead.model_copy(deep=True), line.rstrip("\r"))
        return Result.success(Loaded(beads, read.data, sources))


def open_store(workspace: Workspace, access: Access) -> Result[BeadsStore | None]:
    """The store of the workspace's primary root, or the seed's "no active workspace" error."""
    found = workspace.resolve(f"{BEADS_DIR}/{ISSUES_FILE}", access, param="beads workspace")
    if not found.ok:
        return found.cast(None)
    directory = found.data.parent
    if not directory.is_dir():
        return Result.fail(ErrorKind.NOT_FOUND, NO_WORKSPACE, NO_WORKSPACE_HINT, data=None)
    return Result.success(BeadsStore(directory, workspace.display(found.data)))


def beads_init(root: Path, prefix: str | None = None) -> str:
    """Create ``.beads/`` in ``root`` for the built-in store; says what it did (or that it exists).

    Raises ``ValueError`` for a root that is not a folder or a malformed prefix.
    """
    root = Path(root)
    if not root.is_dir():
        raise ValueError(f"{root} is not a folder; run `codeward beads init` in the project root")
    chosen = prefix if prefix is not None else prefix_from_name(root.resolve().name)
    if not PREFIX_PATTERN.match(chosen):
        raise ValueError(f"prefix {chosen!r} must be lower-case letters, digits, '-' or '_' (at most 32), "
                         "starting with a letter or digit")
    directory = root / BEADS_DIR
    issues = directory / ISSUES_FILE
    if issues.exists():
        return f"{BEADS_DIR}/ already exists in {root} ({issues.name} kept as it is); nothing to do."
    directory.mkdir(exist_ok=True)
    config = directory / CONFIG_FILE
    if not config.exists():
        config.write_text(f"# Beads configuration (read by bd and by codeward)\nissue-prefix: \"{chosen}\"\n",
                          encoding="utf-8")
    (directory / LOCK_FILE).touch()
    ignore = directory / ".gitignore"
    if not ignore.exists():
        ignore.write_text(f"# lock file of writers; issues.jsonl itself is committed\n{LOCK_FILE}\n",
                          encoding="utf-8")
    issues.touch()
    return (f"Initialized a Beads workspace in {directory} (id prefix {chosen!r}). Issues live in "
            f"{BEADS_DIR}/{ISSUES_FILE}; commit it with your code.")


@contextlib.contextmanager
def _exclusive(lock_path: Path, timeout: float) -> Iterator[bool]:
    """Hold an exclusive flock on ``lock_path``; yields False when it could not be had in time."""
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if not flock_within(fd, timeout, poll=0.005):
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
