"""The recorder one tool call writes through: what each path was before the call changed it.

The checkpoint step (:class:`~codeward.engines.checkpoints.step.RecordChanges`) opens a
:class:`Journal` for every call of a tool that is not read-only, notes the
paths the tool declares it writes (``ToolSpec.write_paths``) before the tool runs, hands the
journal to the tool as ``ctx.call.journal``, and commits it when the tool returns: each noted path
whose state changed becomes a change of the call's checkpoint. So a tool that writes only the
files its arguments name needs to do nothing; a tool that writes other files (a patch, a
rename across files, a command's write-back) calls :meth:`Journal.before` for each before
writing it — ``write_text``/``atomic_write`` do it when given the journal — and a move or a
deletion is recorded with :meth:`Journal.moved` / :meth:`Journal.trash`.

Recording never stops a write: when the store cannot be written (a full disk, ``.codeward``
planted as a link), the call goes ahead and its result says it has no checkpoint. Deleting is
the exception — :meth:`Journal.trash_slot` raises, and ``delete_path`` refuses.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from codeward.config.checkpoints import CheckpointSettings
from codeward.engines.checkpoints.states import ABSENT, FileState, capture, state_of
from codeward.engines.checkpoints.store import MAX_FILE_BYTES, Change, CheckpointStore, Record, store_for
from codeward.kernel.context import ToolContext
from codeward.kernel.workspace import Workspace

MEMORY_BUDGET = 64 << 20
"""Earlier contents a call holds in memory until it commits; past this they go to the store at once
(a call that then changes nothing leaves them there until the store next collects)."""


def store_root(workspace: Workspace, path: Path | None = None) -> Path:
    """The root whose store holds records (the primary), or, for a trash slot, the root holding ``path``."""
    if path is not None:
        holding = [root for root in workspace.roots if path.is_relative_to(root)]
        if holding:
            return max(holding, key=lambda root: len(root.parts))
    return workspace.primary


@dataclass
class Journal:
    """What one tool call changes. Thread-safe: a tool may write from worker threads."""

    workspace: Workspace
    tool: str
    summary: str
    settings: CheckpointSettings = field(default_factory=CheckpointSettings)
    kind: Literal["edit", "undo"] = "edit"
    reverts: list[int] = field(default_factory=list)
    _before: dict[Path, FileState] = field(default_factory=dict)
    _kept: dict[Path, bytes] = field(default_factory=dict)
    _special: dict[Path, Change] = field(default_factory=dict)
    _problems: list[str] = field(default_factory=list)
    _guard: threading.Lock = field(default_factory=threading.Lock)

    @property
    def store(self) -> CheckpointStore:
        return store_for(store_root(self.workspace), self.settings)

    def before(self, path: Path) -> None:
        """Remember ``path``'s state before this call's first change to it (later calls are no-ops).

        A file's bytes are held until :meth:`commit`, which keeps them in the store only if the
        file changed: a call that changes nothing leaves no trace.
        """
        with self._guard:
            if path in self._before or path in self._special:
                return
            try:
                state, data = capture(path, MAX_FILE_BYTES)
            except OSError as exc:
                state, data = ABSENT, None
                self._problem(f"{self.workspace.display(path)} could not be snapshotted ({exc.strerror or exc})")
            if data is not None and sum(map(len, self._kept.values())) + len(data) > MEMORY_BUDGET:
                try:
                    self.store.put_blob(data)
                    state, data = state.model_copy(update={"stored": True}), None
                except OSError as exc:
                    self._problem(f"the checkpoint store cannot be written ({exc.strerror or exc})")
            self._before[path] = state
            if data is not None:
                self._kept[path] = data

    def moved(self, source: Path, destination: Path, state: FileState) -> None:
        """Record that ``source`` (which was ``state``) was renamed to ``destination``."""
        with self._guard:
            self._before.pop(source, None)
            if self._before.get(destination) == ABSENT:
                del self._before[destination]  # the move's own record makes it appear and go
            self._special[source] = Change(path=str(source), before=state, after=ABSENT,
                                           moved_to=str(destination))

    def trash_slot(self, path: Path) -> Path:
        """A fresh folder in the trash of the root holding ``path`` (same file system: a rename).

        Raises ``OSError`` (``StoreError``) when the store cannot be written: nothing may be
        deleted then.
        """
        return store_for(store_root(self.workspace, path), self.settings).trash_slot()

    def trashed(self, path: Path, item: Path, state: FileState, size: int) -> None:
        """Record that ``path`` (which was ``state``) now lies at ``item`` in a trash slot."""
        with self._guard:
            self._before.pop(path, None)
            self._special[path] = Change(path=str(path), before=state, after=ABSENT, trash=str(item), size=size)

    def touched(self) -> list[Path]:
        with self._guard:
            return [*self._before, *self._special]

    def commit(self) -> Record | None:
        """Write the checkpoint of what changed (None when nothing did, or it could not be written)."""
        changes: list[Change] = []
        with self._guard:
            try:
                # Folders before what they hold: undo, going backwards, then empties a folder before removing it.
                for path, before in sorted(self._before.items(), key=lambda item: item[0].parts):
                    try:
                        after = state_of(path)
                    except OSError as exc:
                        self._problem(f"{self.workspace.display(path)} could not be read back "
                                      f"({exc.strerror or exc})")
                        continue
                    if before.same_as(after) and before.mode == after.mode:
                        continue
                    data = self._kept.get(path)
                    if data is not None:
                        self.store.put_blob(data)
                        before = before.model_copy(update={"stored": True})
                    changes.append(Change(path=str(path), before=before, after=after,
                                          size=before.size if before.stored else 0))
                changes.extend(self._special.values())
                if not changes:
                    return None
                return self.store.add(self.kind, self.tool, self.summary, changes, self.reverts)
            except OSError as exc:
                self._problem(f"the checkpoint could not be written ({exc.strerror or exc})")
                return None
            finally:
                self._kept.clear()

    @property
    def problems(self) -> list[str]:
        with self._guard:
            return list(self._problems)

    def _problem(self, text: str) -> None:
        if text not in self._problems:
            self._problems.append(text)


def trash_size(path: Path) -> int:
    """Bytes under ``path`` (a file, or a tree walked without following links)."""
    try:
        info = os.lstat(path)
    except OSError:
        return 0
    if not os.path.isdir(path) or os.path.islink(path):
        return info.st_size
    total = 0
    for folder, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                continue
    return total


def journal_of(ctx: ToolContext) -> Journal | None:
    """This call's journal with all it records (moves, deletions, undo); None outside a recorded call."""
    journal = ctx.call.journal
    return journal if isinstance(journal, Journal) else None
