"""What the project's ignore files exclude, decided as git decides: the one engine every walker uses.

Sources, highest precedence first (git's order, ``gitignore(5)``):

1. the ``.gitignore`` of the entry's own folder, then of each folder above it, up to the
   workspace root;
2. ``.git/info/exclude`` of a repository whose ``.git`` folder lies inside the workspace.

Within one file the last matching line decides (``!`` re-includes); the first file with a
matching line decides for the entry. A pattern with a slash before its end is matched against
the path relative to its file's folder, one without against the entry's name at any depth; a
trailing slash matches folders only; ``*``, ``?`` and ``[...]`` never match a slash, ``**``
between slashes matches any number of folders; other runs of ``*`` are a single ``*``. A folder
that is ignored is not entered, so nothing below it can be re-included — git's rule.

What is *not* read, by design: ignore files above the workspace root, ``core.excludesFile``
(the user's global excludes, a path outside the workspace that a repository's configuration
could name), ripgrep's ``.ignore``/``.rgignore``, and an ignore file that is a symbolic link
(git does not follow those either). The workspace is the boundary of what decides a listing.

:mod:`pathspec`'s ``GitIgnoreSpec`` answers a different question — whether a whole path is
ignored, ancestors included, with matches through an ancestor weighing like the entry's own —
which gives git's answers for files of a flat list but not for a walk that decides folder by
folder (a ``!x`` re-including folder ``x`` also re-included ``x/build`` that ``build`` ignores).
The rule translation here is git's ``wildmatch`` with ``WM_PATHNAME``; the differential tests
compare it with ``git ls-files`` on generated layouts.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from codeward.kernel.workspace import Workspace

IGNORE_FILE = ".gitignore"
EXCLUDE_FILE = ".git/info/exclude"
MAX_IGNORE_FILE_BYTES = 1 << 20
"""A bigger ignore file is not read (git itself stops at 100 MB; a real one is a few kB)."""

_CLASSES = {
    "alnum": "a-zA-Z0-9", "alpha": "a-zA-Z", "blank": r" \t", "cntrl": r"\x00-\x1f\x7f", "digit": "0-9",
    "graph": r"!-~", "lower": "a-z", "print": r" -~", "punct": r"!-/:-@\[-`{-~", "space": r" \t\n\r\f\v",
    "upper": "A-Z", "xdigit": "0-9A-Fa-f",
}
"""POSIX character classes inside brackets, as git's wildmatch knows them (ASCII)."""


@dataclass(frozen=True, slots=True)
class Rule:
    """One pattern line: its translation, whether it re-includes, whether it matches folders only."""

    text: str
    regex: str
    """Matches (in full) a path relative to the rule's folder."""
    negated: bool
    dir_only: bool


class _Unmatchable(ValueError):
    """A pattern git's wildmatch can never match (an unclosed bracket, a trailing backslash)."""


def parse_rules(text: str) -> tuple[Rule, ...]:
    """The rules of one ignore file's text (comments, blanks and unmatchable lines dropped)."""
    rules: list[Rule] = []
    for raw in text.removeprefix("\ufeff").split("\n"):
        line = _trim_trailing_spaces(raw.removesuffix("\r"))
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        body = line[1:] if negated else line
        dir_only = body.endswith("/")
        body = body.rstrip("/") if dir_only else body
        if not body:
            continue  # "/" or "!/" match nothing
        anchored = "/" in body
        try:
            regex = _translate(body.removeprefix("/"), anchored)
        except _Unmatchable:
            continue
        rules.append(Rule(line, regex, negated, dir_only))
    return tuple(rules)


def _trim_trailing_spaces(line: str) -> str:
    """Trailing spaces go unless escaped with a backslash (git's ``trim_trailing_spaces``)."""
    stripped = line.rstrip(" ")
    if stripped != line and stripped.endswith("\\") and (len(stripped) - len(stripped.rstrip("\\"))) % 2:
        return stripped + " "
    return stripped


def _translate(pattern: str, anchored: bool) -> str:
    """git's ``wildmatch`` with ``WM_PATHNAME`` as a Python regular expression (matched in full).

    ``*``, ``?`` and classes match within one path segment, ``**`` (a whole segment) any number
    of segments. Written so that no pattern can make matching slow, whatever a repository's
    ignore file holds: a ``*`` or ``**`` followed by more pattern takes the earliest place where
    the rest of its segment (or its run of segments) matches, in an atomic group — the greedy
    choice that is always right for globs, as in git's own matcher — so only the last one
    backtracks, over one path at most.
    """
    tokens: list[str | None] = [] if anchored else [None]  # None: a "**" segment
    for segment in pattern.split("/"):
        if segment != "**":
            tokens.append(_segment(segment))
        elif not tokens or tokens[-1] is not None:
            tokens.append(None)
    runs: list[tuple[bool, list[str]]] = []  # (after a "**", the segments in a row)
    starred = False
    for token in tokens:
        if token is None:
            starred = True
        elif runs and not starred:
            runs[-1][1].append(token)
        else:
            runs.append((starred, [token]))
            starred = False
    out = ""
    for number, (after_star, segments) in enumerate(runs):
        body, separator = "/".join(segments), "/" if out else ""
        if not after_star:
            out += body
        elif number == len(runs) - 1 and tokens[-1] is not None:
            out += f"{separator}(?:.*/)?{body}"  # the last run: anywhere that ends the path (it alone backtracks)
        else:
            out += f"{separator}(?>(?:[^/]*/)*?{body}(?=/))"  # a "**" follows: its earliest place, committed
    if tokens[-1] is None:
        out += "/.*" if out else ".*"
    return out


def _segment(segment: str) -> str:
    """One path segment's glob: each ``*`` but the last takes the earliest place its next piece matches."""
    pieces: list[str] = []  # regex pieces, "*" standing for a star
    i, n = 0, len(segment)
    while i < n:
        char = segment[i]
        if char == "\\":
            if i + 1 >= n:
                raise _Unmatchable(segment)
            pieces.append(re.escape(segment[i + 1]))
            i += 2
        elif char == "?":
            pieces.append("[^/]")
            i += 1
        elif char == "*":
            while i < n and segment[i] == "*":
                i += 1
            if not pieces or pieces[-1] != "*":
                pieces.append("*")
        elif char == "[":
            bracket, i = _bracket(segment, i)
            pieces.append(bracket)
        else:
            pieces.append(re.escape(char))
            i += 1
    chunks: list[list[str]] = [[]]
    for piece in pieces:
        if piece == "*":
            chunks.append([])
        else:
            chunks[-1].append(piece)
    out = "".join(chunks[0])
    for number, chunk in enumerate(chunks[1:], 1):
        body = "".join(chunk)
        out += f"[^/]*{body}" if number == len(chunks) - 1 else f"(?>[^/]*?{body})"
    return out


def _bracket(pattern: str, start: int) -> tuple[str, int]:
    """A ``[...]`` class (``!`` or ``^`` negates; ``[:alpha:]`` classes; never a slash) and where it ends."""
    i = start + 1
    negated = i < len(pattern) and pattern[i] in "!^"
    if negated:
        i += 1
    parts: list[str] = []
    first = True
    while True:
        if i >= len(pattern):
            raise _Unmatchable(pattern)
        char = pattern[i]
        if char == "]" and not first:
            i += 1
            break
        first = False
        if pattern.startswith("[:", i):
            close = pattern.find("]", i + 2)
            if close < 0:
                raise _Unmatchable(pattern)
            if pattern[close - 1] == ":" and close - 1 >= i + 2:
                name = pattern[i + 2:close - 1]
                if name not in _CLASSES:
                    raise _Unmatchable(pattern)  # git aborts the whole match on an unknown class
                parts.append(_CLASSES[name])
                i = close + 1
                continue
            # no ":]": the "[" is an ordinary member of the set
        if char == "\\":
            i += 1
            if i >= len(pattern):
                raise _Unmatchable(pattern)
            char = pattern[i]
        low = char
        i += 1
        if i + 1 < len(pattern) and pattern[i] == "-" and pattern[i + 1] != "]":
            high = pattern[i + 1]
            i += 2
            if high == "\\":
                if i >= len(pattern):
                    raise _Unmatchable(pattern)
                high = pattern[i]
                i += 1
            if high >= low:
                parts.append(f"{_in_class(low)}-{_in_class(high)}")
            continue
        parts.append(_in_class(low))
    body = "".join(parts)
    if negated:
        return f"[^/{body}]", i
    return (f"(?!/)[{body}]" if body else "(?!)"), i


def _in_class(char: str) -> str:
    return "\\" + char if char in "\\]^-[" else char


@dataclass(frozen=True)
class IgnoreFile:
    """One ignore file's rules, anchored at the folder its patterns are relative to."""

    prefix: str
    """The absolute path of that folder, as text, ending with a slash."""
    rules: tuple[Rule, ...]
    file_rules: tuple[Rule, ...]
    """The rules that can match a file (those without a trailing slash)."""
    _for_files: re.Pattern[str] | None
    _for_dirs: re.Pattern[str]

    @classmethod
    def from_text(cls, folder: str | Path, text: str) -> IgnoreFile | None:
        """The file's rules compiled (None when it has none)."""
        rules = parse_rules(text)
        if not rules:
            return None
        file_rules = tuple(rule for rule in rules if not rule.dir_only)
        prefix = str(folder).rstrip("/") + "/"
        return cls(prefix, rules, file_rules, _combined(file_rules), _combined(rules))

    def decide(self, rel: str, is_dir: bool) -> bool | None:
        """True: ignored; False: re-included (``!``); None: no line of this file matches ``rel``."""
        combined, rules = (self._for_dirs, self.rules) if is_dir else (self._for_files, self.file_rules)
        found = combined.fullmatch(rel) if combined is not None else None
        if found is None or found.lastindex is None:
            return None
        return not rules[len(rules) - found.lastindex].negated


def _combined(rules: tuple[Rule, ...]) -> re.Pattern[str]:
    """One expression trying the rules last to first: the group that matches names the deciding rule."""
    return re.compile("|".join(f"({rule.regex})" for rule in reversed(rules)) or "(?!)", re.DOTALL)


@dataclass(frozen=True)
class Ignores:
    """The ignore files in force in one folder: ``.gitignore`` files and exclude files, innermost first."""

    gitignores: tuple[IgnoreFile, ...] = ()
    excludes: tuple[IgnoreFile, ...] = ()

    def ignored(self, path: str, is_dir: bool) -> bool:
        """Whether the entry at ``path`` (absolute, as text) is ignored; ``is_dir`` false for a link.

        git judges a symbolic link as a file, whatever it points to: ``build/`` does not match one.
        """
        for ignore in (*self.gitignores, *self.excludes):
            if path.startswith(ignore.prefix):
                decided = ignore.decide(path[len(ignore.prefix):], is_dir)
                if decided is not None:
                    return decided
        return False

    def entering(self, workspace: Workspace, folder: str | Path) -> Ignores:
        """The ignore files in force inside ``folder``: these, with its ``.gitignore`` and exclude file."""
        own = _load(workspace, folder, IGNORE_FILE)
        exclude = _load(workspace, folder, EXCLUDE_FILE)
        if own is None and exclude is None:
            return self
        return Ignores((own, *self.gitignores) if own else self.gitignores,
                       (exclude, *self.excludes) if exclude else self.excludes)

    @classmethod
    def above(cls, workspace: Workspace, top: Path) -> Ignores:
        """The ignore files in force inside ``top``: those of ``top`` and of its folders up to its root."""
        ignores = cls()
        for folder in folders_down_to(workspace, top):
            ignores = ignores.entering(workspace, folder)
        return ignores


def folders_down_to(workspace: Workspace, top: Path) -> list[Path]:
    """The folders from the workspace root holding ``top`` down to ``top`` itself, outermost first."""
    roots = [root for root in workspace.roots if top == root or top.is_relative_to(root)]
    if not roots:
        return [top]
    root = max(roots, key=lambda r: len(r.parts))
    folders = [root]
    for part in top.relative_to(root).parts:
        folders.append(folders[-1] / part)
    return folders


def sources_above(workspace: Workspace, top: Path) -> list[tuple[Path, str]]:
    """The ignore files of the folders from ``top``'s root down to ``top``'s parent, for a tool that
    walks by itself (ripgrep) from ``top`` and must see the rules a walk from the root would.

    Each as (the folder its patterns are relative to, its text), lowest precedence first: the
    exclude files, then the ``.gitignore`` files from the root down.
    """
    excludes: list[tuple[Path, str]] = []
    ignores: list[tuple[Path, str]] = []
    for folder in folders_down_to(workspace, top)[:-1]:
        exclude = read_ignore_file(workspace, folder, EXCLUDE_FILE)
        if exclude is not None:
            excludes.append((folder, exclude))
        own = read_ignore_file(workspace, folder, IGNORE_FILE)
        if own is not None:
            ignores.append((folder, own))
    return [*excludes, *ignores]


def read_ignore_file(workspace: Workspace, folder: str | Path, name: str) -> str | None:
    """The text of ``folder/name`` when it is a regular file the workspace shows, reached through real
    folders only (no link anywhere below ``folder``); else None.

    A ``.git`` that is a file (a worktree's pointer) or a link leads outside the tree being walked.
    (Paths as text: a search checks thousands of folders, and ``Path`` objects would cost more than
    the reads.)
    """
    base = str(folder).rstrip("/")
    path = f"{base}/{name}"
    try:
        inner = base
        for part in name.split("/")[:-1]:
            inner = f"{inner}/{part}"
            if not stat.S_ISDIR(os.lstat(inner).st_mode):
                return None
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_IGNORE_FILE_BYTES:
            return None
        if not workspace.admits_walked(path):
            return None
        data = os.read(fd, MAX_IGNORE_FILE_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data.decode("utf-8", "surrogateescape")


def _load(workspace: Workspace, folder: str | Path, name: str) -> IgnoreFile | None:
    text = read_ignore_file(workspace, folder, name)
    return IgnoreFile.from_text(folder, text) if text is not None else None


class IgnoredPaths:
    """Whether a path below ``top`` is ignored — by its own rules or an ignored folder between it and ``top``.

    For checking paths another tool reported as it walked from ``top`` (ripgrep lets an include
    glob override the ignore files). ``top`` itself is not judged, as a walk from it does not
    judge it. Each folder's ignore files are read once and remembered for the instance's life
    (one call); paths are handled as text, which a search reporting thousands of files needs.
    """

    def __init__(self, workspace: Workspace, top: Path) -> None:
        self._workspace = workspace
        self._top = str(top)
        self._folders: dict[str, tuple[Ignores, bool]] = {}

    def ignored(self, path: str, is_dir: bool = False) -> bool:
        """``path`` (absolute, normalized, no link followed below ``top``) is ignored, or lies in an ignored folder."""
        ignores, folder_ignored = self._folder(path.rpartition("/")[0] or "/")
        return folder_ignored or ignores.ignored(path, is_dir)

    def _folder(self, folder: str) -> tuple[Ignores, bool]:
        known = self._folders.get(folder)
        if known is not None:
            return known
        if folder == self._top or not folder.startswith(self._top.rstrip("/") + "/"):
            known = (Ignores.above(self._workspace, Path(folder)), False)
        else:
            above, above_ignored = self._folder(folder.rpartition("/")[0] or "/")
            ignored = above_ignored or above.ignored(folder, True)
            known = (above if ignored else above.entering(self._workspace, folder), ignored)
        self._folders[folder] = known
        return known
