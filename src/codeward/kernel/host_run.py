"""Files the human's own tools run later: writing one needs a person's yes.

Some files in a project are not data but instructions to programs on the host: git runs the
scripts of a hooks folder on the next commit, pre-commit runs a ``repo: local`` hook, VS Code
runs a task on folder open, an MCP client starts the servers ``.mcp.json`` names, a shell runs
its rc file. An agent that writes one of them runs code on the host the next time the person
works, outside every sandbox. These paths are not refused like ``.git`` (a person may well want
a hook or a task written): a write to one is a question to a person, with the diff, whatever
the approval policy would auto-approve — and refused when nobody can be asked.

:class:`HostRunRules` says which paths those are: gitignore-style globs compared
case-insensitively at any depth (:data:`BUILTIN_HOST_RUN` plus ``[server] host_run_paths``), and
the folder each repository's ``core.hooksPath`` names, read by a :class:`HooksPathReader` the
stack passes in (git's own reading, with codeward's hardened git). :class:`Consent` is what a
person approved for one call. The workspace (:meth:`codeward.kernel.workspace.Workspace.write_verdict`)
applies both, for every writer.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import pathspec

NEEDS_PERSON = "needs-person"
"""The ``source`` of a gate error that a person's yes would lift (see :class:`Consent`): a layer
that can ask one (:class:`codeward.approval.host_run.HostRunApproval`) acts on it."""

_SHELL_RC = "a shell start-up file: the shell runs it when it starts"
_HOOKS = "git runs the scripts there on commit, checkout, merge and push"
BUILTIN_HOST_RUN: dict[str, str] = {
    ".githooks/": f"a git hooks folder: {_HOOKS}",
    ".husky/": f"husky's git hooks folder: {_HOOKS}",
    ".beads/hooks/": "the Beads hooks folder: your `bd` runs its scripts when you create, update or close an issue",
    ".pre-commit-config.yaml": "pre-commit's configuration: its hooks (a `repo: local` one runs any command) run "
                               "on the next commit",
    ".gitmodules": "git's submodule list: `git submodule update` fetches and checks out what it names",
    ".gitattributes": "git attributes: they choose the filter, diff and merge programs git runs on files",
    ".gitconfig": "a git configuration file: settings in it run programs (core.fsmonitor, aliases, filters)",
    ".vscode/": "VS Code's folder: tasks run on folder open, settings choose interpreters, mcp.json starts MCP "
                "servers",
    ".idea/": "a JetBrains IDE's folder: run configurations and external tools",
    ".devcontainer/": "a dev container definition: its commands run when the container is built or opened",
    ".devcontainer.json": "a dev container definition: its commands run when the container is built or opened",
    ".mcp.json": "an MCP client's server list: the client starts the servers it names",
    ".cursor/": "Cursor's folder: mcp.json starts MCP servers, rules steer its agent",
    ".claude/": "Claude Code's folder: settings (hooks run commands; permissions), commands and agents",
    ".envrc": "direnv's start-up file: direnv runs it on entering the folder",
    ".bashrc": _SHELL_RC,
    ".bash_profile": _SHELL_RC,
    ".bash_login": _SHELL_RC,
    ".bash_logout": _SHELL_RC,
    ".profile": _SHELL_RC,
    ".zshrc": _SHELL_RC,
    ".zshenv": _SHELL_RC,
    ".zprofile": _SHELL_RC,
    ".zlogin": _SHELL_RC,
    ".zlogout": _SHELL_RC,
}
"""The built-in host-run paths (gitignore globs, matched case-insensitively at any depth) and why
each is one. ``.envrc`` is also a secret name (no tool reads or writes it at all); it is listed
so that it stays a question should a configuration ever make it writable."""
CONFIGURED_REASON = "listed in [server] host_run_paths of codeward.toml"
TOPS_SECONDS = 1.0
HOOKS_PATH_REASON = "the repository's hooks folder (core.hooksPath = {value}): git runs the scripts there"
_HFS_IGNORED = re.compile("[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]")


class HooksPathReader(Protocol):
    """The hooks folders configured for the repository whose work tree is ``top`` (absolute,
    in the order git reads them), for the human's git: ``core.hooksPath`` of the repository and
    of the person's own git configuration."""

    def __call__(self, top: Path) -> tuple[tuple[str, Path], ...]: ...


class ReaderOnFirstUse:
    """A :class:`HooksPathReader` imported (``module:name``, a class made with no arguments) on its
    first question: a server's start reads no git configuration and imports no git code. Picklable."""

    def __init__(self, spec: str) -> None:
        self.spec = spec
        self._reader: HooksPathReader | None = None

    def __call__(self, top: Path) -> tuple[tuple[str, Path], ...]:
        if self._reader is None:
            import importlib

            module, _, name = self.spec.partition(":")
            self._reader = getattr(importlib.import_module(module), name)()
        assert self._reader is not None
        return self._reader(top)

    def __getstate__(self) -> dict[str, object]:
        return {"spec": self.spec, "_reader": None}


@dataclass(frozen=True)
class HostRunRules:
    """Which paths the host runs later: globs (built-in and configured) and configured hooks folders."""

    configured: tuple[str, ...] = ()
    """Globs added by ``[server] host_run_paths`` (gitignore style, case-insensitive)."""
    hooks_path: HooksPathReader | None = field(default=None, compare=False)
    """Reads a repository's ``core.hooksPath`` (None: only the globs count)."""

    @cached_property
    def _builtin_names(self) -> dict[str, str]:
        """The built-in globs are plain names (a folder's with ``/``), or two of them
        (``.beads/hooks/``): a path matches one exactly when one of its components, or two in a
        row, are that name, which a set answers at once."""
        return {fold(glob.rstrip("/")): reason for glob, reason in BUILTIN_HOST_RUN.items()}

    @cached_property
    def _configured(self) -> tuple[tuple[pathspec.PathSpec, str], ...]:  # type: ignore[type-arg]
        import pathspec  # only with configured globs, on the first write checked

        return tuple((pathspec.PathSpec.from_lines("gitignore", [fold(glob)]), CONFIGURED_REASON)
                     for glob in self.configured)

    @cached_property
    def _memo(self) -> dict[str, str]:
        return {}

    def glob_reason(self, rel: str) -> str:
        """Why ``rel`` (a path relative to its root, ``/``-separated) is a host-run path by its name
        ("" when it is not); a folder matches its own glob (``.vscode`` as ``.vscode/``)."""
        folded = fold(rel)
        names = self._builtin_names
        parts = folded.split("/")
        for index, part in enumerate(parts):
            reason = names.get(part) or (names.get(f"{part}/{parts[index + 1]}") if index + 1 < len(parts) else "")
            if reason:
                return reason
        if not self.configured:
            return ""
        memo = self._memo
        reason = memo.get(folded)
        if reason is None:
            if len(memo) >= 100_000:
                memo.clear()
            reason = next((why for spec, why in self._configured
                           if spec.match_file(folded) or spec.match_file(folded + "/")), "")
            memo[folded] = reason
        return reason

    @cached_property
    def _tops(self) -> dict[Path, tuple[float, tuple[Path, ...]]]:
        return {}

    def repository_tops(self, folder: Path) -> tuple[Path, ...]:
        """``folder`` and the folders above it (nearest first) holding a ``.git`` entry: the work
        trees a path in ``folder`` is in. Remembered for :data:`TOPS_SECONDS` (a write-back asks
        for every folder it writes to, and only a person makes a ``.git``)."""
        now = time.monotonic()
        found = self._tops.get(folder)
        if found is not None and now - found[0] < TOPS_SECONDS:
            return found[1]
        tops = tuple(place for place in (folder, *folder.parents) if os.path.lexists(os.path.join(place, ".git")))
        if len(self._tops) >= 10_000:
            self._tops.clear()
        self._tops[folder] = (now, tops)
        return tops

    def __getstate__(self) -> dict[str, object]:
        """Pickled for worker processes without the memo and compiled patterns (rebuilt on use)."""
        state = dict(self.__dict__)
        for cached in ("_memo", "_configured", "_builtin_names", "_tops"):
            state.pop(cached, None)
        return state


@dataclass(frozen=True)
class Consent:
    """Host-run writes a person approved for one call: all of them (they saw the whole call's diff,
    or typed the call), or these paths — what lies under them, and the folders holding them (a
    file is written into its folder)."""

    everything: bool = False
    paths: frozenset[Path] = frozenset()

    def covers(self, path: Path) -> bool:
        if self.everything:
            return True
        if not self.paths:
            return False
        return (path in self.paths or any(parent in self.paths for parent in path.parents)
                or any(path in approved.parents for approved in self.paths))

    def __bool__(self) -> bool:
        return self.everything or bool(self.paths)


BUILTIN_RULES = HostRunRules()
"""The built-in globs alone (no configured ones, no hooks folder read): a workspace's default."""
NO_CONSENT = Consent()
EVERY_WRITE = Consent(everything=True)


def fold(text: str) -> str:
    """A path as a case-insensitive file system compares it (as the secret globs are compared)."""
    return _HFS_IGNORED.sub("", text).casefold()


def hooks_reason(rules: HostRunRules, path: Path) -> str:
    """Why ``path`` lies in a hooks folder a repository on its way configures ("" when none does).

    Every repository whose work tree holds ``path`` counts (a nested one and the one around it):
    their tops are found by looking for ``.git`` upwards, then each one's hooks folders are read.
    """
    if rules.hooks_path is None:
        return ""
    text = fold(str(path))
    for top in rules.repository_tops(path.parent):
        for value, folder in rules.hooks_path(top):
            base = fold(str(folder))
            if text == base or text.startswith(base.rstrip("/") + "/"):
                return HOOKS_PATH_REASON.format(value=value)
    return ""
