"""What an approval prompt shows: the diff an edit would make, the command a call would run.

A person asked to approve ``edit_file({"path": ..., "old_string": ..., ...})`` judges JSON
poorly and a diff well. For codeward's own tools that write files, :func:`preview_call` runs the
call for real — on copies: the files it names for writing are copied into a scratch workspace
(same relative paths), the call runs there with checkpoints off, and what changed is shown as a
unified diff. The project is never touched, and no tool needs a preview of its own. For
tools that execute something (a shell script, code, a test command) the command is shown;
for anything else, nothing beyond the arguments.
"""

from __future__ import annotations

import difflib
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from codeward.config.checkpoints import CheckpointSettings
from codeward.engines.files.textfile import decode
from codeward.kernel.catalog import Catalog
from codeward.kernel.context import ToolContext
from codeward.kernel.workspace import Access, Workspace

MAX_PREVIEW_CHARS = 20_000
MAX_COPIED_BYTES = 8 << 20
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
    outcome = catalog.call(name, dict(arguments), replace_context(ctx, ctx.workspace))
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
    workspace = ctx.workspace
    primary = workspace.primary
    with tempfile.TemporaryDirectory(prefix="codeward-preview-") as scratch:
        copy_root = Path(scratch) / "root"
        copy_root.mkdir()
        targets: list[tuple[str, Path]] = []
        for param in spec.write_paths:
            raw = arguments.get(param)
            if not isinstance(raw, str):
                continue
            resolved = workspace.resolve(raw, Access.WRITE, param=param)
            if not resolved.ok or not resolved.data.is_relative_to(primary):
                return None  # the call itself will be refused; nothing to preview
            rel = resolved.data.relative_to(primary).as_posix()
            copy = copy_root / rel
            copy.parent.mkdir(parents=True, exist_ok=True)
            if resolved.data.is_file():
                if resolved.data.stat().st_size > MAX_COPIED_BYTES:
                    return None
                shutil.copy2(resolved.data, copy)
            targets.append((rel, resolved.data))
        if not targets:
            return None
        scratch_ctx = replace_context(ctx, Workspace.create([copy_root], blacklist=workspace.blacklist_globs))
        outcome = catalog.call(name, dict(arguments), scratch_ctx)
        if outcome.is_error:
            return None
        chunks: list[str] = []
        for rel, original in targets:
            before = _text(original) if original.is_file() else ""
            after_path = copy_root / rel
            after = _text(after_path) if after_path.is_file() else ""
            if before is None or after is None:
                chunks.append(f"(binary file {rel} would change)\n")
                continue
            old_name = f"a/{rel}" if original.exists() else "/dev/null"
            chunks.append("".join(difflib.unified_diff(before.splitlines(keepends=True),
                                                       after.splitlines(keepends=True), old_name, f"b/{rel}")))
        text = "".join(chunks)
        return Preview("diff", _bounded(text)) if text.strip() else None


def replace_context(ctx: ToolContext, workspace: Workspace) -> ToolContext:
    """``ctx`` over another workspace, recording no checkpoints and talking to no client."""
    return ToolContext(workspace, settings=ctx.settings,
                       services=ctx.services.with_values(CheckpointSettings(enabled=False)))


def _text(path: Path) -> str | None:
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_COPIED_BYTES)
    except OSError:
        return ""
    decoded = decode(data)
    return None if decoded is None else decoded.text


def _bounded(text: str) -> str:
    if len(text) <= MAX_PREVIEW_CHARS:
        return text
    return text[:MAX_PREVIEW_CHARS] + f"\n[... {len(text) - MAX_PREVIEW_CHARS:,} more characters ...]\n"

