"""The filesystem gate every path argument of every tool goes through.

Three layers, as in the seed, but held in an immutable object instead of module globals so
that two sessions with different roots can run side by side in one process:

1. **Allowlist** — explicit files plus base directories (the roots); the first root is the
   primary one, against which relative paths are resolved.
2. **Validation** — a hard blacklist of names no tool may touch (conversation history,
   configuration, credentials), configurable globs with safe defaults (keys, ``.env``), and
   paths no tool may *write* (:meth:`Workspace.write_protection`): git metadata at any depth,
   codeward's configuration files and its ``.codeward/`` state folder. Nothing an agent writes
   may run on the host or change what it is allowed to do; changing policy is a human act.
   Files the human's tools run later (hook folders, ``.vscode/``, client MCP configs...:
   :mod:`codeward.kernel.host_run`) are writable only with a person's yes (:meth:`Workspace.write_verdict`).
3. **Resolution** — relative paths are joined to the primary root, symlinks are resolved
   *before* any check, and whatever lands outside the allowlist is refused. Listings,
   searches and trees use :meth:`Workspace.visible` so that entries resolving outside never
   show up at all.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from codeward.kernel.host_run import BUILTIN_RULES, NEEDS_PERSON, NO_CONSENT, Consent, HostRunRules, hooks_reason
from codeward.kernel.result import ErrorKind, Result
from codeward.kernel.user_dirs import data_home

if TYPE_CHECKING:
    import pathspec

HARD_BLACKLIST_NAMES = frozenset({"history.toml", "config.toml", "credentials.toml"})
HARD_BLACKLIST_SUFFIX = "_history.toml"
DEFAULT_BLACKLIST_GLOBS: tuple[str, ...] = (
    # environment files
    ".env",
    ".env.*",
    "*.env",
    ".envrc",
    # keys and certificates
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.ppk",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    # credential stores of common tools
    ".netrc",
    ".pgpass",
    ".npmrc",
    ".pypirc",
    ".git-credentials",
    "credentials",
    "**/.docker/config.json",
    "kubeconfig",
    "*.kubeconfig",
    "**/.kube/config",
    "terraform.tfstate*",
    "*.tfstate",
    "*.tfstate.backup",
)
"""The secret names every workspace refuses (gitignore globs), unless a caller passes its own list.

This is the one list: the file tools refuse these paths, listings hide them, git diffs exclude
them, and the shell sandbox hides the files :func:`secret_paths` finds with it. A private key
under any other name is recognized by its first line (:func:`private_key_marker`).
"""
PRIVATE_KEY_MARKERS: tuple[bytes, ...] = (
    b"-----BEGIN OPENSSH PRIVATE KEY-----",
    b"-----BEGIN RSA PRIVATE KEY-----",
    b"-----BEGIN DSA PRIVATE KEY-----",
    b"-----BEGIN EC PRIVATE KEY-----",
    b"-----BEGIN PRIVATE KEY-----",
    b"-----BEGIN ENCRYPTED PRIVATE KEY-----",
    b"-----BEGIN PGP PRIVATE KEY BLOCK-----",
    b"-----BEGIN SSH2 ENCRYPTED PRIVATE KEY-----",
    b"PuTTY-User-Key-File-",
)
"""How a private key file begins, whatever it is called (``deploy_key``, ``server``, ``ci-bot``)."""
KEY_SNIFF_BYTES = 64
"""Bytes of a file's start that :func:`private_key_marker` needs."""
PROTECTED_FOLDER_NAMES: dict[str, str] = {
    ".git": "git metadata (a .git/ folder or gitdir: file, at any depth): git runs commands it finds there "
            "(hooks, core.fsmonitor, filters, gitdir: pointers) on the host",
    ".codeward": "codeward's state folder (.codeward: logs, pins, caches), which only codeward writes",
}
"""Names that no tool may write, as a file or a folder, nor anything under them, at any depth."""
GIT_DIR_HEAD = "head"
GIT_DIR_PARTS = frozenset({"objects", "refs", "commondir", "gitdir"})
"""What makes a folder a git directory, case-folded: ``HEAD`` with one of these beside it.

Git's own test (``is_git_directory`` in its ``setup.c``) wants a valid ``HEAD`` and, in the
common directory (``commondir`` names another one), ``objects/`` and ``refs/``. The rule here is
looser on purpose: ``HEAD`` of any content (a later write could make it valid) with *any* one
of ``objects``, ``refs`` (``GIT_OBJECT_DIRECTORY`` can stand in for ``objects/``), ``commondir``
or ``gitdir``. A folder with ``HEAD`` or ``config`` alone stays an ordinary folder."""
GIT_DIR_NAMES = ("HEAD", "objects", "refs", "commondir", "gitdir")
"""The same names as git looks them up on disk (it asks for ``HEAD``; a case-insensitive file
system answers for ``head`` too)."""
GIT_DIRECTORY_REASON = "inside a folder git would open as a repository"
"""How :meth:`Workspace.write_verdict` begins its refusal for such a folder."""
GIT_MARKER_LOCK = "codeward:git-directory-names"
"""One lock key for every write that adds one of those names, so that two concurrent calls
cannot each add half of a repository after both were checked (see :func:`git_marker_lock_key`;
:mod:`codeward.kernel.path_locks` makes it a lock every codeward process on the root shares)."""
CONFIG_FILE_NAMES = frozenset({"codeward.toml", "mcp_env.toml"})
"""codeward's configuration files, protected at any depth (codeward finds them by searching upward)."""
PRIVATE_REASON = ("codeward's per-user data (signing keys, trusted keys, tokens, sessions), which no tool reads "
                  "or writes")
POLICY_HINT = ("Changing codeward's policy, its state or the repository's git metadata is a human act: ask the "
               "user to do it themselves (an editor, the codeward command, git on their own machine).")
HOST_RUN_REASON = "a file the host runs later"
"""How a host-run verdict begins (the rest says which rule, and why)."""
HOST_RUN_HINT = ("A person must approve this write, seeing its diff: codeward asks them when a client that supports "
                 "elicitation, codeward chat or the control console is there; otherwise ask the user to make this "
                 "change themselves.")
MAX_PATH_CHARS = 4096
MAX_COMPONENT_BYTES = 255
_DRIVE = re.compile(r"^[A-Za-z]:")
_HFS_IGNORED = re.compile("[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]")
"""Code points macOS (HFS+) drops from names, so that '.g\u200cit' is '.git' there (as git checks)."""
BLACKLIST_MEMO_SIZE = 200_000
"""Paths whose blacklist answer a workspace remembers (a bound on memory, not a tuning knob)."""
_POSIX = os.sep == "/"
"""Paths compare as plain strings (what the fast checks below rely on) only on POSIX."""
_PROC_FD = "/proc/self/fd/"
_DIR_HANDLE_FLAGS = (os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC) if hasattr(os, "O_PATH") else 0
"""A handle on a directory that opens nothing for I/O (Linux); without it every read is checked fully."""
_MAX_READ = 0x7FFFF000
"""The most one read returns on Linux; a read that long may not be the end of the file."""
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)


@dataclass(frozen=True, slots=True)
class WriteVerdict:
    """What the gate says about writing one path: ``refused`` (never, by any tool), or
    ``needs_person`` (a host-run path: a person's yes lifts it), or neither (write away)."""

    refused: str = ""
    needs_person: str = ""

    @property
    def reason(self) -> str:
        """Any reason not to write now ("" when the write may go ahead)."""
        return self.refused or self.needs_person


WRITABLE = WriteVerdict()


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
    protected_files: frozenset[Path] = frozenset()
    """Files no tool may write wherever they are: the configuration files this server read."""
    private_dirs: tuple[Path, ...] = ()
    """Folders no tool may read or write, listings never show, and sandboxes hide, even inside a
    root: codeward's per-user data (the registry's signing key and trusted keys, tokens, sessions)."""
    host_run: HostRunRules = BUILTIN_RULES
    """Which paths the host runs later (:mod:`codeward.kernel.host_run`): writing one needs a person's yes."""
    host_run_consent: Consent = NO_CONSENT
    """The host-run writes a person approved for the call this workspace was given to."""

    @classmethod
    def create(
        cls,
        roots: Sequence[str | Path],
        *,
        files: Iterable[str | Path] = (),
        extra_blacklist: Iterable[str] = (),
        blacklist: Sequence[str] = DEFAULT_BLACKLIST_GLOBS,
        protected: Iterable[str | Path] = (),
        private: Iterable[str | Path] | None = None,
        host_run: HostRunRules | None = None,
    ) -> Workspace:
        """A workspace over ``roots`` (the first is primary); raises ``ValueError`` for a bad root.

        ``protected`` names files no tool may write (the configuration files codeward read, such
        as the one given with ``--config``), in addition to the names protected everywhere.
        ``private`` names folders off limits altogether (default: codeward's data folder,
        ``~/.local/share/codeward``, where the registry's signing key lives). ``host_run`` says
        which paths need a person's yes (default: the built-in globs, no hooks folder read).
        """
        if private is None:
            private = (data_home(),)
        hidden = tuple(dict.fromkeys(Path(p).expanduser().resolve() for p in private))
        resolved: list[Path] = []
        for root in roots or [Path.cwd()]:
            path = Path(root).expanduser().resolve()
            if not path.is_dir():
                raise ValueError(f"root {str(root)!r} is not a directory; pass an existing directory")
            if path not in resolved:
                resolved.append(path)
        allowed = frozenset(Path(f).expanduser().resolve() for f in files)
        guarded = frozenset(Path(p).expanduser().resolve() for p in protected)
        return cls(tuple(resolved), allowed, tuple(blacklist) + tuple(extra_blacklist), protected_files=guarded,
                   private_dirs=hidden, host_run=host_run or BUILTIN_RULES)

    def with_files(self, files: Iterable[str | Path], base_dirs: Sequence[str | Path] | None = None) -> Workspace:
        """Layer 1 rebuilt: the given tracked files plus base directories (default: these roots).

        With ``base_dirs=[]`` only the files are allowed; relative paths still start at this
        workspace's primary root.
        """
        if base_dirs is None:
            return Workspace.create(self.roots, files=files, blacklist=self.blacklist_globs,
                                    protected=self.protected_files, private=self.private_dirs, host_run=self.host_run)
        dirs = tuple(Path(d).expanduser().resolve() for d in base_dirs)
        allowed = frozenset(Path(f).expanduser().resolve() for f in files)
        return Workspace(dirs, allowed, self.blacklist_globs, anchor=self.primary, protected_files=self.protected_files,
                         private_dirs=self.private_dirs, host_run=self.host_run)

    def with_roots(self, roots: Sequence[str | Path]) -> Workspace:
        """The same policy over other roots (e.g. after the client's roots changed)."""
        return Workspace.create(roots, files=self.allowed_files, blacklist=self.blacklist_globs,
                                protected=self.protected_files, private=self.private_dirs, host_run=self.host_run)

    def with_host_run_consent(self, consent: Consent) -> Workspace:
        """This policy for one call a person approved: the host-run writes ``consent`` covers pass.

        Only the approval layers make one (after a person's yes, or for a call a person typed);
        nothing a tool or a model sends can.
        """
        return replace(self, host_run_consent=consent)

    @property
    def primary(self) -> Path:
        return self.anchor or self.roots[0]

    @cached_property
    def _blacklist_spec(self) -> pathspec.PathSpec:  # type: ignore[type-arg]
        import pathspec  # on the first path checked: a server's start checks none

        return pathspec.PathSpec.from_lines("gitignore", self.blacklist_globs)

    @cached_property
    def _folded_blacklist_spec(self) -> pathspec.PathSpec:  # type: ignore[type-arg]
        """The globs case-folded: on macOS and Windows '.ENV' opens '.env'."""
        import pathspec

        return pathspec.PathSpec.from_lines("gitignore", [glob.casefold() for glob in self.blacklist_globs])

    @cached_property
    def _blacklisted(self) -> _GlobTest:
        return _GlobTest(self._blacklist_spec)

    @cached_property
    def _folded_blacklisted(self) -> _GlobTest:
        return _GlobTest(self._folded_blacklist_spec)

    @cached_property
    def _globs_are_folded(self) -> bool:
        """When so, the folded globs test a folded path as the globs do: once is enough."""
        return all(glob == glob.casefold() for glob in self.blacklist_globs)

    @cached_property
    def _root_texts(self) -> tuple[tuple[str, str], ...]:
        """(root, root + '/') for the primary root then every root, as :meth:`_relative` tries them."""
        return tuple((str(root), _dir_prefix(str(root))) for root in (self.primary, *self.roots))

    @cached_property
    def _allowed_texts(self) -> frozenset[str]:
        return frozenset(str(path) for path in self.allowed_files)

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
        if access is Access.WRITE:
            verdicts = [self.write_verdict(path) for path in dict.fromkeys((lexical, real))]
            for verdict in verdicts:
                if verdict.refused:
                    return Result.fail(ErrorKind.PERMISSION, f"{param} {text!r} is {verdict.refused}; tools may not "
                                       "write it", POLICY_HINT, data=self.primary)
            for verdict in verdicts:
                if verdict.needs_person:
                    return Result.fail(ErrorKind.PERMISSION, f"{param} {text!r} is {verdict.needs_person}; writing it "
                                       "needs a person's approval", HOST_RUN_HINT, data=self.primary,
                                       source=NEEDS_PERSON)
        return Result.success(real)

    def plain_path(self, raw: object) -> str | None:
        """The absolute path ``raw`` names, when every layer that reads only text lets it through.

        That is: the syntax checks pass, the path is already normal (no ``.`` or ``..`` part, no
        doubled or trailing ``/``), lies inside the workspace and is not blacklisted or private.
        None otherwise (and off POSIX). It is **not** a gate decision: symlinks are not looked at.
        Only a reader that opens it with ``O_NOFOLLOW`` and then confirms that the descriptor
        leads to this very path (:func:`codeward.engines.files.textfile.read_text_plain`) may rely on it,
        since then no link was followed and the opened file's real path is this path, which is
        what :meth:`resolve` would judge; anything else goes through :meth:`resolve`.
        """
        if not _POSIX or not isinstance(raw, str):
            return None
        memo = self._plain_memo
        found = memo.get(raw)
        if found is None:
            if len(memo) >= BLACKLIST_MEMO_SIZE:
                memo.clear()
            found = memo[raw] = self._judge_plain(raw)
        return found or None

    def _judge_plain(self, raw: str) -> str:
        """:meth:`plain_path` without the memo ("" for no)."""
        checked = self._check_syntax(raw, "path")
        if not checked.ok or checked.data != raw:  # a backslash would be read as '/'
            return ""
        candidate = raw if raw.startswith("/") else os.path.join(self._root_texts[0][0], raw)
        if os.path.normpath(candidate) != candidate or not self._contains_text(candidate):
            return ""
        return "" if self._blacklist_reason_text(candidate, os.path.basename(candidate)) else candidate

    @cached_property
    def _plain_memo(self) -> dict[str, str]:
        return {}

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
        if _POSIX:
            return self._contains_text(str(real))
        return real in self.allowed_files or any(real == root or real.is_relative_to(root) for root in self.roots)

    def _contains_text(self, text: str) -> bool:
        """:meth:`contains` for a normalized absolute POSIX path given as text."""
        if text in self._allowed_texts:
            return True
        return any(text == root or text.startswith(prefix) for root, prefix in self._root_texts[1:])

    def blacklist_reason(self, path: Path) -> str:
        """Why a path is blacklisted ("" when it is not)."""
        if _POSIX:
            return self._blacklist_reason_text(str(path), path.name)
        if self._private(str(path)):
            return PRIVATE_REASON
        name = unicodedata.normalize("NFKC", path.name).casefold()
        if name in HARD_BLACKLIST_NAMES or name.endswith(HARD_BLACKLIST_SUFFIX):
            return f"a protected file ({path.name}: history, configuration and credentials are off limits)"
        rel = self._relative(path)
        if rel:
            rel = unicodedata.normalize("NFKC", rel)
            if self._blacklist_spec.match_file(rel) or self._folded_blacklist_spec.match_file(_fold(rel)):
                return f"blacklisted by the workspace's secret-file globs ({path.name})"
        return ""

    def _blacklist_reason_text(self, text: str, name: str) -> str:
        """:meth:`blacklist_reason` for a normalized POSIX path given as text, and its last part.

        Answers are remembered: the policy never changes, and the index's usage scans and
        walks ask about the same files again and again.
        """
        memo = self._blacklist_memo
        reason = memo.get(text)
        if reason is None:
            if len(memo) >= BLACKLIST_MEMO_SIZE:
                memo.clear()
            reason = memo[text] = self._judge_blacklist(text, name)
        return reason

    @cached_property
    def _blacklist_memo(self) -> dict[str, str]:
        return {}

    @cached_property
    def _key_memo(self) -> dict[tuple[str, int, int, int], bool]:
        """Whether a file (by path, size, inode change time, inode) began like a private key, for
        :func:`secret_paths`: each run of a script asks again about the same unchanged files."""
        return {}

    def holds_private_key(self, path: Path, info: os.stat_result) -> bool:
        """:func:`file_holds_private_key`, remembered while the file's size and times stay the same."""
        key = (str(path), info.st_size, info.st_ctime_ns, info.st_ino)
        memo = self._key_memo
        found = memo.get(key)
        if found is None:
            if len(memo) >= BLACKLIST_MEMO_SIZE:
                memo.clear()
            found = memo[key] = bool(file_holds_private_key(path))
        return found

    def __getstate__(self) -> dict[str, object]:
        """What pickles (a worker process gets the workspace): the policy, not the memo of answers."""
        state = dict(self.__dict__)
        state.pop("_blacklist_memo", None)
        state.pop("_key_memo", None)
        state.pop("_plain_memo", None)
        return state

    def _private(self, text: str) -> bool:
        return any(text == private or text.startswith(prefix) for private, prefix in self._private_texts)

    @cached_property
    def _private_texts(self) -> tuple[tuple[str, str], ...]:
        return tuple((str(p), str(p).rstrip(os.sep) + os.sep) for p in self.private_dirs)

    def _judge_blacklist(self, text: str, name: str) -> str:
        if self._private_texts and self._private(text):
            return PRIVATE_REASON
        folded = (name if name.isascii() else unicodedata.normalize("NFKC", name)).casefold()
        if folded in HARD_BLACKLIST_NAMES or folded.endswith(HARD_BLACKLIST_SUFFIX):
            return f"a protected file ({name}: history, configuration and credentials are off limits)"
        rel = self._relative_text(text)
        if rel:
            if not rel.isascii():
                rel = unicodedata.normalize("NFKC", rel)
            if self._blacklisted(rel):
                return f"blacklisted by the workspace's secret-file globs ({name})"
            folded_rel = rel.casefold() if rel.isascii() else _fold(rel)
            if (folded_rel != rel or not self._globs_are_folded) and self._folded_blacklisted(folded_rel):
                return f"blacklisted by the workspace's secret-file globs ({name})"
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
        if real == entry:  # no symlink on the way: one path to check
            return not self.blacklist_reason(real)
        return not (self.blacklist_reason(entry) or self.blacklist_reason(real))

    def admits_walked(self, text: str) -> bool:
        """:meth:`visible` for a path a walk reached without following a link, given as text.

        Such a path (normalized, absolute, from a resolved folder: what ripgrep reports) is its
        own real path, so only the allowlist and the blacklist remain to check, without the cost
        of a ``Path`` or a ``realpath`` per entry.
        """
        if not _POSIX:
            path = Path(text)
            return self.contains(path) and not self.blacklist_reason(path)
        return self._contains_text(text) and not self._blacklist_reason_text(text, text.rpartition("/")[2])

    def reader(self, base: Path) -> VisibleReader:
        """Reads files under ``base`` by relative path, each only when :meth:`visible` admits it."""
        return VisibleReader(self, base)

    def display(self, real: Path) -> str:
        """A path as tools show it: relative to the primary root when under it."""
        rel = self._relative(real)
        return rel if rel is not None else str(real)

    def _relative(self, path: Path) -> str | None:
        if _POSIX:
            return self._relative_text(str(path))
        for root in (self.primary, *self.roots):
            if path == root:
                return "."
            if path.is_relative_to(root):
                return path.relative_to(root).as_posix()
        return None

    def _relative_text(self, text: str) -> str | None:
        """:meth:`_relative` for a normalized POSIX path given as text."""
        for root, prefix in self._root_texts:
            if text == root:
                return "."
            if text.startswith(prefix):
                return text[len(prefix):]
        return None

    def write_protection(self, path: Path) -> str:
        """Why ``path`` may not be written now ("" when it may): :meth:`write_verdict`'s reason,
        refusal or host-run alike — for a writer that does not ask anyone, a host-run path is
        simply not written."""
        return self.write_verdict(path).reason

    def write_verdict(self, path: Path) -> WriteVerdict:
        """What the gate says about writing ``path`` (an absolute, normalized path).

        The one rule every writer applies — the file tools through :meth:`resolve`, and any
        executor whose changes come back to the project (the shell's write-back). Refused: git
        metadata at any depth (a ``.git`` folder or ``gitdir:`` file, creating one included), a
        folder git would open as a repository by itself (a bare one, built file by file or
        already there), codeward's configuration files (``codeward.toml``, ``mcp_env.toml``
        anywhere, and the files this server was configured with) and its ``.codeward/`` state
        folder. Needing a person: a host-run path (:meth:`host_run_reason`) this call's consent
        does not cover. Reads the disk (a few ``lstat`` calls) for the repository test and the
        hooks folders; everything else is judged on the path.
        """
        refused = self._hard_protection(path)
        if refused:
            return WriteVerdict(refused=refused)
        if self.host_run_consent.covers(path):
            return WRITABLE
        host_run = self.host_run_reason(path)
        return WriteVerdict(needs_person=f"{HOST_RUN_REASON} — {host_run}") if host_run else WRITABLE

    def host_run_reason(self, path: Path) -> str:
        """Why ``path`` is a file the host runs later ("" when it is not): its name matches a
        host-run glob (relative to its root, case-insensitively, at any depth), or it lies in a
        hooks folder a repository around it configures (``core.hooksPath``)."""
        rel = self._relative(path)
        text = rel if rel is not None else str(path).lstrip("/")
        if text and text != ".":
            reason = self.host_run.glob_reason(text)
            if reason:
                return reason
        return hooks_reason(self.host_run, path)

    def _hard_protection(self, path: Path) -> str:
        """Why no tool may ever write ``path`` ("" when none forbids it): see :meth:`write_verdict`."""
        rel = self._relative(path)
        parts = Path(rel).parts if rel else path.parts
        for part in parts:
            reason = PROTECTED_FOLDER_NAMES.get(_fold(part))
            if reason:
                return reason
        name = _fold(path.name)
        if name in CONFIG_FILE_NAMES:
            return f"codeward's configuration ({path.name}), which sets what tools may do"
        if path in self.protected_files:
            return f"a configuration file this server was started with ({path.name})"
        return self._git_directory_reason(path, rel)

    def _git_directory_reason(self, path: Path, rel: str | None) -> str:
        """Why writing ``path`` would write into a folder git opens as a repository — one that
        is one already, or becomes one by this write — ("" when it would not).

        Every folder the write adds a name to is judged with that name added: from the root
        down to the file's own folder (a missing folder is created holding only the next name,
        so the first missing one ends the walk), and ``path`` itself when it is a folder. A bare
        repository built file by file — ``HEAD``, ``config``, ``objects/``, ``refs/`` — is
        refused at whichever write completes it, whatever the order, and so is every write
        into one. One ``lstat`` per folder unless a ``HEAD`` is involved.
        """
        if looks_like_git_dir(git_dir_names(path)):
            return self._git_dir_text(path)
        if rel is None:  # a tracked file outside the roots: only its own folder gains a name
            folder: Path | None = path.parent
            steps = [path.name]
        else:
            folder = self._root_of(path)
            steps = [] if rel == "." else rel.split("/")
        for step in steps:
            if folder is None:
                return ""
            try:
                os.lstat(folder / "HEAD")
                has_head = True
            except FileNotFoundError:
                has_head = False
            except OSError:
                return ""  # not a folder: the write fails there anyway
            if not has_head and not folder.is_dir():
                return ""  # a folder this write creates
            if (has_head or _fold(step) == GIT_DIR_HEAD) and looks_like_git_dir((git_dir_names(folder) or set())
                                                                                 | {step}):
                return self._git_dir_text(folder)
            folder = folder / step
        return ""

    def joint_write_protection(self, paths: Iterable[Path]) -> str:
        """Why writing all of ``paths`` in one operation is refused although each may pass alone
        ("" when it is not): together they would make a folder one git opens as a repository
        (``HEAD`` and ``objects/`` added by one patch to a folder that does not exist yet).

        :meth:`write_protection` judges each write against the disk as it is; an operation that
        writes several paths is judged here on the disk as it will be, with the same test
        (:func:`looks_like_git_dir`). Only folders gaining one of the repository names are read.
        """
        added: dict[Path, set[str]] = {}
        for folder, entry in self.repository_name_entries(paths):
            added.setdefault(folder, set()).add(entry.name)
        for folder, names in sorted(added.items()):
            if looks_like_git_dir((git_dir_names(folder) or set()) | names):
                return self._git_dir_text(folder)
        return ""

    def repository_name_entries(self, paths: Iterable[Path]) -> list[tuple[Path, Path]]:
        """(folder, entry) for each repository-making name (``HEAD``, ``objects``...) that writing
        ``paths`` puts in a folder: the entry itself or a folder on its way, from its root down."""
        found: list[tuple[Path, Path]] = []
        for path in paths:
            root = self._root_of(path)
            rel = self._relative(path)
            if root is None or not rel or rel == ".":
                folder, steps = path.parent, [path.name]
            else:
                folder, steps = root, rel.split("/")
            for step in steps:
                if is_git_dir_name(step) and (folder, folder / step) not in found:
                    found.append((folder, folder / step))
                folder = folder / step
        return found

    def git_dir_text(self, folder: Path) -> str:
        """How a refusal names ``folder`` as a repository (or one a write would make)."""
        return self._git_dir_text(folder)

    def _root_of(self, path: Path) -> Path | None:
        text = str(path)
        for root, prefix in self._root_texts:
            if text == root or text.startswith(prefix):
                return Path(root)
        return None

    def _git_dir_text(self, folder: Path) -> str:
        shown = self.display(folder)
        where = "the root" if shown == "." else f"{shown}/"
        return (f"{GIT_DIRECTORY_REASON} ({where} holds, or would hold after this write, HEAD with objects/, "
                "refs/ or commondir: a bare repository, whose config git obeys on the host) — git metadata")

    def _roots_text(self) -> str:
        places = [str(root) for root in self.roots]
        if self.allowed_files:
            places.append(f"the {len(self.allowed_files)} tracked files")
        return ", ".join(places) or "the tracked files (none yet)"


class VisibleReader:
    """Reads files under one directory by relative path, each only if :meth:`Workspace.visible`
    admits it, judged on what was actually opened.

    Reading many files, ``visible`` (a ``realpath`` walk and two blacklist checks) costs more
    than the read. Here each directory is opened once as a handle (``O_PATH``) and trusted
    only when the kernel says its real path is the expected one (no symlink on the way);
    a file is then opened relative to that handle with ``O_NOFOLLOW``, so its real path is
    known without resolving it, and only :meth:`Workspace.contains` and one blacklist check
    remain. Anything else (a symlink, a directory that moved, no ``/proc``) takes the full
    ``visible`` check. Only regular files are read; opening never blocks (a FIFO).
    """

    __slots__ = ("_base", "_dir", "_dir_handle", "_dir_trusted", "_workspace")

    def __init__(self, workspace: Workspace, base: Path) -> None:
        self._workspace = workspace
        self._base = str(base)
        self._dir: str | None = None
        self._dir_handle = -1
        self._dir_trusted = False

    def __enter__(self) -> VisibleReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._dir_handle >= 0:
            os.close(self._dir_handle)
        self._dir, self._dir_handle, self._dir_trusted = None, -1, False

    def read(self, rel: str) -> tuple[bytes, os.stat_result] | None:
        """The bytes and status of ``base/rel``; None when hidden, missing or not a regular file."""
        path = f"{_dir_prefix(self._base)}{rel}"
        folder, _, name = path.rpartition("/")
        handle = self._open_trusted(folder or "/", name) if _POSIX and name not in ("", ".", "..") else None
        if handle is None:
            handle = self._open_checked(path)
        if handle < 0:
            return None
        try:
            info = os.fstat(handle)
            if not stat.S_ISREG(info.st_mode):
                return None
            data = _read_all(handle, info.st_size)
            return None if private_key_marker(data) else (data, info)
        except OSError:
            return None
        finally:
            os.close(handle)

    def _open_trusted(self, folder: str, name: str) -> int | None:
        """A handle opened in a trusted directory (-1: hidden or missing); None: check fully."""
        if folder != self._dir:
            self._enter(folder)
        if not self._dir_trusted:
            return None
        try:
            handle = os.open(name, _READ_FLAGS | os.O_NOFOLLOW, dir_fd=self._dir_handle)
        except OSError as exc:
            return None if exc.errno == errno.ELOOP else -1  # ELOOP: the file is a symlink now
        path = f"{_dir_prefix(folder)}{name}"
        workspace = self._workspace
        if workspace._contains_text(path) and not workspace._blacklist_reason_text(path, name):
            return handle
        os.close(handle)
        return -1

    def _enter(self, folder: str) -> None:
        self.close()
        self._dir = folder
        if not _DIR_HANDLE_FLAGS:
            return
        try:
            self._dir_handle = os.open(folder, _DIR_HANDLE_FLAGS)
            self._dir_trusted = os.readlink(f"{_PROC_FD}{self._dir_handle}") == folder
        except OSError:
            self._dir_trusted = False

    def _open_checked(self, path: str) -> int:
        """The full check, then the open; where the kernel tells what was opened, that is checked too."""
        workspace = self._workspace
        if not workspace.visible(Path(path)):
            return -1
        try:
            handle = os.open(path, _READ_FLAGS)
        except OSError:
            return -1
        try:
            opened = os.readlink(f"{_PROC_FD}{handle}")
        except OSError:
            return handle  # no /proc: the check above is all there is, as for any tool
        real = Path(opened)
        if workspace.contains(real) and not workspace.blacklist_reason(real):
            return handle
        os.close(handle)
        return -1


def _read_all(handle: int, size: int) -> bytes:
    data = os.read(handle, size + 1)  # one byte more tells a file that grew since fstat
    if len(data) <= size and len(data) < _MAX_READ:  # a short read of a regular file is its end
        return data
    chunks = [data]
    while chunk := os.read(handle, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


class _GlobTest:
    """``spec.match_file``, as one regular expression when that is the same test.

    It is whenever every pattern includes (no ``!negation``, where the last match would
    decide): then a path matches the spec exactly when it matches one pattern. A class, not
    a closure, so that a workspace still pickles (index worker processes get one).
    """

    __slots__ = ("combined", "normalize", "spec")

    def __init__(self, spec: pathspec.PathSpec) -> None:  # type: ignore[type-arg]
        from pathspec.util import normalize_file

        self.spec = spec
        self.combined = _combined_regex(spec)
        self.normalize = normalize_file

    def __call__(self, path: str) -> bool:
        if self.combined is None:
            return bool(self.spec.match_file(path))
        return self.combined.search(self.normalize(path)) is not None


def _combined_regex(spec: pathspec.PathSpec) -> re.Pattern[str] | None:  # type: ignore[type-arg]
    patterns = [pattern for pattern in spec.patterns if pattern.include is not None]
    regexes = [getattr(pattern, "regex", None) for pattern in patterns]
    usable = [regex for regex in regexes if isinstance(regex, re.Pattern) and isinstance(regex.pattern, str)]
    if not patterns:
        return re.compile(r"(?!)")  # matches nothing, as an empty spec
    if (len(usable) != len(patterns) or any(not pattern.include for pattern in patterns)
            or any(regex.groups or regex.flags != usable[0].flags for regex in usable)):
        return None
    try:
        return re.compile("|".join(f"(?:{regex.pattern})" for regex in usable), usable[0].flags)
    except re.error:
        return None


def looks_like_git_dir(names: Iterable[str] | None) -> bool:
    """Whether a folder holding ``names`` is one git would open as a repository (see
    :data:`GIT_DIR_PARTS`). The one test for every writer: the gate and the shell's write-back."""
    if not names:
        return False
    folded = {_fold(name) for name in names}
    return GIT_DIR_HEAD in folded and not folded.isdisjoint(GIT_DIR_PARTS)


def git_dir_names(folder: Path) -> set[str] | None:
    """Which of :data:`GIT_DIR_NAMES` ``folder`` holds, looked up as git looks them up (``None``
    when ``folder`` is not an existing folder). A few ``lstat`` calls, no listing."""
    found: set[str] = set()
    for name in GIT_DIR_NAMES:
        try:
            os.lstat(os.path.join(folder, name))
        except FileNotFoundError:
            continue
        except NotADirectoryError:
            return None
        except OSError:
            found.add(name)  # unreadable: assume the worst
            continue
        found.add(name)
    if not found and not os.path.isdir(folder):
        return None
    return found


def is_git_dir_name(name: str) -> bool:
    """Whether ``name`` is one of the names that make a folder a repository (case-folded)."""
    folded = _fold(name)
    return folded == GIT_DIR_HEAD or folded in GIT_DIR_PARTS


def git_marker_lock_key(path: Path) -> str | None:
    """:data:`GIT_MARKER_LOCK` when writing ``path`` could add a repository-making name to a
    folder (a component is ``HEAD``, ``objects``, ``refs``, ``commondir`` or ``gitdir``)."""
    return GIT_MARKER_LOCK if any(is_git_dir_name(part) for part in path.parts) else None


def _dir_prefix(directory: str) -> str:
    """A directory as the start of the paths under it ('/' stays '/')."""
    return directory if directory.endswith("/") else directory + "/"


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


def private_key_marker(head: bytes) -> str:
    """The private-key header a file's first bytes begin with ("" when none): such a file is a secret.

    Only the start counts (after a BOM and blank space), so documentation that quotes a key
    header in its text stays readable.
    """
    start = head[:KEY_SNIFF_BYTES + 16].lstrip(b"\xef\xbb\xbf").lstrip()
    for marker in PRIVATE_KEY_MARKERS:
        if start.startswith(marker):
            return marker.decode("ascii").strip("-").strip()
    return ""


def file_holds_private_key(path: Path) -> str:
    """:func:`private_key_marker` of a regular file on disk (read without following a link or blocking)."""
    try:
        fd = os.open(path, _READ_FLAGS | os.O_NOFOLLOW)
    except OSError:
        return ""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return ""
        return private_key_marker(os.read(fd, KEY_SNIFF_BYTES + 16))
    except OSError:
        return ""
    finally:
        os.close(fd)


SECRET_SCAN_LIMIT = 200_000
"""Entries :func:`secret_paths` looks at before it stops (and says it did not finish)."""
KEY_SNIFF_MAX_SIZE = 64 * 1024
"""Files larger than this are not opened to look for a key header (keys are a few KiB)."""
_SCAN_SKIPPED = frozenset({"objects"})
"""Inside a .git folder: content-addressed names, never a secret's name, and many of them."""


def _git_dir_listing(names: set[str]) -> bool:
    """Whether a folder with these entries is a git directory, as git itself tests it (a ``HEAD``
    beside ``objects`` and ``refs``, or beside a ``commondir`` naming them elsewhere) — stricter
    than :func:`looks_like_git_dir`, which must also refuse halves of one."""
    return "HEAD" in names and ({"objects", "refs"} <= names or "commondir" in names)


@dataclass(frozen=True)
class FolderSecrets:
    """What one folder holds for :func:`secret_paths`: its secrets, the folders to look into
    next (with whether they lie inside a ``.git``), whether it is a git directory, and how many
    entries it has. The step a whole walk repeats, and what a kept scan redoes for a changed folder."""

    secrets: tuple[Path, ...] = ()
    folders: tuple[tuple[str, bool], ...] = ()
    git_dir: bool = False
    entries: int = 0
    linked: bool = False
    """A file here has other hard links: a write through one elsewhere raises no file event here."""


def folder_secrets(workspace: Workspace, directory: str, in_git: bool, sniff_keys: bool = True) -> FolderSecrets:
    """The secrets directly in ``directory`` and its folders to descend into (none when it
    cannot be listed). Symlinks are not followed; a blacklisted folder is a secret, not descended."""
    try:
        with os.scandir(directory) as listing:
            entries = list(listing)
    except OSError:
        return FolderSecrets()
    found: list[Path] = []
    folders: list[tuple[str, bool]] = []
    linked = False
    for entry in entries:
        if entry.is_symlink():
            continue
        path = Path(entry.path)
        if workspace.blacklist_reason(path):
            found.append(path)
            continue
        try:
            if entry.is_dir(follow_symlinks=False):
                if not (in_git and entry.name in _SCAN_SKIPPED):
                    folders.append((entry.path, in_git or _fold(entry.name) == ".git"))
            elif sniff_keys and not in_git:
                info = entry.stat(follow_symlinks=False)
                linked = linked or info.st_nlink > 1
                if info.st_size <= KEY_SNIFF_MAX_SIZE and workspace.holds_private_key(path, info):
                    found.append(path)
        except OSError:
            continue
    return FolderSecrets(tuple(found), tuple(folders), _git_dir_listing({entry.name for entry in entries}),
                         len(entries), linked)


def secret_paths(workspace: Workspace, *, sniff_keys: bool = True,
                 git_dirs: list[Path] | None = None) -> tuple[list[Path], bool]:
    """Every secret under the roots — blacklisted names at any depth (``.git`` included, case
    folded as the gate compares) and, with ``sniff_keys``, small files that begin like a private
    key — and whether the scan covered everything (it stops after :data:`SECRET_SCAN_LIMIT` entries).

    For executors that must hide what the file tools refuse (the shell sandbox covers each with
    an empty stand-in): one source, so a script sees no secret that ``read_file`` would refuse.
    A blacklisted directory is listed once, not descended into. Symlinks are not followed.
    ``git_dirs``, when given, receives every git directory the same walk passes (``.git``
    folders at any depth, submodules' under ``.git/modules/``, bare repositories), whose histories may hold secrets.
    A server keeps this answer current by file events instead of walking again
    (:mod:`codeward.engines.contained.secret_index`).
    """
    found: list[Path] = []
    scanned = 0
    for root in workspace.roots:
        pending = [(str(root), False)]
        while pending:
            directory, in_git = pending.pop()
            folder = folder_secrets(workspace, directory, in_git, sniff_keys)
            scanned += folder.entries
            found += folder.secrets
            if git_dirs is not None and folder.git_dir:
                git_dirs.append(Path(directory))
            if scanned > SECRET_SCAN_LIMIT:
                return sorted(found), False
            pending += folder.folders
    return sorted(found), True
