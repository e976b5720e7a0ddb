"""Attack 7 of the issue through the tools that read: every planted secret (new default names,
a case variant, one inside .git, an SSH key known only by its first line) is asked for through
every reading surface; the fixture fails the test if any secret string reached an output."""

from __future__ import annotations

import pytest

from codeward.engines.git import EMPTY_TREE
from tests.redteam.harness import SECRET_FILES, Host

pytestmark = pytest.mark.anyio


async def test_no_reading_tool_reveals_a_secret(host: Host) -> None:
    async with host.serve() as session:
        for name in SECRET_FILES:
            for tool, arguments in (("read_file", {"path": name}),
                                    ("get_file_slice", {"path": name, "start_line": 1, "end_line": 5}),
                                    ("get_file_summary", {"path": name}),
                                    ("code_get_outline", {"path": name})):
                answer = await session.call(tool, arguments)
                assert answer.is_error, f"{tool} read {name}: {answer.text}"
        for tool, arguments in (("list_directory", {"path": "."}), ("get_tree", {"path": ".", "max_depth": 5}),
                                ("search_files", {"path": ".", "pattern": "*"}),
                                ("repo_map", {"path": "."}), ("find_symbol", {"name": "token"}),
                                ("get_git_diff", {"path": ".", "base_rev": EMPTY_TREE}),
                                ("search_text", {"pattern": "CW-REDTEAM", "hidden": True, "include_ignored": True}),
                                ("search_text", {"pattern": "SECRET", "mode": "count", "hidden": True}),
                                ("search_text", {"pattern": "-----BEGIN", "context": 5, "hidden": True})):
            await session.call(tool, arguments)
        resources = await session.client.list_resources()
        for resource in resources.resources:
            # names are not secret (listings show deploy/ci-bot, a key known by its content); the rest are hidden
            if any(str(resource.uri).endswith(name) for name in SECRET_FILES if name != "deploy/ci-bot"):
                raise AssertionError(f"a secret is listed as a resource: {resource.uri}")
        for name in SECRET_FILES:
            uri = f"file://{host.project / name}"
            try:
                read = await session.client.read_resource(uri)
            except Exception as exc:
                host.record(str(exc))
                continue
            for content in read.contents:
                host.record(str(getattr(content, "text", "")))
            raise AssertionError(f"reading the resource {uri} did not fail")
