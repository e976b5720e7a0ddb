"""Files under the workspace roots as MCP resources (``file://`` URIs, with a template).

A server makes one at start and lists no resource before a client asks, so the walker, the text
reader and the resource records (:mod:`codeward.serving.file_content`) are imported on first use.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from codeward.kernel.result import Result
from codeward.kernel.workspace import Workspace

if TYPE_CHECKING:
    from codeward.kernel.providers import ResourceData, ResourceInfo, ResourceTemplateInfo
    from codeward.serving.file_content import FileContent


class FileResources:
    """A :class:`~codeward.kernel.providers.ResourceProvider` for the workspace's files."""

    def __init__(self) -> None:
        self._made: FileContent | None = None

    def _content(self) -> FileContent:
        if self._made is None:
            # Deferred: the walker, the text reader and the records come with the first resource asked for.
            from codeward.serving.file_content import FileContent

            self._made = FileContent()
        return self._made

    def list_resources(self, workspace: Workspace) -> Sequence[ResourceInfo]:
        return self._content().list_resources(workspace)

    def list_templates(self, workspace: Workspace) -> Sequence[ResourceTemplateInfo]:
        return self._content().list_templates(workspace)

    def owns(self, uri: str) -> bool:
        return uri.startswith("file:")

    def read(self, uri: str, workspace: Workspace) -> Result[ResourceData]:
        return self._content().read(uri, workspace)

    def complete(self, uri_template: str, argument: str, prefix: str, workspace: Workspace) -> list[str]:
        return self._content().complete(uri_template, argument, prefix, workspace)
