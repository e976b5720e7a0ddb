"""Tracked files: what a person put into the conversation, and what changed in them since.

``:add`` puts files into the context: their content goes to the model once, with a path
header. The session's Workspace allowlist is rebuilt from them (plus the base directories)
before every model request, as the seed's Layer 1 does. After each round of tool calls the
files are re-stat'ed; those whose mtime or size changed — by a tool, an editor, a formatter —
are diffed against the content the model last saw, and the diff rides on the last tool result
as a ``[SYSTEM: FILES UPDATED]`` block. Deleted and renamed files are reported as such.
"""

from __future__ import annotations

import difflib
import fnmatch
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from codeward.apps.agent.conversation import FILES_UPDATED, FILES_UPDATED_END
from codeward.engines.files.textfile import read_text
from codeward.engines.files.walk import walk
from codeward.kernel.workspace import Workspace

MAX_DIFF_CHARS_PER_FILE = 4000
MAX_DIFF_CHARS_TOTAL = 12000
MAX_ADD_FILES = 200
RENAME_SEARCH_LIMIT = 5000


def estimate_tokens(text: str) -> int:
    """About four characters a token: close enough for a budget, and free."""
    return (len(text) + 3) // 4


@dataclass
class _Seen:
    text: str
    mtime_ns: int
    size: int


@dataclass
class TrackedFiles:
    """The tracked set of one session, keyed by resolved path."""

    base: Workspace
    base_dirs: tuple[Path, ...] | None = None
    """Directories the session may use besides the tracked files (None: all of ``base``'s roots)."""
    files: dict[Path, _Seen] = field(default_factory=dict)

    # -- the allowlist ------------------------------------------------------------------------

    def workspace(self) -> Workspace:
        """Layer 1, rebuilt: the tracked files plus the base directories."""
        dirs = None if self.base_dirs is None else list(self.base_dirs)
        # A tracked path that now resolves elsewhere (swapped for a symlink) would carry its
        # target into the allowlist: it is left out, and the gate judges it like any path.
        unchanged = [path for path in self.files if os.path.realpath(path) == os.fspath(path)]
        return self.base.with_files(unchanged, dirs)

    # -- adding and dropping ------------------------------------------------------------------

    def add(self, patterns: Iterable[str]) -> tuple[list[str], list[str]]:
        """Track files by path or glob; returns (added, problems). Paths go through the gate."""
        added: list[str] = []
        problems: list[str] = []
        for pattern in patterns:
            matches = self._expand(pattern)
            if not matches:
                problems.append(f"{pattern}: no such file (globs are relative to {self.base.primary})")
                continue
            for path in matches[:MAX_ADD_FILES]:
                resolved = self.base.resolve(str(path))
                if not resolved.ok:
                    problems.append(resolved.errors[0].message)
                    continue
                loaded = read_text(resolved.data, self.base.display(resolved.data), self.base)
                if not loaded.ok:
                    problems.append(loaded.errors[0].message)
                    continue
                stat = resolved.data.stat()
                if resolved.data not in self.files:
                    added.append(self.base.display(resolved.data))
                self.files[resolved.data] = _Seen(loaded.data.text, stat.st_mtime_ns, stat.st_size)
            if len(matches) > MAX_ADD_FILES:
                problems.append(f"{pattern}: matched {len(matches)} files; only the first {MAX_ADD_FILES} were added")
        return added, problems

    def drop(self, patterns: Iterable[str]) -> list[str]:
        dropped: list[str] = []
        for pattern in patterns:
            for path in list(self.files):
                shown = self.base.display(path)
                if shown == pattern or fnmatch.fnmatch(shown, pattern) or str(path) == pattern:
                    del self.files[path]
                    dropped.append(shown)
        return dropped

    def _expand(self, pattern: str) -> list[Path]:
        if any(ch in pattern for ch in "*?["):
            spec = pattern.lstrip("./")
            return [e.path for e in walk(self.base, self.base.primary, include_dirs=False)
                    if fnmatch.fnmatch(e.rel, spec)]
        candidate = Path(pattern) if os.path.isabs(pattern) else self.base.primary / pattern
        return [candidate] if candidate.is_file() or candidate.is_symlink() else []

    # -- what the model sees ------------------------------------------------------------------

    def context_block(self, names: Sequence[str]) -> str:
        """The content of newly added files, with path headers, for the next message."""
        parts = []
        for path, seen in self.files.items():
            shown = self.base.display(path)
            if shown in names:
                parts.append(f"[FILE: {shown}]\n{seen.text}\n[/FILE: {shown}]")
        return "\n\n".join(parts)

    def listing(self) -> list[tuple[str, int, int]]:
        """(path, bytes, estimated tokens) per tracked file."""
        return [(self.base.display(p), s.size, estimate_tokens(s.text)) for p, s in self.files.items()]

    def tokens(self) -> int:
        return sum(estimate_tokens(s.text) for s in self.files.values())

    def paths(self) -> list[str]:
        return [self.base.display(p) for p in self.files]

    # -- the synthetic refresh ----------------------------------------------------------------

    def refresh(self) -> str:
        """Re-stat every tracked file; a ``[SYSTEM: FILES UPDATED]`` block for the changes, or ""."""
        reports: list[str] = []
        budget = MAX_DIFF_CHARS_TOTAL
        allowed = self.workspace()
        for path in list(self.files):
            seen = self.files[path]
            shown = self.base.display(path)
            try:
                stat = path.stat()
            except FileNotFoundError:
                reports.append(self._gone(path, seen, shown))
                continue
            if stat.st_mtime_ns == seen.mtime_ns and stat.st_size == seen.size:
                continue
            loaded = read_text(path, shown, allowed)  # it may have become a symlink to anywhere
            if not loaded.ok:
                reports.append(f"{shown}: changed and can no longer be read as text ({loaded.errors[0].message})")
                continue
            new_text = loaded.data.text
            self.files[path] = _Seen(new_text, stat.st_mtime_ns, stat.st_size)
            if new_text == seen.text:
                continue
            diff = "".join(difflib.unified_diff(seen.text.splitlines(keepends=True), new_text.splitlines(keepends=True),
                                                f"a/{shown}", f"b/{shown}"))
            limit = min(MAX_DIFF_CHARS_PER_FILE, budget)
            if len(diff) > limit:
                lines = diff.count("\n")
                diff = (diff[:limit] + f"\n[... diff of {shown} cut: {lines} lines, {len(diff):,} characters; "
                        f"read the file with read_file to see it whole ...]\n")
            budget = max(0, budget - len(diff))
            reports.append(diff.rstrip("\n"))
        if not reports:
            return ""
        return f"{FILES_UPDATED}\n" + "\n".join(reports) + f"\n{FILES_UPDATED_END}"

    def _gone(self, path: Path, seen: _Seen, shown: str) -> str:
        del self.files[path]
        renamed = self._find_rename(path, seen)
        if renamed is not None:
            stat = renamed.stat()
            self.files[renamed] = _Seen(seen.text, stat.st_mtime_ns, stat.st_size)
            return f"{shown}: renamed to {self.base.display(renamed)} (content unchanged; now tracked there)"
        return f"{shown}: deleted (no longer tracked)"

    def _find_rename(self, old: Path, seen: _Seen) -> Path | None:
        """A file that appeared with exactly the old content: the same folder first, then the tree."""
        tracked = set(self.files)
        folders = [old.parent, self.base.primary] if old.parent.is_dir() else [self.base.primary]
        for folder in folders:
            for count, entry in enumerate(walk(self.base, folder, include_dirs=False,
                                               max_depth=1 if folder == old.parent else None)):
                if count > RENAME_SEARCH_LIMIT:
                    break
                if entry.path in tracked:
                    continue
                try:
                    if entry.path.stat().st_size != seen.size:
                        continue
                except OSError:
                    continue
                loaded = read_text(entry.path, entry.rel, self.base)
                if loaded.ok and loaded.data.text == seen.text:
                    return entry.path
        return None

