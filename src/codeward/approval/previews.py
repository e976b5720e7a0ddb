"""What an approval prompt shows: the diff an edit would make, the command a call would run.

A person asked to approve ``edit_file({"path": ..., "old_string": ..., ...})`` judges JSON
poorly and a diff well. For codeward's own tools that write files, :func:`preview_call` runs the
call for real — on copies: the files and folders it names for writing are copied into a scratch
workspace (same relative paths; links and modes kept), the call runs there, and what changed is
shown as a unified diff, with git's mode lines where a file's executable bit changes or a link
appears. The project is never touched, and no tool needs a preview of its own. For tools that
execute something (a shell script, code, a test command) the command is shown; for anything
else, nothing beyond the arguments.

The diff itself is :func:`codeward.engines.files.tree_diff.tree_diff`.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from codeward.config.checkpoints import CheckpointSettings
from codeward.engines.files.tree_diff import MAX_READ, tree_diff
from codeward.kernel.catalog import Catalog
from codeward.kernel.context import ToolContext
from codeward.kernel.host_run import EVERY_WRITE
from codeward.kernel.workspace import Access, Workspace

MAX_PREVIEW_CHARS = 20_000
MAX_COPIED_BYTES = MAX_READ
"""The most a preview copies (in all) to run a call on; a bigger call is asked about without a diff."""
MAX_COPIED_ENTRIES = 2_000
COMMAND_ARGUMENTS = ("script", "command", "code", "cmd", "shell_command", "patch")
"""Arguments that hold what a call runs (or, for a patch, the diff itself): shown as they are."""


@dataclass(frozen=True)
class Preview:
    kind: Literal["diff", "command"]
    text: str

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "text": self.text}


def preview_call(catalog: Catalog | None, name: str, arguments: Mapping[str, Any], ctx: ToolContext | None
                 ) -> Preview | None:
    """The diff or command to show for a call waiting for approval (None when there is nothing better than
    its arguments). Never raises, never changes the project."""
    try:
        spec = catalog.get(name) if catalog is not None else None
        if catalog is not None and spec is not None and ctx is not None and not spec.annotations.read_only:
            if spec.preview is not None:
                own = spec.preview(arguments, ctx)
                return Preview("diff", _bounded(own)) if own else command_preview(arguments)
            fields = spec.input_model.model_fields
            if "apply" in fields and arguments.get("apply", False) is not True:
                return None  # a dry run itself: nothing is written
            if "apply" in fields:  # a tool that shows its own diff when not applying
                return _own_diff(catalog, name, {**arguments, "apply": False}, ctx)
            path_args = {field for field in fields if field.endswith("path")}
            if spec.write_paths and path_args <= set(spec.write_paths):
                diff = _diff_on_copies(catalog, name, arguments, ctx)
                if diff is not None:
                    return diff
        return command_preview(arguments)
    except Exception:  # a preview is a courtesy: the prompt still shows the arguments
        return None


def _own_diff(catalog: Catalog, name: str, arguments: Mapping[str, Any], ctx: ToolContext) -> Preview | None:
    # a dry run (apply=False) writes nothing: host-run files it would change are shown like the rest
    dry = replace_context(ctx, ctx.workspace.with_host_run_consent(EVERY_WRITE))
    outcome = catalog.call(name, dict(arguments), dry)
    diff = (outcome.structured or {}).get("diff")
    return Preview("diff", _bounded(diff)) if isinstance(diff, str) and diff.strip() and not outcome.is_error \
        else None


def command_preview(arguments: Mapping[str, Any]) -> Preview | None:
    for key in COMMAND_ARGUMENTS:
        value = arguments.get(key)
        if isinstance(value, str) and value.strip():
            kind: Literal["diff", "command"] = "diff" if key == "patch" else "command"
            return Preview(kind, _bounded(value))
    return None


def _diff_on_copies(catalog: Catalog, name: str, arguments: Mapping[str, Any], ctx: ToolContext) -> Preview | None:
    spec = catalog.get(name)
    assert spec is not None
    # the preview only reads the project: host-run paths it names are copied like any other
    workspace = ctx.workspace.with_host_run_consent(EVERY_WRITE)
    primary = workspace.primary
    with tempfile.TemporaryDirectory(prefix="codeward-preview-") as scratch:
        copy_root = Path(scratch) / "root"
        copy_root.mkdir()
        targets: list[tuple[str, Path]] = []
        budget = _Budget()
        for param in spec.write_paths:
            raw = arguments.get(param)
            if not isinstance(raw, str):
                continue
            resolved = workspace.resolve(raw, Access.WRITE, param=param)
            if not resolved.ok or not resolved.data.is_relative_to(primary):
                return None  # the call itself will be refused; nothing to preview
            lexical = Path(os.path.normpath(raw if os.path.isabs(raw) else primary / raw))
            originals = [resolved.data]
            if os.path.islink(lexical) and lexical.is_relative_to(primary):  # the link itself (a move, a
                originals.insert(0, lexical)  # deletion) and what it leads to (a write through it)
            for original in originals:
                rel = original.relative_to(primary).as_posix()
                if (rel, original) in targets:
                    continue
                if not _copy(original, copy_root / rel, budget):
                    return None
                targets.append((rel, original))
        if not targets:
            return None
        scratch_ctx = _scratch_context(ctx, Workspace.create([copy_root], blacklist=workspace.blacklist_globs,
                                                             host_run=workspace.host_run
                                                             ).with_host_run_consent(EVERY_WRITE))
        outcome = catalog.call(name, dict(arguments), scratch_ctx)
        if outcome.is_error:
            return None
        text = "".join(tree_diff(original, copy_root / rel, rel) for rel, original in targets)
        return Preview("diff", _bounded(text)) if text.strip() else None


@dataclass
class _Budget:
    """What a preview may still copy."""

    bytes: int = MAX_COPIED_BYTES
    entries: int = MAX_COPIED_ENTRIES

    def take(self, size: int) -> bool:
        self.bytes -= size
        self.entries -= 1
        return self.bytes >= 0 and self.entries >= 0


def _copy(original: Path, copy: Path, budget: _Budget) -> bool:
    """Copy a file, link or folder (links as links, modes kept) within the budget; False when over it."""
    copy.parent.mkdir(parents=True, exist_ok=True)
    try:
        info = original.lstat()
    except FileNotFoundError:
        return True  # the call creates it
    if stat.S_ISLNK(info.st_mode):
        os.symlink(os.readlink(original), copy)
        return budget.take(0)
    if stat.S_ISREG(info.st_mode):
        if not budget.take(info.st_size):
            return False
        shutil.copy2(original, copy)
        return True
    if not stat.S_ISDIR(info.st_mode):
        return True  # a special file: nothing a diff shows
    copy.mkdir()
    os.chmod(copy, stat.S_IMODE(info.st_mode))
    for entry in sorted(os.listdir(original)):
        if not _copy(original / entry, copy / entry, budget):
            return False
    return budget.take(0)


def replace_context(ctx: ToolContext, workspace: Workspace) -> ToolContext:
    """``ctx`` over another workspace, recording no checkpoints and talking to no client."""
    return ToolContext(workspace, settings=ctx.settings,
                       services=ctx.services.with_values(CheckpointSettings(enabled=False)))


def _scratch_context(ctx: ToolContext, workspace: Workspace) -> ToolContext:
    """``ctx`` over a scratch copy, talking to no client; checkpoints are kept (in the copy), since
    moving and deleting keep what they remove there."""
    return ToolContext(workspace, settings=ctx.settings, services=ctx.services)


def _bounded(text: str) -> str:
    if len(text) <= MAX_PREVIEW_CHARS:
        return text
    return text[:MAX_PREVIEW_CHARS] + f"\n[... {len(text) - MAX_PREVIEW_CHARS:,} more characters ...]\n"

