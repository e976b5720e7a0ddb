"""Manual Slop's ``mcp_client`` entry points, over codeward's one stack.

A script written against Manual Slop calls five functions of its ``mcp_client`` module:
``configure(file_items, extra_base_dirs)``, ``is_allowed(path)``, ``dispatch(tool_name,
tool_input)``, ``async_dispatch(tool_name, tool_input)`` and ``get_tool_schemas()``. Here they are
the methods of one :class:`McpClient` (an object, not module globals: two clients in one process
never share an allowlist)::

    from codeward.apps.mcp_client import McpClient

    client = McpClient()                                   # codeward.toml found from here, as every command
    client.configure([{"path": "src/app.py"}], extra_base_dirs=["."])
    client.is_allowed("src/app.py")                        # True
    print(client.dispatch("read_file", {"path": "src/app.py"}))
    texts = await asyncio.gather(client.async_dispatch("read_file", {"path": "a.py"}), ...)

Every call goes through the same gate (allowlist, blacklist, symlink-safe resolution) and the same
chain of middleware as ``codeward call``: a script's call is a person's call, as on the command line.
A result is the tool's text, an error's included (Manual Slop's tools answered ``"ERROR: ..."``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio

from codeward.config import Config, load_config
from codeward.kernel.workspace import Workspace
from codeward.serving.stack import Stack, build_stack


class McpClient:
    """One configured allowlist and the stack its calls go through."""

    def __init__(self, config: Config | None = None, roots: Sequence[str | Path] = ()) -> None:
        self._stack: Stack = build_stack(config if config is not None else load_config(), roots)
        self._workspace: Workspace = self._stack.workspace

    @property
    def workspace(self) -> Workspace:
        """The allowlist calls are checked against now."""
        return self._workspace

    def configure(self, file_items: Sequence[Mapping[str, Any]],
                  extra_base_dirs: Sequence[str | Path] | None = None) -> None:
        """Rebuild the allowlist as Manual Slop does: each item's ``path``, the folder of each, and the
        existing folders of ``extra_base_dirs``; with none of these, the stack's roots. Nothing is kept
        from a previous call. Relative paths start at the project's root."""
        files = [Path(item["path"]).expanduser().resolve() for item in file_items
                 if isinstance(item.get("path"), str | Path)]
        extra = [Path(d).expanduser().resolve() for d in extra_base_dirs or ()]
        dirs = list(dict.fromkeys([*(f.parent for f in files), *(d for d in extra if d.is_dir())]))
        self._workspace = self._stack.workspace.with_files(files, dirs or None)

    def is_allowed(self, path: str | Path) -> bool:
        """Whether a tool may read ``path`` under the current allowlist (blacklist and links included)."""
        return self._workspace.resolve(str(path)).ok

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        """Every tool a call may name: ``name``, ``description`` and ``input_schema``, as a model is given them."""
        return [{"name": info.name, "description": info.description, "input_schema": dict(info.input_schema)}
                for info in self._stack.surface.tool_infos()]

    async def async_dispatch(self, tool_name: str, tool_input: Mapping[str, Any] | None = None) -> str:
        """One call through the whole chain; the tool's text (an error's too)."""
        outcome = await self._stack.acall(tool_name, dict(tool_input or {}), self._stack.context(
            workspace=self._workspace))
        return outcome.text

    def dispatch(self, tool_name: str, tool_input: Mapping[str, Any] | None = None) -> str:
        """:meth:`async_dispatch` from synchronous code (not from a running event loop: await that one there)."""
        return anyio.run(self.async_dispatch, tool_name, tool_input)
