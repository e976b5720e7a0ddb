"""Files under the workspace roots as MCP resources (``file://`` URIs, with a template): the work of
:class:`codeward.serving.file_resources.FileResources`, imported with the first resource a client
lists or reads.

Reads go through the Workspace gate like every tool; listings use the gated walker, so
nothing outside the roots or blacklisted ever appears. codeward's own configuration — the files
the server was started with (a gateway's, which may hold upstream tokens) and every
``codeward.toml`` — is neither listed nor read.
"""

from __future__ import annotations

import mimetypes
import os
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote, unquote, urlparse

from codeward.engines.files.textfile import decode, read_checked
from codeward.engines.files.walk import walk
from codeward.kernel.content import displayable
from codeward.kernel.providers import ResourceData, ResourceInfo, ResourceTemplateInfo
from codeward.kernel.result import ErrorKind, Result
from codeward.kernel.workspace import CONFIG_FILE_NAMES, Workspace

MAX_LISTED_RESOURCES = 500
MAX_RESOURCE_BYTES = 10 * 1024 * 1024
MAX_COMPLETIONS = 100


def configuration(path: Path, workspace: Workspace) -> bool:
    """Whether ``path`` (resolved) is codeward's configuration, which no resource shows."""
    return path in workspace.protected_files or path.name.casefold() in CONFIG_FILE_NAMES


def file_uri(path: Path) -> str:
    return "file://" + quote(path.as_posix())


def template_for(root: Path) -> str:
    """The resource template of one root: its files by relative path."""
    return file_uri(root).rstrip("/") + "/{path}"


class FileContent:
    """A :class:`~codeward.kernel.providers.ResourceProvider` for the workspace's files."""

    def list_resources(self, workspace: Workspace) -> Sequence[ResourceInfo]:

        found: list[ResourceInfo] = []
        for root in workspace.roots:
            for entry in walk(workspace, root, include_dirs=False):
                if configuration(Path(os.path.realpath(entry.path)), workspace):
                    continue
                try:
                    size = entry.path.stat().st_size
                except OSError:
                    continue
                mime = mimetypes.guess_type(entry.path.name)[0] or "text/plain"
                found.append(ResourceInfo(file_uri(entry.path), workspace.display(entry.path), mime_type=mime,
                                          size=size))
                if len(found) >= MAX_LISTED_RESOURCES:
                    return found
        return found

    def list_templates(self, workspace: Workspace) -> Sequence[ResourceTemplateInfo]:

        return [ResourceTemplateInfo(template_for(root), f"file under {root.name or root}",
                                     f"Any file under {root}, by its path relative to that folder.")
                for root in workspace.roots]

    def owns(self, uri: str) -> bool:
        return uri.startswith("file:")

    def read(self, uri: str, workspace: Workspace) -> Result[ResourceData]:

        empty = ResourceData(uri, "text/plain", text="")
        parsed = urlparse(uri)
        if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
            return Result.fail(ErrorKind.INVALID_INPUT, f"not a local file URI: {uri}",
                               "Use file:///absolute/path/under/a/root (see resources/templates/list).", data=empty)
        raw = unquote(parsed.path)
        resolved = workspace.resolve(raw, param="uri")
        if not resolved.ok:
            return resolved.cast(empty)
        path = resolved.data
        display = workspace.display(path)
        if configuration(path, workspace):
            return Result.fail(ErrorKind.PERMISSION, f"{display} is codeward's configuration, which is not served as "
                               "a resource", "Ask the user for the setting you need.", data=empty)
        if not path.is_file():
            return Result.fail(ErrorKind.NOT_FOUND, f"no such file: {display}",
                               "List resources to see the available files.", data=empty)
        read = read_checked(path, display, workspace, limit=MAX_RESOURCE_BYTES, reader="resources",
                            hint="Read it in parts with the read_file tool (offset/limit).")
        if not read.ok:
            return read.cast(empty)
        data = read.data
        mime = mimetypes.guess_type(path.name)[0]
        decoded = decode(data)
        if decoded is None:
            return Result.success(ResourceData(uri, mime or "application/octet-stream", blob=data))
        return Result.success(ResourceData(uri, mime or "text/plain", text=displayable(decoded.text)))

    def complete(self, uri_template: str, argument: str, prefix: str, workspace: Workspace) -> list[str]:
        root = next((r for r in workspace.roots if template_for(r) == uri_template), None)
        if root is None or argument != "path":
            return []
        folder, _, stem = prefix.rpartition("/")
        resolved = workspace.resolve(str(root / folder) if folder else str(root))
        if not resolved.ok or not resolved.data.is_dir():
            return []
        out: list[str] = []
        for entry in walk(workspace, resolved.data, max_depth=1):
            if entry.path.name.startswith(stem):
                name = f"{folder}/{entry.path.name}" if folder else entry.path.name
                out.append(name + ("/" if entry.is_dir else ""))
                if len(out) >= MAX_COMPLETIONS:
                    break
        return out
