"""Undo: put the project back as it was before some tool calls, never over someone else's work.

A record is *in effect* until an undo reverts it (and an undo is in effect until another undo,
a redo, reverts it). Undoing N steps reverts the newest N edit records in effect; undoing to
a checkpoint reverts it and every edit record in effect after it; undoing an undo record puts
back what it took away (a redo).

Before anything is written, every path the undo would touch is compared with what codeward
last left there (the newest record's "after"). A path that differs was changed outside
codeward since — by a person, an editor, a build — and the undo refuses, naming each such path,
unless forced; a folder the undo would remove that holds files codeward did not put there
counts too. Everything the undo itself changes goes through the workspace gate and is recorded
in a record of its own (kind ``undo``), so an undo, forced or not, can be undone.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from codeward.engines.checkpoints.journal import Journal, trash_size
from codeward.engines.checkpoints.states import ABSENT, FileState, state_of
from codeward.engines.checkpoints.store import Change, CheckpointStore, Record
from codeward.engines.files.links import link_refusal
from codeward.engines.files.textfile import PathChanged, atomic_write
from codeward.engines.files.tree_diff import tree_diff
from codeward.kernel.host_run import NEEDS_PERSON
from codeward.kernel.result import ErrorKind, Result
from codeward.kernel.workspace import Access, Workspace


def in_effect(records: list[Record]) -> set[int]:
    """Ids of the records no undo (itself in effect) has reverted."""
    effective: set[int] = set()
    reverted: set[int] = set()
    for record in reversed(records):
        if record.id in reverted:
            continue
        effective.add(record.id)
        reverted.update(record.reverts)
    return effective


def reverted_by(records: list[Record]) -> dict[int, int]:
    """For each reverted record, the undo (in effect) that reverted it."""
    effective = in_effect(records)
    return {target: record.id for record in records if record.id in effective for target in record.reverts}


def select(records: list[Record], steps: int | None, checkpoint: int | None) -> Result[list[Record]]:
    """The records an undo reverts, oldest first, or an error saying why there are none."""
    effective = in_effect(records)
    active = [record for record in records if record.kind == "edit" and record.id in effective]
    if checkpoint is None:
        count = steps or 1
        if not active:
            return Result.fail(ErrorKind.NOT_FOUND, "there is nothing to undo: no tool call in effect changed a file",
                               "list_checkpoints shows what was recorded and what was undone already.", data=[])
        return Result.success(active[-count:])
    by_id = {record.id: record for record in records}
    chosen = by_id.get(checkpoint)
    if chosen is None:
        oldest = records[0].id if records else None
        known = f" (kept: {oldest}-{records[-1].id})" if oldest is not None else " (none are kept)"
        return Result.fail(ErrorKind.NOT_FOUND, f"there is no checkpoint {checkpoint}{known}",
                           "list_checkpoints shows the checkpoints that can be undone.", data=[])
    if chosen.id not in effective:
        by = reverted_by(records).get(chosen.id)
        return Result.fail(ErrorKind.CONFLICT, f"checkpoint {checkpoint} was already undone (by {by})",
                           f"To put it back, undo the undo: checkpoint={by}.", data=[])
    if chosen.kind == "undo":
        paths = _paths(chosen)
        later = [record.id for record in active if record.id > chosen.id and _paths(record) & paths]
        if later:
            return Result.fail(ErrorKind.CONFLICT, f"checkpoint {checkpoint} is an undo, and later tool calls "
                               f"({', '.join(map(str, later))}) changed the same files",
                               f"Undo those first (checkpoint={later[0]}), then redo this one.", data=[])
        return Result.success([chosen])
    return Result.success([record for record in active if record.id >= chosen.id])


@dataclass
class Outcome:
    """What an undo did."""

    reverted: list[int]
    restored: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    forced: list[str] = field(default_factory=list)


@dataclass
class Rewind:
    """One undo of ``records`` (oldest first) in ``workspace``, recorded through ``journal``."""

    workspace: Workspace
    store: CheckpointStore
    history: list[Record]
    records: list[Record]
    journal: Journal

    def conflicts(self) -> list[str]:
        """Each path the undo would change that is not as codeward left it, described."""
        reverting = {record.id for record in self.records}
        found: list[str] = []
        for path, (expected, touched_by) in sorted(_expected_now(self.history).items()):
            if not touched_by & reverting:
                continue
            try:
                now = state_of(path)
            except OSError as exc:
                found.append(f"{self._show(path)}: cannot be read ({exc.strerror})")
                continue
            if not now.same_as(expected):
                found.append(f"{self._show(path)}: now {now.describe()}, codeward left {expected.describe()}")
        found.extend(self._foreign_content())
        return found

    def unrestorable(self) -> list[str]:
        """Changes the undo cannot put back (contents too big to have been kept, a link leading out)."""
        problems: list[str] = []
        for change in self._changes():
            before = change.before
            if before.kind == "file" and not before.stored and not (change.moved_to or change.trash):
                problems.append(f"{self._show(Path(change.path))}: its earlier contents ({before.size:,} bytes) "
                                "were too big to keep")
            if before.kind == "other" and not (change.moved_to or change.trash):
                problems.append(f"{self._show(Path(change.path))}: it was a special file, which undo cannot make")
            if change.trash and not os.path.lexists(change.trash):
                problems.append(f"{self._show(Path(change.path))}: its copy in the trash is gone")
        return problems

    def written(self) -> list[Path]:
        """Every path the undo writes: each change's path, and where a move put it."""
        paths: dict[Path, None] = {}
        for change in self._changes():
            paths[Path(change.path)] = None
            if change.moved_to:
                paths[Path(change.moved_to)] = None
        return list(paths)

    def needs_person(self) -> list[str]:
        """Why each host-run path the undo would write needs a person's approval (see
        :mod:`codeward.kernel.host_run`): checked before anything is written, so an undo is asked about
        whole instead of skipping those paths."""
        found: list[str] = []
        for path in self.written():
            resolved = self.workspace.resolve(str(path), Access.WRITE)
            found += [error.message for error in resolved.errors if error.source == NEEDS_PERSON]
        return found

    def preview(self) -> str:
        """The diff this undo would make, path by path (what a person approving it sees)."""
        final: dict[Path, Change] = {}
        for change in self._changes():  # newest first: the oldest change of a path says what it goes back to
            final[Path(change.path)] = change
            if change.moved_to:
                final.setdefault(Path(change.moved_to), Change(path=change.moved_to, before=ABSENT, after=ABSENT))
        chunks: list[str] = []
        with tempfile.TemporaryDirectory(prefix="codeward-undo-") as scratch:
            for index, (path, change) in enumerate(sorted(final.items())):
                chunks.append(tree_diff(path, self._earlier(change, Path(scratch) / str(index)), self._show(path)))
        return "".join(chunks)

    def _earlier(self, change: Change, place: Path) -> Path:
        """Where ``change``'s earlier state can be read: its trash copy, where a move took it, or
        ``place`` made from the store (missing for an absent path)."""
        if change.trash:
            return Path(change.trash)
        if change.moved_to:
            return Path(change.moved_to)
        before = change.before
        if before.kind == "dir":
            place.mkdir()
        elif before.kind == "link":
            os.symlink(before.target, place)
        elif before.kind == "file" and before.stored:
            with contextlib.suppress(OSError):
                place.write_bytes(self.store.get_blob(before.digest))
                os.chmod(place, before.mode)
        return place

    def run(self) -> Outcome:
        """Revert every change, newest first. Call after :meth:`conflicts` said yes (or force)."""
        outcome = Outcome(reverted=[record.id for record in self.records])
        for change in self._changes():
            path = Path(change.path)
            done = self._revert(change)
            (outcome.restored if done.ok else outcome.skipped).append(
                f"{self._show(path)}" + ("" if done.ok else f": {done.errors[0].message}"))
        return outcome

    # -- planning -----------------------------------------------------------------------------

    def _changes(self) -> list[Change]:
        """Every change of the records, newest first (the order they are reverted in)."""
        return [change for record in reversed(self.records) for change in reversed(record.changes)]

    def _foreign_content(self) -> list[str]:
        """Folders the undo would remove that hold entries no reverted change accounts for."""
        going = {Path(c.path) for c in self._changes() if c.before.kind == "absent"}
        going |= {Path(c.moved_to) for c in self._changes() if c.moved_to}
        found: list[str] = []
        for change in self._changes():
            path = Path(change.path)
            if change.before.kind != "absent" or change.after.kind != "dir":
                continue
            try:
                entries = [path / name for name in os.listdir(path)]
            except OSError:
                continue
            foreign = [entry for entry in entries if entry not in going]
            if foreign:
                shown = ", ".join(self._show(entry) for entry in foreign[:5]) + (" ..." if len(foreign) > 5 else "")
                found.append(f"{self._show(path)}: codeward made this folder, and it now holds {shown}")
        return found

    def _show(self, path: Path) -> str:
        return self.workspace.display(path)

    # -- reverting one change -----------------------------------------------------------------

    def _gate(self, path: Path) -> Result[Path]:
        """``path`` through the gate for writing, and still the same path once resolved."""
        resolved = self.workspace.resolve(str(path), Access.WRITE)
        if not resolved.ok:
            return resolved
        if resolved.data != path and os.path.lexists(path):
            return Result.fail(ErrorKind.PERMISSION, "it now resolves elsewhere (through a link)", data=path)
        return resolved

    def _revert(self, change: Change) -> Result[None]:
        path = Path(change.path)
        gated = self._gate(path)
        if not gated.ok:
            return gated.cast(None)
        if change.moved_to:
            return self._move_back(Path(change.moved_to), path, change.before)
        if change.trash:
            return self._move_back(Path(change.trash), path, change.before, from_trash=True)
        return self._restore(path, change.before)

    def _move_back(self, source: Path, destination: Path, state: FileState, *, from_trash: bool = False
                   ) -> Result[None]:
        if not from_trash:
            gated = self._gate(source)
            if not gated.ok:
                return gated.cast(None)
        elif not self._trash_owned(source):
            return Result.fail(ErrorKind.PERMISSION, "its trash copy is not in a codeward trash folder")
        if not os.path.lexists(source):
            return Result.fail(ErrorKind.NOT_FOUND, f"{self._show(source)} is gone")
        if os.path.lexists(destination):
            return Result.fail(ErrorKind.CONFLICT, "something is there now")
        try:
            destination.parent.mkdir(parents=True, exist_ok=True)
            if from_trash:
                self.journal.before(destination)
                os.rename(source, destination)
                with contextlib.suppress(OSError):
                    os.rmdir(source.parent)  # the emptied trash slot
            else:
                self.journal.moved(source, destination, state_of(source))
                os.rename(source, destination)
        except OSError as exc:
            return Result.fail(ErrorKind.PERMISSION, exc.strerror or str(exc))
        return Result.success(None)

    def _trash_owned(self, item: Path) -> bool:
        trash = item.parent.parent
        return trash.name == "trash" and trash.parent.name == "checkpoints" and trash.parent.parent.name == ".codeward"

    def _restore(self, path: Path, state: FileState) -> Result[None]:
        self.journal.before(path)
        try:
            if state.kind == "absent":
                return self._remove(path)
            if state.kind == "dir":
                path.mkdir(parents=True, exist_ok=True)
                os.chmod(path, state.mode or 0o755)
                return Result.success(None)
            if state.kind == "file" and state.stored:
                data = self.store.get_blob(state.digest)
                path.parent.mkdir(parents=True, exist_ok=True)
                if os.path.islink(path) or os.path.isdir(path):
                    self._remove(path)
                atomic_write(path, data, self.workspace)
                os.chmod(path, state.mode)
                return Result.success(None)
            if state.kind == "link":
                return self._relink(path, state.target)
        except PathChanged as exc:
            return Result.fail(ErrorKind.PERMISSION, exc.strerror or str(exc))
        except OSError as exc:
            return Result.fail(ErrorKind.PERMISSION, exc.strerror or str(exc))
        return Result.fail(ErrorKind.UNAVAILABLE, f"its earlier state ({state.describe()}) cannot be made again")

    def _remove(self, path: Path) -> Result[None]:
        if not os.path.lexists(path):
            return Result.success(None)
        if os.path.isdir(path) and not os.path.islink(path):
            try:
                os.rmdir(path)
            except OSError:
                return self._to_trash(path)  # forced over foreign content: keep it, recoverably
            return Result.success(None)
        os.unlink(path)
        return Result.success(None)

    def _to_trash(self, path: Path) -> Result[None]:
        state = state_of(path)
        slot = self.journal.trash_slot(path)
        item = slot / path.name
        os.rename(path, item)
        self.journal.trashed(path, item, state, trash_size(item))
        return Result.success(None)

    def _relink(self, path: Path, target: str) -> Result[None]:
        refused = link_refusal(self.workspace, path, target)  # where it leads now, as the kernel follows it
        if refused:
            return Result.fail(ErrorKind.PERMISSION, f"it was a link to {target}: {refused}; codeward does not "
                               "make such links")
        if os.path.lexists(path):
            self._remove(path)
        os.symlink(target, path)
        return Result.success(None)


def _paths(record: Record) -> set[str]:
    return {change.path for change in record.changes} | {c.moved_to for c in record.changes if c.moved_to}


def _expected_now(history: Iterable[Record]) -> dict[Path, tuple[FileState, set[int]]]:
    """What codeward last left at each path, replaying every record in order, and which records touched it.

    A move carries what was recorded under its source along to the destination, and a deletion
    (to the trash) takes everything under it away: a file edited and then deleted with its folder
    is expected absent, not as edited.
    """
    known: dict[Path, tuple[FileState, set[int]]] = {}
    for record in history:
        for change in record.changes:
            path = Path(change.path)
            inside = [key for key in known if key != path and key.is_relative_to(path)]
            if change.moved_to:
                destination = Path(change.moved_to)
                for key in inside:  # carried along, not changed: only the records that changed them care
                    known[destination / key.relative_to(path)] = known.pop(key)
                earlier = known.get(path, (change.before, set()))[1]
                known[destination] = (change.before, earlier | {record.id})
                known[path] = (ABSENT, earlier | {record.id})
                continue
            if change.trash:
                for key in inside:
                    known[key] = (ABSENT, known[key][1])
            known[path] = (change.after, known.get(path, (change.after, set()))[1] | {record.id})
    return known
