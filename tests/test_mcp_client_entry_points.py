"""Manual Slop's five ``mcp_client`` entry points, as a script calls them, over codeward's stack: the
allowlist ``configure`` builds is the one every call is checked against, and a call is answered as
``codeward call`` answers it."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from codeward.apps.mcp_client import McpClient
from codeward.config import load_config


def test_the_five_entry_points(tmp_path: Path) -> None:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("ANSWER = 42\n", encoding="utf-8")
    (root / "notes.txt").write_text("not tracked\n", encoding="utf-8")
    (root / "chat_history.toml").write_text("secret = 1\n", encoding="utf-8")
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("outside\n", encoding="utf-8")
    client = McpClient(load_config(cwd=root, user=False), roots=[root])

    assert client.is_allowed(root / "notes.txt") and not client.is_allowed(outside)
    client.configure([{"path": str(root / "src" / "app.py")}], extra_base_dirs=[])  # the file and its folder
    assert client.is_allowed(root / "src" / "app.py") and not client.is_allowed(root / "notes.txt")
    assert "ANSWER = 42" in client.dispatch("read_file", {"path": str(root / "src" / "app.py")})
    refused = client.dispatch("read_file", {"path": str(root / "notes.txt")})
    assert refused.startswith("ERROR") and "notes.txt" in refused
    client.configure([], extra_base_dirs=[root])
    assert client.is_allowed(root / "notes.txt") and not client.is_allowed(root / "chat_history.toml")

    async def both() -> list[str]:
        return await asyncio.gather(client.async_dispatch("read_file", {"path": "notes.txt"}),
                                    client.async_dispatch("read_file", {"path": "src/app.py"}))

    texts = asyncio.run(both())
    assert "not tracked" in texts[0] and "ANSWER = 42" in texts[1]
    schemas = {schema["name"]: schema for schema in client.get_tool_schemas()}
    assert schemas["read_file"]["input_schema"]["properties"]["path"] and schemas["read_file"]["description"]

    by_cli = subprocess.run([str(Path(sys.executable).parent / "codeward"), "call", "read_file", "path=notes.txt"],
                            cwd=root, capture_output=True, text=True, timeout=120)
    assert by_cli.stdout.strip() == texts[0].strip()
