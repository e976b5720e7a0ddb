"""A git repository inside the workspace, verified before git reads anything of it.

:meth:`Repository.discover` asks a hardened git where the repository of a path is, then
refuses it unless its work tree, git directory and common directory (and any alternate object
store) all lie inside the workspace's roots: a ``gitdir:`` file or ``commondir`` pointer planted
in the project, or a repository above the root, would otherwise make codeward read (and show)
a repository the agent may not see. From then on every git it runs is pinned to that
repository (``GIT_DIR``/``GIT_WORK_TREE``), hardened (see :mod:`codeward.engines.git.runner`), and
has the repository's own driver commands (filters, textconv, external diff, merge drivers)
emptied.

Blacklisted files never appear: :meth:`Repository.pathspec` adds an exclude pathspec for every
secret glob of the workspace, and :meth:`Repository.diff` also drops any file section of the
output whose path the workspace blacklists (or that it cannot parse), so ``get_git_diff`` never
prints a secret's content whatever the revisions, the empty tree included.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from codeward.engines.git.diff_sections import withhold
from codeward.engines.git.runner import DRIVER_COMMANDS, TIMEOUT_SECONDS, GitOutput, run_git
from codeward.kernel.result import ErrorKind, Result
from codeward.kernel.workspace import HARD_BLACKLIST_NAMES, HARD_BLACKLIST_SUFFIX, Workspace

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


@dataclass(frozen=True)
class Repository:
    """A verified repository: where it is, and the workspace whose policy its reads obey."""

    workspace: Workspace
    top: Path
    """The work tree (resolved)."""
    git_dir: Path
    common_dir: Path
    root: Path
    """The workspace root that holds the work tree (blacklist globs are relative to it)."""
    driver_overrides: tuple[str, ...] = ()

    @classmethod
    def discover(cls, workspace: Workspace, path: Path) -> Result[Repository]:
        """The repository holding ``path`` (a resolved path inside the workspace), verified."""
        directory = path if path.is_dir() else path.parent
        asked = run_git(["rev-parse", "--show-toplevel", "--absolute-git-dir", "--git-common-dir"], directory)
        if not asked.ok:
            return asked.cast(None)  # type: ignore[arg-type]
        output = asked.data
        lines = output.stdout.splitlines()
        if output.returncode != 0 or len(lines) != 3:
            if "must be run in a work tree" in output.stderr:
                return Result.fail(ErrorKind.INVALID_INPUT, f"{workspace.display(directory)} is inside a git "
                                   "directory, not a work tree", "Pass a path in the checked-out files.", data=None)
            return Result.fail(ErrorKind.INVALID_INPUT, f"{workspace.display(directory)} is not inside a git "
                               "repository", "Run it on a path inside a git work tree (git init creates one).",
                               data=None)
        top, git_dir = Path(lines[0]).resolve(), Path(lines[1]).resolve()
        common = Path(lines[2])
        common_dir = (common if common.is_absolute() else directory / common).resolve()
        for what, place in (("work tree", top), ("git directory", git_dir), ("common git directory", common_dir),
                            *(("alternate object store", alt) for alt in alternates(common_dir))):
            if not workspace.contains(place):
                return Result.fail(
                    ErrorKind.PERMISSION,
                    f"the repository of {workspace.display(directory)} has its {what} at {place}, outside the "
                    "workspace; codeward reads only repositories that lie wholly inside the roots",
                    "A .git file (gitdir:), a commondir or alternates pointer, or a repository above the root "
                    "leads there. Serve the repository's top folder as a root, or remove the pointer.",
                    data=None)
        root = next(r for r in (workspace.primary, *workspace.roots) if top == r or top.is_relative_to(r)) \
            if any(top == r or top.is_relative_to(r) for r in workspace.roots) else top
        found = cls(workspace, top, git_dir, common_dir, root)
        listed = found.run(["config", "--name-only", "--get-regexp", r"^(filter|diff|merge)\."], drivers=False)
        if not listed.ok:
            return listed.cast(None)  # type: ignore[arg-type]
        overrides: list[str] = []
        for key in dict.fromkeys(listed.data.stdout.split()):
            if DRIVER_COMMANDS.match(key):
                overrides += ["-c", f"{key}="]
            if key.lower().startswith("filter.") and key.lower().endswith(".clean"):
                overrides += ["-c", f"{key[:-len('.clean')]}.required=false"]
        return Result.success(cls(workspace, top, git_dir, common_dir, root, tuple(overrides)))

    # -- running git -------------------------------------------------------------------------

    def run(self, args: Sequence[str], *, timeout: float = TIMEOUT_SECONDS, drivers: bool = True,
            stdin: bytes | None = None) -> Result[GitOutput]:
        """``git args`` in this repository, hardened and pinned; ``drivers=False`` only to list them."""
        return run_git(args, self.top, config=self.driver_overrides if drivers else (), git_dir=self.git_dir,
                       work_tree=self.top, timeout=timeout, stdin=stdin)

    def relative(self, path: Path) -> str:
        """``path`` relative to the work tree ('.' for the top), as pathspecs and output name it."""
        return "." if path == self.top else path.relative_to(self.top).as_posix()

    def protected_pathspec(self) -> list[str]:
        """Exclude pathspecs for every name the workspace blacklists (its globs and the hard names)."""
        prefix = "" if self.top == self.root else self.top.relative_to(self.root).as_posix() + "/"
        specs: list[str] = []
        globs = [*self.workspace.blacklist_globs, *sorted(HARD_BLACKLIST_NAMES), f"*{HARD_BLACKLIST_SUFFIX}"]
        for glob in globs:
            for pattern in _repo_patterns(glob, prefix):
                specs.append(f":(top,exclude,glob,icase){pattern}")
        return specs

    def pathspec(self, path: Path) -> list[str]:
        """``--`` then ``path`` (literally) and the excludes: what every listing or diff should end with."""
        rel = self.relative(path)
        chosen = ":(top)" if rel == "." else f":(top,literal){rel}"
        return ["--", chosen, *self.protected_pathspec()]

    def tree(self, revision: str, param: str = "revision") -> Result[str]:
        """The tree a revision names (a commit's or a tree's): a blob or anything else is refused."""
        if revision == EMPTY_TREE:
            return Result.success(EMPTY_TREE)
        ran = self.run(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{revision}^{{tree}}"])
        if not ran.ok:
            return ran.cast("")
        if ran.data.returncode != 0:
            return Result.fail(ErrorKind.NOT_FOUND, f"git does not know {param} {revision!r} as a commit or tree",
                               "List revisions with `git log --oneline` or `git branch -a`; HEAD is the last "
                               "commit.", data="")
        return Result.success(ran.data.stdout.strip())

    def diff(self, path: Path, base: str, head: str, context: int = 3) -> Result[str]:
        """The unified diff of ``path`` from ``base`` to ``head`` (empty: the work tree; base empty: the index).

        Revisions are resolved to trees first (a blob id would make git print that blob), and
        blacklisted files are excluded and, should any slip through, withheld from the output.
        """
        revisions: list[str] = []
        for param, value in (("base_rev", base), ("head_rev", head)):
            if value:
                tree = self.tree(value, param)
                if not tree.ok:
                    return tree
                revisions.append(tree.data)
        args = ["diff", "--no-ext-diff", "--no-textconv", "--no-color", "--no-relative", "--src-prefix=a/",
                "--dst-prefix=b/", f"--unified={context}", *revisions,
                *self.pathspec(path)]
        ran = self.run(args)
        if not ran.ok:
            return ran.cast("")
        if ran.data.returncode != 0:
            return Result.fail(ErrorKind.INTERNAL, f"git diff failed: {ran.data.first_error_line()}", data="")
        kept, withheld = withhold(ran.data.stdout, self._is_protected)
        notes = [f"[{withheld} protected file(s) left out]"] if withheld else []
        return Result(data=kept, notes=notes)

    def protected(self, rel: str) -> bool:
        """Whether a path git printed (relative to the top) must be left out of an answer."""
        return self._is_protected(rel)

    def _is_protected(self, rel: str) -> bool:
        """Whether a path as git prints it (relative to the top) is blacklisted or unusable."""
        if not rel or rel.startswith("/") or ".." in rel.split("/"):
            return True
        path = self.top / rel
        return bool(self.workspace.blacklist_reason(path))


def _repo_patterns(glob: str, prefix: str) -> list[str]:
    """A gitignore-style glob (relative to the root) as glob pathspecs relative to the repository top."""
    if glob.startswith("!") or not glob.strip():
        return []  # a negation only narrows the blacklist: excluding more is the safe side
    body = glob.strip().rstrip("/")
    anchored = "/" in body.lstrip("/") or body.startswith("/")
    body = body.lstrip("/")
    if anchored:
        if prefix:
            if not body.startswith(prefix):
                return []
            body = body[len(prefix):]
        return [body, f"{body}/**"]
    return [f"**/{body}", f"**/{body}/**"]


def alternates(common_dir: Path) -> list[Path]:
    """Object stores the repository borrows from (``objects/info/alternates``), resolved."""
    objects = common_dir / "objects"
    try:
        text = (objects / "info" / "alternates").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    found = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            found.append((objects / line).resolve() if not line.startswith("/") else Path(line).resolve())
    return found
