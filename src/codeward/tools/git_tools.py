"""Git for the agent: status, log, show and blame, and a commit only a person approves — all through
codeward's hardened git.

Every tool here reads through :class:`codeward.engines.git.Repository`: the repository is verified to
lie inside the roots, git runs with nothing the repository or the machine configures that
would start a program (hooks, fsmonitor, filters, textconv, pagers...), and blacklisted files
are excluded from every pathspec and checked again in every answer — a secret's name or
content never appears in a status, a log, a diff or a blame, and is never committed.
``git_commit`` is marked ``ask_always``: every approval layer asks a person whatever it would
auto-approve, and without one the tool asks the client's user itself (elicitation) or refuses.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from codeward.approval.consent import person_refuses
from codeward.engines.files.textfile import read_text
from codeward.engines.git import EMPTY_TREE, Repository, check_revision
from codeward.engines.git.blame import check_content, content_lines, read_blame
from codeward.engines.git.commit import commit as commit_paths
from codeward.engines.git.commit import identity, pending, preview_diff
from codeward.engines.git.log import Commit, read_commit, read_log
from codeward.engines.git.status import StatusEntry, read_status
from codeward.kernel.catalog import tool
from codeward.kernel.content import displayable
from codeward.kernel.context import ToolContext
from codeward.kernel.result import ErrorKind, Result
from codeward.kernel.workspace import Access

TOOLSET = "git"
MAX_BLAME_LINES = 2_000



# -- output models -----------------------------------------------------------------------------


class StatusItem(BaseModel):
    path: str
    kind: Literal["changed", "renamed", "unmerged", "untracked", "ignored"]
    staged: str = Field(description="The change in the index (what a commit would take): modified, added, "
                                    "deleted, renamed...; empty when none.")
    unstaged: str = Field(description="The change in the work tree not yet staged; empty when none.")
    from_path: str = ""


class GitStatusReport(BaseModel):
    repository: str
    branch: str
    commit: str
    upstream: str
    ahead: int
    behind: int
    clean: bool
    total: int
    items: list[StatusItem]
    withheld: int = Field(description="Protected files (secrets, blacklisted names) left out.")

    def render(self) -> str:
        where = self.branch + (f"...{self.upstream} (ahead {self.ahead}, behind {self.behind})"
                               if self.upstream else "")
        lines = [f"{self.repository}: on {where} at {self.commit[:12] or '(no commits yet)'}"]
        if self.clean:
            lines.append("nothing to commit, working tree clean")
        for item in self.items:
            if item.kind in ("untracked", "ignored"):
                lines.append(f"  {item.kind:<9} {item.path}")
                continue
            states = ", ".join(filter(None, [f"staged: {item.staged}" if item.staged else "",
                                             f"not staged: {item.unstaged}" if item.unstaged else ""]))
            moved = f" (from {item.from_path})" if item.from_path else ""
            lines.append(f"  {item.path}{moved}: {states}")
        if self.total > len(self.items):
            lines.append(f"[... {self.total - len(self.items)} more paths; narrow path or raise max_entries]")
        if self.withheld:
            lines.append(f"[{self.withheld} protected path(s) left out]")
        return "\n".join(lines)


class FileChange(BaseModel):
    status: str
    path: str
    from_path: str = ""


class CommitInfo(BaseModel):
    hash: str
    short: str
    author: str
    email: str
    date: str
    parents: list[str]
    subject: str
    body: str
    files: list[FileChange] = Field(default_factory=list)
    files_withheld: int = 0

    @classmethod
    def of(cls, commit: Commit, workspace_prefix: str) -> CommitInfo:
        return cls(hash=commit.hash, short=commit.short, author=displayable(commit.author),
                   email=displayable(commit.email), date=commit.date, parents=commit.parents,
                   subject=displayable(commit.subject), body=displayable(commit.body),
                   files=[FileChange(status=f.status, path=displayable(workspace_prefix + f.path),
                                     from_path=displayable(workspace_prefix + f.from_path) if f.from_path else "")
                          for f in commit.files],
                   files_withheld=commit.files_withheld)

    def header(self) -> str:
        return f"{self.short} {self.date[:10]} {self.author}: {self.subject}"


class GitLogReport(BaseModel):
    revision: str
    path: str
    skip: int
    commits: list[CommitInfo]
    more: bool = Field(description="More commits follow: call again with skip=skip+len(commits).")

    def render(self) -> str:
        if not self.commits:
            return f"no commits of {self.path} in {self.revision}" + (f" after skipping {self.skip}" if self.skip
                                                                      else "")
        lines: list[str] = []
        for commit in self.commits:
            lines.append(commit.header())
            for change in commit.files:
                moved = f" (from {change.from_path})" if change.from_path else ""
                lines.append(f"    {change.status:<9} {change.path}{moved}")
            if commit.files_withheld:
                lines.append(f"    [{commit.files_withheld} protected file(s) left out]")
        if self.more:
            lines.append(f"[more: call again with skip={self.skip + len(self.commits)}]")
        return "\n".join(lines)


class BlameEntry(BaseModel):
    line: int
    commit: str = Field(description="Short hash of the commit that last changed the line; empty when the "
                                    "line is not committed yet.")
    author: str
    date: str
    summary: str
    text: str


class GitBlameReport(BaseModel):
    path: str
    revision: str
    start_line: int
    end_line: int
    total_lines: int
    lines: list[BlameEntry]

    def render(self) -> str:
        width = len(str(self.end_line))
        rows = [f"{self.path} lines {self.start_line}-{self.end_line} of {self.total_lines}"
                + (f" at {self.revision}" if self.revision else "")]
        for entry in self.lines:
            who = f"{entry.commit or '(uncommitted)':<12} {entry.date:<10} {entry.author[:20]:<20}"
            rows.append(f"{who} {entry.line:>{width}}| {entry.text}")
        if self.end_line < self.total_lines:
            rows.append(f"[... lines {self.end_line + 1}-{self.total_lines}: call again with "
                        f"start_line={self.end_line + 1}]")
        return "\n".join(rows)


# -- tools -------------------------------------------------------------------------------------


@tool(toolset=TOOLSET, read_only=True, title="Git status", output=GitStatusReport, examples=[{"path": "."}])
def git_status(
    ctx: ToolContext,
    path: str = ".",
    untracked: bool = True,
    max_entries: Annotated[int, Field(ge=1, le=5000)] = 300,
) -> Result[GitStatusReport | None]:
    """The git status of the work tree (or of a path in it): branch, how far ahead of or behind its upstream,
    and each staged, changed, renamed, conflicted or untracked path."""
    found = _repository(ctx, path)
    if not found.ok:
        return found.cast(None)
    repository, resolved = found.data
    read = read_status(repository, resolved, untracked)
    if not read.ok:
        return read.cast(None)
    status = read.data
    prefix = _prefix(ctx, repository)
    items = [_item(entry, prefix) for entry in status.entries]
    return Result.success(GitStatusReport(
        repository=ctx.workspace.display(repository.top), branch=status.branch, commit=status.commit,
        upstream=status.upstream, ahead=status.ahead, behind=status.behind,
        clean=not status.entries and not status.withheld, total=len(items), items=items[:max_entries],
        withheld=status.withheld))


@tool(toolset=TOOLSET, read_only=True, title="Git log", output=GitLogReport,
      examples=[{"path": "src", "limit": 10}, {"revision": "main..HEAD", "files": True}])
def git_log(
    ctx: ToolContext,
    path: Annotated[str, Field(description="Only commits changing it.")] = ".",
    revision: Annotated[str, Field(description="A commit, or a range: main..HEAD.")] = "HEAD",
    limit: Annotated[int, Field(ge=1, le=500)] = 20,
    skip: Annotated[int, Field(ge=0)] = 0,
    files: Annotated[bool, Field(description="List each commit's changed files.")] = False,
    author: Annotated[str, Field(max_length=200, description="A regex.")] = "",
    grep: Annotated[str, Field(max_length=200, description="A regex the message matches (any case).")] = "",
) -> Result[GitLogReport | None]:
    """Commit history, newest first: hash, date, author, subject; skip pages on."""
    found = _repository(ctx, path, must_exist=False)
    if not found.ok:
        return found.cast(None)
    repository, resolved = found.data
    checked = check_revision(revision, "revision")
    if not checked.ok:
        return checked.cast(None)
    for name, value in (("author", author), ("grep", grep)):
        if "\n" in value or "\0" in value:
            return Result.fail(ErrorKind.INVALID_INPUT, f"{name} holds a newline or NUL",
                               "Give one regular expression on one line.")
    read = read_log(repository, resolved, checked.data, limit=limit, skip=skip, files=files, author=author,
                    grep=grep)
    if not read.ok:
        return read.cast(None)
    commits, more = read.data
    prefix = _prefix(ctx, repository)
    return Result.success(GitLogReport(revision=checked.data, path=ctx.workspace.display(resolved), skip=skip,
                                       commits=[CommitInfo.of(c, prefix) for c in commits], more=more))


@tool(toolset=TOOLSET, read_only=True, title="Git show", examples=[{"revision": "HEAD"},
                                                                    {"revision": "HEAD", "path": "src"}])
def git_show(
    ctx: ToolContext,
    revision: str = "HEAD",
    path: Annotated[str, Field(description="Only its changes.")] = ".",
    context_lines: Annotated[int, Field(ge=0, le=50)] = 3,
) -> Result[str]:
    """One commit: hash, author, date, whole message, and its diff (a merge's: against its first parent)."""
    found = _repository(ctx, path, must_exist=False)
    if not found.ok:
        return found.cast("")
    repository, resolved = found.data
    checked = check_revision(revision, "revision")
    if not checked.ok:
        return checked
    if ".." in checked.data:
        return Result.fail(ErrorKind.INVALID_INPUT, f"revision {revision!r} is a range; git_show shows one commit",
                           "Use git_log for a range, or get_git_diff(base_rev=..., head_rev=...) for its diff.")
    read = read_commit(repository, checked.data)
    if not read.ok:
        return read.cast("")
    commit = CommitInfo.of(read.data, "")
    parent = commit.parents[0] if commit.parents else EMPTY_TREE
    diff = repository.diff(resolved, parent, commit.hash, context_lines)
    if not diff.ok:
        return diff
    lines = [f"commit {commit.hash}"]
    if len(commit.parents) > 1:
        lines.append("merge: " + " ".join(p[:12] for p in commit.parents) + " (the diff is against the first)")
    lines += [f"author {commit.author} <{commit.email}>", f"date   {commit.date}", "", f"    {commit.subject}"]
    if commit.body:
        lines += ["", *(f"    {line}" for line in commit.body.splitlines())]
    shown = ctx.workspace.display(resolved)
    lines += ["", displayable(diff.data) if diff.data.strip() else
              f"(no changes to {shown} in this commit)" if shown != "." else "(no changes)"]
    return Result(data="\n".join(lines).rstrip() + "\n", notes=diff.notes)


@tool(toolset=TOOLSET, read_only=True, title="Git blame", output=GitBlameReport,
      examples=[{"path": "src/inventory/store.py", "start_line": 10, "end_line": 40}])
def git_blame(
    ctx: ToolContext,
    path: str,
    start_line: Annotated[int, Field(ge=1)] = 1,
    end_line: Annotated[int, Field(ge=0, description=f"0: the end (at most {MAX_BLAME_LINES} lines a call).")] = 0,
    revision: Annotated[str, Field(description="'': the file on disk.")] = "",
) -> Result[GitBlameReport | None]:
    """Who last changed each line of a file, and in which commit (hash, date, author, subject)."""
    found = _repository(ctx, path, must_exist=not revision.strip())
    if not found.ok:
        return found.cast(None)
    repository, resolved = found.data
    display = ctx.workspace.display(resolved)
    rel = repository.relative(resolved)
    if revision.strip():
        checked = check_revision(revision, "revision")
        if not checked.ok:
            return checked.cast(None)
        if ".." in checked.data:
            return Result.fail(ErrorKind.INVALID_INPUT, f"revision {revision!r} is a range; blame reads one commit",
                               "Give one commit, e.g. HEAD~3 or a hash.")
        commit = read_commit(repository, checked.data)
        if not commit.ok:
            return commit.cast(None)
        revision = commit.data.hash
        counted = check_content(repository, revision, rel)
    else:
        if resolved.is_dir():
            return Result.fail(ErrorKind.INVALID_INPUT, f"{display} is a folder; blame reads one file",
                               "Give a file path, e.g. src/app.py.")
        text = read_text(resolved, display, ctx.workspace)
        counted = content_lines(text.data.text, display) if text.ok else text.cast(0)
    if not counted.ok:
        return counted.cast(None)
    total = counted.data
    if total == 0:
        return Result.fail(ErrorKind.INVALID_INPUT, f"{display} is empty; there is nothing to blame",
                           "Blame a file with content.")
    if start_line > total:
        return Result.fail(ErrorKind.INVALID_INPUT, f"start_line {start_line} is past the end of {display} "
                           f"({total} lines)", f"Give start_line between 1 and {total}.")
    if end_line and end_line < start_line:
        return Result.fail(ErrorKind.INVALID_INPUT, f"end_line {end_line} is before start_line {start_line}",
                           "Give end_line >= start_line, or 0 for the end of the file.")
    last = min(end_line or total, total, start_line + MAX_BLAME_LINES - 1)
    blamed = read_blame(repository, rel, revision, start_line, last)
    if not blamed.ok:
        return blamed.cast(None)
    entries = [BlameEntry(line=b.line, commit=b.commit, author=displayable(b.author), date=b.date,
                          summary=displayable(b.summary), text=displayable(b.text)) for b in blamed.data]
    return Result.success(GitBlameReport(path=display, revision=revision, start_line=start_line, end_line=last,
                                         total_lines=total, lines=entries))


# -- helpers -----------------------------------------------------------------------------------


def _repository(ctx: ToolContext, path: str, *, must_exist: bool = True) -> Result[tuple[Repository, Path]]:
    """The verified repository holding ``path``; a path that no longer exists (a deleted file's history)
    is found from its nearest existing folder when ``must_exist`` is false."""
    resolved = ctx.workspace.resolve(path, Access.READ)
    if not resolved.ok:
        return resolved.cast(None)  # type: ignore[arg-type]
    anchor = resolved.data
    if not anchor.exists():
        if must_exist:
            return Result.fail(ErrorKind.NOT_FOUND, f"{path!r} does not exist",
                               "Check the path with list_directory (to blame a deleted file, give the revision "
                               "that still has it).", data=None)
        while not anchor.exists() and anchor != anchor.parent and ctx.workspace.contains(anchor.parent):
            anchor = anchor.parent
    repository = Repository.discover(ctx.workspace, anchor)
    if not repository.ok:
        return repository.cast(None)  # type: ignore[arg-type]
    if not (resolved.data == repository.data.top or resolved.data.is_relative_to(repository.data.top)):
        return Result.fail(ErrorKind.INVALID_INPUT, f"{path!r} is not inside the repository at "
                           f"{ctx.workspace.display(repository.data.top)}", "Give a path inside the work tree.",
                           data=None)
    return Result.success((repository.data, resolved.data))


def _prefix(ctx: ToolContext, repository: Repository) -> str:
    """What turns a path relative to the repository's top into one as the workspace shows it."""
    top = ctx.workspace.display(repository.top)
    return "" if top in (".", "") else top.rstrip("/") + "/"


def _item(entry: StatusEntry, prefix: str) -> StatusItem:
    kind: Literal["changed", "renamed", "unmerged", "untracked", "ignored"] = entry.kind  # type: ignore[assignment]
    return StatusItem(path=displayable(prefix + entry.path), kind=kind, staged=entry.staged, unstaged=entry.unstaged,
                      from_path=displayable(prefix + entry.from_path) if entry.from_path else "")


# -- committing --------------------------------------------------------------------------------


class CommitReport(BaseModel):
    commit: str
    branch: str
    message: str
    files: list[FileChange]
    files_withheld: int = 0

    def render(self) -> str:
        lines = [f"committed {self.commit[:12]} on {self.branch}: {self.message.splitlines()[0]}"]
        lines += [f"    {f.status:<9} {f.path}" + (f" (from {f.from_path})" if f.from_path else "") for f in self.files]
        if self.files_withheld:
            lines.append(f"    [{self.files_withheld} protected file(s) not listed]")
        return "\n".join(lines)


def _commit_plan(ctx: ToolContext, paths: list[str], message: str
                 ) -> Result[tuple[Repository, list[Path], list[StatusEntry]]]:
    """The repository and resolved paths of a commit, and what it would take — or why it cannot be made."""
    if not message.strip():
        return Result.fail(ErrorKind.INVALID_INPUT, "message is empty", "Say what the commit changes and why.",
                           data=None)
    if "\0" in message:
        return Result.fail(ErrorKind.INVALID_INPUT, "message holds a NUL character", "Remove it.", data=None)
    if not paths:
        return Result.fail(ErrorKind.INVALID_INPUT, "paths is empty; git_commit commits the files it is given",
                           "Name the files or folders to commit, e.g. paths=['src/app.py'] (git_status lists "
                           "the changed ones).", data=None)
    repository: Repository | None = None
    resolved: list[Path] = []
    for raw in paths:
        found = _repository(ctx, raw, must_exist=False)
        if not found.ok:
            return found.cast(None)  # type: ignore[arg-type]
        here, path = found.data
        if ".git" in path.relative_to(here.top).parts or path == here.git_dir or path.is_relative_to(here.git_dir):
            return Result.fail(ErrorKind.PERMISSION, f"{raw!r} is inside git's own folder", "Commit work-tree "
                               "files, not .git contents.", data=None)
        if repository is not None and here.top != repository.top:
            return Result.fail(ErrorKind.INVALID_INPUT, f"{raw!r} is in another repository "
                               f"({ctx.workspace.display(here.top)}) than {paths[0]!r}",
                               "Commit each repository's files in a call of its own.", data=None)
        repository = here
        resolved.append(path)
    assert repository is not None
    entries = pending(repository, resolved)
    if not entries.ok:
        return entries.cast(None)  # type: ignore[arg-type]
    if not entries.data:
        return Result.fail(ErrorKind.INVALID_INPUT, "nothing to commit: " + ", ".join(map(repr, paths))
                           + " have no changes git can see (protected files are never committed)",
                           "git_status lists the changed paths.", data=None)
    conflicted = [e.path for e in entries.data if e.kind == "unmerged"]
    if conflicted:
        return Result.fail(ErrorKind.CONFLICT, "unresolved merge conflicts in " + ", ".join(conflicted[:10]),
                           "Resolve the conflicts (edit the files) first.", data=None)
    return Result.success((repository, resolved, entries.data))


def _commit_preview(arguments: Mapping[str, Any], ctx: ToolContext) -> str | None:
    """The diff a git_commit call would record (what its approval prompt shows)."""
    paths, message = arguments.get("paths"), arguments.get("message")
    if not isinstance(paths, list) or not isinstance(message, str) or not all(isinstance(p, str) for p in paths):
        return None
    plan = _commit_plan(ctx, list(paths), message)
    if not plan.ok:
        return None
    repository, resolved, entries = plan.data
    header = f"git commit -m {message.strip().splitlines()[0]!r} -- " + " ".join(paths) + "\n\n"
    return header + preview_diff(repository, resolved, entries)


@tool(toolset=TOOLSET, destructive=False, title="Git commit", output=CommitReport, write_paths=(),
      ask_always=True, preview=_commit_preview,
      examples=[{"paths": ["src/inventory/store.py"], "message": "Reorder at two items left"}])
def git_commit(
    ctx: ToolContext,
    paths: Annotated[list[str], Field(max_length=500, description="Files or folders, with their additions, "
                                                                  "changes and deletions.")],
    message: Annotated[str, Field(max_length=20_000)],
) -> Result[CommitReport | None]:
    """Commit these paths only (nothing else staged goes in), after a person approves the diff; runs no hooks."""
    plan = _commit_plan(ctx, paths, message)
    if not plan.ok:
        return plan.cast(None)
    repository, resolved, entries = plan.data
    if not ctx.call.approved and not _approved_by_client(ctx, paths, message, preview_diff(repository, resolved,
                                                                                      entries)):
        return Result.fail(ErrorKind.PERMISSION, "git_commit needs a person's approval, and none was given",
                           "Ask the user to approve the commit when prompted (codeward chat, the control console, "
                           "an MCP client that supports elicitation), or to commit it themselves.")
    author = identity(repository)
    if not author.ok:
        return author.cast(None)
    done = commit_paths(repository, resolved, message, author.data)
    if not done.ok:
        return done.cast(None)
    prefix = _prefix(ctx, repository)
    return Result.success(CommitReport(
        commit=done.data.commit, branch=done.data.branch, message=message.strip(),
        files=[FileChange(status=f.status, path=displayable(prefix + f.path),
                          from_path=displayable(prefix + f.from_path) if f.from_path else "") for f in done.data.files],
        files_withheld=done.data.withheld))


def _approved_by_client(ctx: ToolContext, paths: list[str], message: str, diff: str) -> bool:
    """Ask the client's user (MCP elicitation) to approve the commit; False when no one can be asked."""
    shown = diff if len(diff) <= 8_000 else diff[:8_000] + f"\n[... {len(diff) - 8_000:,} more characters]\n"
    text = (f"codeward: commit {', '.join(paths)} with the message:\n\n{message.strip()}\n\n"
            f"the change it would record:\n{shown}")
    return person_refuses(ctx, text, field="commit", title="Commit") is None
