"""Long-running processes through the official client: a Python REPL driven by writes and reads (its
"waiting for input" state, a read that ends when it waits), a process whose writes land through the
gate while it runs (process_apply) and when it stops (and a protected path that does not),
bad input, the per-client limit, the output bound, another client that cannot reach them, and no
process left on the host when it is stopped or the server ends."""

from __future__ import annotations

import os
import socket
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from tests.process_support import codeward_http, free_port
from tests.sandbox_support import needs_bwrap, survivors

pytestmark = [pytest.mark.anyio, needs_bwrap]


def _text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


async def call(client: Client, name: str, arguments: dict[str, Any]) -> tuple[bool, str, dict[str, Any]]:
    result = await client.call_tool(name, arguments)
    return bool(result.is_error), _text(result), result.structured_content or {}


async def test_a_repl_a_writer_and_bad_input_over_stdio(root: Path, tmp_path: Path) -> None:
    marker = f"4711.{uuid.uuid4().int % 10**9}"
    (root / "codeward.toml").write_text("[shell]\nmax_processes_running = 3\nprocess_output_kb = 4\n")
    params = StdioServerParameters(command=sys.executable, args=["-m", "codeward", "serve", str(root)],
                                   cwd=str(root), env={**os.environ, "PYTHONUNBUFFERED": "1"})
    async with Client(params) as client:
        # a REPL, driven by writes and reads
        error, text, data = await call(client, "process_start", {"name": "repl", "command": "python3 -i -q"})
        assert not error and data["process"]["state"] in ("running", "waiting_for_input"), text
        began = time.monotonic()
        error, text, data = await call(client, "process_read", {"name": "repl", "wait_s": 25, "until": "never"})
        assert data["process"]["state"] == "waiting_for_input" and "waiting for input" in text, text
        assert time.monotonic() - began < 20, "the read waited on although the REPL waits for input"
        error, text, data = await call(client, "process_write", {"name": "repl", "text": "x = 6 * 7\nprint(x)\n"})
        assert not error, text
        error, text, data = await call(client, "process_read", {"name": "repl", "wait_s": 20, "until": "42"})
        assert not error and "42" in data["text"], text
        offset = data["next_offset"]
        await call(client, "process_write", {"name": "repl", "text": "print(x + 1)\n"})
        error, text, data = await call(client, "process_read", {"name": "repl", "since": offset, "wait_s": 20,
                                                                "until": "43"})
        assert "43" in data["text"] and "42" not in data["text"], text  # only what came after the offset
        await call(client, "process_write", {"name": "repl", "text": "import time; time.sleep(30)\n"})
        error, text, data = await call(client, "process_read", {"name": "repl", "wait_s": 1})
        assert data["process"]["state"] == "running", text  # busy: not waiting for input
        await call(client, "process_stop", {"name": "repl"})
        await call(client, "process_start", {"name": "repl", "command": "python3 -i -q"})

        # a process that writes files, one of them protected, and keeps running until stopped
        script = (f"echo made > made.txt; mkdir -p .git; echo '[core]' >> .git/config; echo started; "
                  f"exec sleep {marker}")
        error, text, data = await call(client, "process_start", {"name": "writer", "command": script})
        assert not error, text
        error, text, data = await call(client, "process_read", {"name": "writer", "wait_s": 20, "until": "started"})
        assert "started" in data["text"], text
        assert not (root / "made.txt").exists()  # still in its layer
        assert survivors(f"sleep {marker}", grace_s=0)  # running
        error, text, data = await call(client, "process_apply", {"name": "writer"})  # applied while it runs
        assert not error and (root / "made.txt").read_text() == "made\n", text
        assert ".git/config" in text and data["process"]["state"] == "running", text  # refused, and said so
        assert survivors(f"sleep {marker}", grace_s=0)
        (root / "made.txt").write_text("edited on the host\n")
        error, text, _ = await call(client, "process_apply", {"name": "writer"})
        assert "nothing new to apply" in text and (root / "made.txt").read_text() == "edited on the host\n", text

        # bad input: each a clear error, nothing started
        for arguments, expected in (({"name": "repl", "command": "true"}, "already exists"),
                                    ({"name": "bad name!", "command": "true"}, "name"),
                                    ({"name": "three", "command": "sleep 30"}, None),
                                    ({"name": "four", "command": "sleep 30"}, "processes are already running")):
            error, text, _ = await call(client, "process_start", arguments)
            assert error is (expected is not None), text
            if expected:
                assert expected in text, text
        error, text, _ = await call(client, "process_read", {"name": "nobody"})
        assert error and "no process named 'nobody'" in text, text
        error, text, _ = await call(client, "process_read", {"name": "repl", "max_bytes": 0})
        assert error and "max_bytes" in text, text

        # the output bound: 4 KiB kept, the rest dropped and said so
        await call(client, "process_stop", {"name": "three"})
        await call(client, "process_start", {"name": "chatty", "command": "seq 1 5000; echo the-end"})
        error, text, data = await call(client, "process_read", {"name": "chatty", "wait_s": 20, "until": "the-end"})
        assert data["dropped"] > 0 and "the-end" in data["text"] and len(data["text"]) <= 4096, text
        error, text, data = await call(client, "process_list", {})
        listed = {p["name"]: p for p in data["processes"]}
        assert listed["chatty"]["state"] == "exited" and listed["chatty"]["exit_code"] == 0
        assert listed["repl"]["state"] == "waiting_for_input" and listed["writer"]["state"] == "running", listed

        # stop: the whole tree dies, its writes land through the gate, the protected one does not
        error, text, data = await call(client, "process_stop", {"name": "writer"})
        assert not error, text
        assert survivors(f"sleep {marker}") == []
        assert (root / "made.txt").read_text() == "edited on the host\n", text  # not overwritten by the same write
        assert "[core]" not in ((root / ".git/config").read_text() if (root / ".git/config").exists() else "")
        error, text, _ = await call(client, "process_write", {"name": "writer", "text": "x"})
        assert error and "no process named" in text

        spawn = f"import subprocess; p = subprocess.Popen(['sleep', '{marker}'])\n"
        await call(client, "process_write", {"name": "repl", "text": spawn})
        await call(client, "process_read", {"name": "repl", "wait_s": 2})
    assert survivors(f"sleep {marker}") == []  # the server's end stopped the REPL and its child


async def test_a_dev_server_in_the_box_is_reached_from_the_next_run_and_not_from_the_host(root: Path) -> None:
    port = free_port()  # free on the host: the server listens on it inside the client's own namespace
    marker = f"4712.{uuid.uuid4().int % 10**9}"
    (root / "page.txt").write_text("hello from the box\n")
    params = StdioServerParameters(command=sys.executable, args=["-m", "codeward", "serve", str(root)],
                                   cwd=str(root), env={**os.environ, "PYTHONUNBUFFERED": "1"})
    async with Client(params) as client:
        error, text, _ = await call(client, "process_start", {"name": "web", "command": (
            f"exec python3 -u -m http.server {port} --bind 127.0.0.1 # {marker}")})
        assert not error, text
        error, text, data = await call(client, "process_read", {"name": "web", "wait_s": 20, "until": "Serving"})
        assert "Serving HTTP" in data["text"], text
        fetch = f"python3 -c \"import urllib.request as u; print(u.urlopen('http://127.0.0.1:{port}/page.txt').read())\""
        error, text, _ = await call(client, "run_shell", {"script": fetch})
        assert "hello from the box" in text, text
        with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=2):
            pass  # the host's loopback is not the box's
        error, text, data = await call(client, "process_read", {"name": "web", "wait_s": 20, "until": "GET"})
        assert "GET /page.txt" in data["text"], text
        error, text, data = await call(client, "process_stop", {"name": "web"})
        assert not error and data["process"]["state"] == "exited", text
        assert survivors(marker) == []


async def test_another_client_cannot_reach_a_process(root: Path) -> None:
    with codeward_http(str(root), cwd=root) as url:
        async with Client(url, mode="legacy") as first, Client(url, mode="legacy") as second:  # type: ignore[arg-type]
            error, text, _ = await call(first, "process_start", {"name": "mine", "command": "sleep 60"})
            assert not error, text
            for name, arguments in (("process_read", {"name": "mine"}), ("process_stop", {"name": "mine"}),
                                    ("process_write", {"name": "mine", "text": "x"})):
                error, text, _ = await call(second, name, arguments)
                assert error and "no process named 'mine'" in text, (name, text)
            error, text, data = await call(second, "process_list", {})
            assert data["processes"] == [], text
            error, text, data = await call(first, "process_stop", {"name": "mine"})
            assert not error and data["process"]["state"] == "exited", text
