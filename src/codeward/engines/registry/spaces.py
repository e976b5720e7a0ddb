"""The places items live — ``.ai/`` under the primary root, the user's ``~/.ai/`` and, when one
is configured, a shared hub folder — and the item files in them.

Both are walked with the same gate as every listing tool (:func:`codeward.engines.files.walk.walk`), so
a symlink cannot pull an outside file into the registry and blacklisted files never appear.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from codeward.engines.files.walk import walk
from codeward.engines.registry.items import Kind, Space
from codeward.engines.registry.settings import PROJECT_DIR_NAME, RegistrySettings
from codeward.kernel.workspace import Workspace

SKIPPED_FOLDERS = frozenset({"lib", "__pycache__", "outputs"})
"""Folders under a kind's folder that hold no items (``tools/lib`` is shared library code)."""


@dataclass(frozen=True)
class ItemFile:
    path: Path
    kind: Kind
    space: Space
    display: str


@dataclass(frozen=True)
class Spaces:
    """The project and user spaces of one workspace."""

    workspace: Workspace
    settings: RegistrySettings

    @property
    def project_dir(self) -> Path:
        return self.workspace.primary / PROJECT_DIR_NAME

    @property
    def user_dir(self) -> Path:
        return self.settings.user_dir

    def root(self, space: Space) -> Path:
        if space is Space.HUB:
            return self.settings.hub_dir or self.user_dir / "hub-not-configured"
        return self.project_dir if space is Space.PROJECT else self.user_dir

    def folder(self, space: Space, kind: Kind) -> Path:
        return self.root(space) / kind.folder

    def display(self, path: Path, space: Space) -> str:
        """Project paths relative to the root (``.ai/tools/x.py``); user paths as ``~/.ai/...``."""
        if space is Space.PROJECT:
            return self.workspace.display(path)
        if space is Space.HUB:
            try:
                return f"hub:{path.relative_to(self.root(Space.HUB).resolve()).as_posix()}"
            except ValueError:
                return str(path)
        try:
            rel = path.relative_to(self.user_dir)
        except ValueError:
            return str(path)
        home = Path.home()
        base = f"~/{self.user_dir.relative_to(home)}" if self.user_dir.is_relative_to(home) else str(self.user_dir)
        return f"{base}/{rel.as_posix()}"

    def gate(self, space: Space) -> Workspace | None:
        """The workspace that checks paths of a space (``None`` if the user space does not exist)."""
        if space is Space.PROJECT:
            return self.workspace
        if space is Space.HUB and self.settings.hub_dir is None:
            return None
        try:
            return Workspace.create([self.root(space)], blacklist=self.workspace.blacklist_globs,
                                    host_run=self.workspace.host_run).with_host_run_consent(
                                        self.workspace.host_run_consent)
        except ValueError:
            return None

    def files(self) -> Iterator[ItemFile]:
        """Every item file of both spaces, project first."""
        for space in (Space.PROJECT, Space.USER, Space.HUB):
            gate = self.gate(space)
            if gate is None:
                continue
            for kind in Kind:
                top = self.folder(space, kind)
                try:
                    real = top.resolve()
                except OSError:
                    continue
                if not real.is_dir() or not gate.contains(real):
                    continue
                for entry in walk(gate, real, gitignore=False, include_dirs=False):
                    parts = entry.rel.split("/")
                    if entry.path.suffix != kind.suffix or any(p in SKIPPED_FOLDERS or p.startswith(".")
                                                                for p in parts):
                        continue
                    yield ItemFile(entry.path, kind, space, self.display(entry.path, space))
