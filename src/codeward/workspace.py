"""The filesystem gate every path argument of every tool goes through.

Three layers, as in the seed, but held in an immutable object instead of module globals so
that two sessions with different roots can run side by side in one process:

1. **Allowlist** — explicit files plus base directories (the roots); the first root is the
   primary one, against which relative paths are resolved.
2. **Validation** — a hard blacklist of names no tool may touch (conversation history,
   configuration, credentials), configurable globs with safe defaults (keys, ``.env``), and
   no writes inside ``.git/``.
3. **Resolution** — relative paths are joined to the primary root, symlinks are resolved
   *before* any check, and whatever lands outside the allowlist is refused. Listings,
   searches and trees use :meth:`Workspace.visible` so that entries resolving outside never
   show up at all.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property
from pathlib import Path

import pathspec

from codeward.result import ErrorKind, Result

HARD_BLACKLIST_NAMES = frozenset({"history.toml", "config.toml", "credentials.toml"})
HARD_BLACKLIST_SUFFIX = "_history.toml"
DEFAULT_BLACKLIST_GLOBS: tuple[str, ...] = (
    ".env",
    ".env.*",
    "*.pem",
    "*.key",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".netrc",
    ".pgpass",
)
MAX_PATH_CHARS = 4096
MAX_COMPONENT_BYTES = 255
_DRIVE = re.compile(r"^[A-Za-z]:")
_HFS_IGNORED = re.compile("[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]")
"""Code points macOS (HFS+) drops from names, so that '.g\u200cit' is '.git' there (as git checks)."""


class Access(StrEnum):
    """Why a path is being resolved; writes are checked more strictly than reads."""

    READ = "read"
    WRITE = "write"


@dataclass(frozen=True)
class Workspace:
    """An immutable security policy: which paths tools may read and write.

    Build one with :meth:`create`; derive a narrowed one with :meth:`with_files`. Every
    method is pure, so one instance can be shared across threads and tasks.
    """

    roots: tuple[Path, ...]
    allowed_files: frozenset[Path] = frozenset()
    blacklist_globs: tuple[str, ...] = DEFAULT_BLACKLIST_GLOBS
    anchor: Path | None = None
    """Where relative paths start when that is not the first root (a session narrowed to files)."""

    @classmethod
    def create(
        cls,
        roots: Sequence[str | Path],
        *,
        files: Iterable[str | Path] = (),
        extra_blacklist: Iterable[str] = (),
        blacklist: Sequence[str] = DEFAULT_BLACKLIST_GLOBS,
    ) -> Workspace:
        """A workspace over ``roots`` (the first is primary); raises ``ValueError`` for a bad root."""
        resolved: list[Path] = []
        for root in roots or [Path.cwd()]:
            path = Path(root).expanduser().resolve()
            if not path.is_dir():
                raise ValueError(f"root {str(root)!r} is not a directory; pass an existing directory")
            if path not in resolved:
                resolved.append(path)
        allowed = frozenset(Path(f).expanduser().resolve() for f in files)
        return cls(tuple(resolved), allowed, tuple(blacklist) + tuple(extra_blacklist))

    def with_files(self, files: Iterable[str | Path], base_dirs: Sequence[str | Path] | None = None) -> Workspace:
        """Layer 1 rebuilt: the given tracked files plus base directories (default: these roots).

        With ``base_dirs=[]`` only the files are allowed; relative paths still start at this
        workspace's primary root.
        """
        if base_dirs is None:
            return Workspace.create(self.roots, files=files, blacklist=self.blacklist_globs)
        dirs = tuple(Path(d).expanduser().resolve() for d in base_dirs)
        allowed = frozenset(Path(f).expanduser().resolve() for f in files)
        return Workspace(dirs, allowed, self.blacklist_globs, anchor=self.primary)

    def with_roots(self, roots: Sequence[str | Path]) -> Workspace:
        """The same policy over other roots (e.g. after the client's roots changed)."""
        return Workspace.create(roots, files=self.allowed_files, blacklist=self.blacklist_globs)

    @property
    def primary(self) -> Path:
        return self.anchor or self.roots[0]

    @cached_property
    def _blacklist_spec(self) -> pathspec.PathSpec:  # type: ignore[type-arg]
        return pathspec.PathSpec.from_lines("gitignore", self.blacklist_globs)

    @cached_property
    def _folded_blacklist_spec(self) -> pathspec.PathSpec:  # type: ignore[type-arg]
        """The globs case-folded: on macOS and Windows '.ENV' opens '.env'."""
        return pathspec.PathSpec.from_lines("gitignore", [glob.casefold() for glob in self.blacklist_globs])

    # -- layer 3: resolution -------------------------------------------------------------

    def resolve(self, raw: object, access: Access = Access.READ, *, param: str = "path") -> Result[Path]:
        """Resolve a path argument and check it against every layer.

        Returns the real, symlink-free absolute path, or a typed error whose message names
        the argument, the problem and the fix. Nothing is read or written here.
        """
        checked = self._check_syntax(raw, param)
        if not checked.ok:
            return checked.cast(self.primary)
        text = checked.data
        candidate = Path(text) if os.path.isabs(text) else self.primary / text
        lexical = Path(os.path.normpath(candidate))
        try:
            real = candidate.resolve()
        except RuntimeError:
            real = lexical
        except OSError as exc:
            return Result.fail(ErrorKind.INVALID_INPUT, f"{param} {text!r} cannot be resolved: {exc.strerror}",
                               data=self.primary)
        if real.is_symlink() or _has_symlink_loop(real):
            return Result.fail(
                ErrorKind.INVALID_INPUT,
                f"{param} {text!r} is a symlink loop",
                "Remove or fix the looping symlink, or use another path.",
                data=self.primary,
            )
        if not self.contains(real):
            through_link = real != lexical and self.contains(lexical)
            why = "points outside the workspace through a symlink" if through_link else "is outside the workspace"
            return Result.fail(
                ErrorKind.PERMISSION,
                f"{param} {text!r} {why}",
                f"Use a path under {self._roots_text()}.",
                data=self.primary,
            )
        for path in (lexical, real):
            reason = self.blacklist_reason(path)
            if reason:
                return Result.fail(ErrorKind.PERMISSION, f"{param} {text!r} is {reason}",
                                   "These files are never readable or writable by tools.", data=self.primary)
        if access is Access.WRITE and self._inside_git_dir(real):
            return Result.fail(
                ErrorKind.PERMISSION,
                f"{param} {text!r} is inside a .git/ directory; tools may not write there",
                "Change the repository through git commands instead.",
                data=self.primary,
            )
        return Result.success(real)

    def _check_syntax(self, raw: object, param: str) -> Result[str]:
        if not isinstance(raw, str):
            return Result.fail(ErrorKind.INVALID_INPUT, f"{param} must be a string, got {type(raw).__name__}",
                               data="")
        if not raw.strip():
            return Result.fail(ErrorKind.INVALID_INPUT, f"{param} is empty",
                               "Give a path relative to the root, e.g. 'src/main.py', or '.' for the root.",
                               data="")
        if "\x00" in raw:
            return Result.fail(ErrorKind.INVALID_INPUT, f"{param} contains a NUL byte",
                               "Remove the NUL character from the path.", data="")
        try:
            os.fsencode(raw)
        except UnicodeEncodeError:
            return Result.fail(ErrorKind.INVALID_INPUT,
                               f"{param} contains a lone UTF-16 surrogate, which no file name has",
                               "Write the path in plain Unicode text (valid UTF-8).", data="")
        if len(raw) > MAX_PATH_CHARS:
            return Result.fail(ErrorKind.INVALID_INPUT,
                               f"{param} is {len(raw)} characters long; the limit is {MAX_PATH_CHARS}",
                               "Use a shorter path.", data="")
        if raw.startswith("~"):
            return Result.fail(ErrorKind.INVALID_INPUT, f"{param} {raw!r} starts with '~', which is not expanded",
                               f"Give a path relative to the root {self.primary}.", data="")
        text = raw.replace("\\", "/")
        if _DRIVE.match(text) or text.startswith("//"):
            return Result.fail(ErrorKind.INVALID_INPUT, f"{param} {raw!r} is a Windows drive or UNC path",
                               "Use a POSIX path relative to the root, with '/' separators.", data="")
        for part in text.split("/"):
            if len(part.encode("utf-8", "surrogatepass")) > MAX_COMPONENT_BYTES:
                return Result.fail(ErrorKind.INVALID_INPUT,
                                   f"{param} has a component longer than {MAX_COMPONENT_BYTES} bytes",
                                   "Use shorter file and folder names.", data="")
        folded = unicodedata.normalize("NFKC", text)
        if folded != text and _structure(folded) != _structure(text):
            return Result.fail(
                ErrorKind.INVALID_INPUT,
                f"{param} {raw!r} contains Unicode look-alikes of '/' or '.'",
                "Write the path with plain ASCII separators and dots.",
                data="",
            )
        return Result.success(text)

    # -- layer 2: validation ------------------------------------------------------------

    def contains(self, real: Path) -> bool:
        """True when a resolved path is an allowed file or lies under a root."""
        return real in self.allowed_files or any(real == root or real.is_relative_to(root) for root in self.roots)

    def blacklist_reason(self, path: Path) -> str:
        """Why a path is blacklisted ("" when it is not)."""
        name = unicodedata.normalize("NFKC", path.name).casefold()
        if name in HARD_BLACKLIST_NAMES or name.endswith(HARD_BLACKLIST_SUFFIX):
            return f"a protected file ({path.name}: history, configuration and credentials are off limits)"
        rel = self._relative(path)
        if rel:
            rel = unicodedata.normalize("NFKC", rel)
            if self._blacklist_spec.match_file(rel) or self._folded_blacklist_spec.match_file(_fold(rel)):
                return f"blacklisted by the workspace's secret-file globs ({path.name})"
        return ""

    def visible(self, entry: Path) -> bool:
        """Whether a directory entry may appear in listings, searches and trees.

        The entry's symlinks are resolved: anything landing outside, looping, or blacklisted
        is hidden rather than shown.
        """
        try:
            real = entry.resolve(strict=False)
        except (RuntimeError, OSError):
            return False
        if real.is_symlink() or not self.contains(real):
            return False
        return not (self.blacklist_reason(entry) or self.blacklist_reason(real))

    def display(self, real: Path) -> str:
        """A path as tools show it: relative to the primary root when under it."""
        rel = self._relative(real)
        return rel if rel is not None else str(real)

    def _relative(self, path: Path) -> str | None:
        for root in (self.primary, *self.roots):
            if path == root:
                return "."
            if path.is_relative_to(root):
                return path.relative_to(root).as_posix()
        return None

    def _inside_git_dir(self, real: Path) -> bool:
        rel = self._relative(real)
        parts = Path(rel).parts if rel else real.parts
        return any(_fold(part) == ".git" for part in parts)

    def _roots_text(self) -> str:
        places = [str(root) for root in self.roots]
        if self.allowed_files:
            places.append(f"the {len(self.allowed_files)} tracked files")
        return ", ".join(places) or "the tracked files (none yet)"


def _fold(name: str) -> str:
    """A name as a case-insensitive file system (macOS, Windows) compares it."""
    return _HFS_IGNORED.sub("", name).casefold()


def _structure(text: str) -> list[str]:
    """Path components with '.'/'..' kept and other names blanked, to compare shapes."""
    return [part if part in {".", ".."} else "" for part in text.split("/")]


def _has_symlink_loop(path: Path) -> bool:
    try:
        os.stat(path)
    except OSError as exc:
        return exc.errno == 40  # ELOOP
    return False
