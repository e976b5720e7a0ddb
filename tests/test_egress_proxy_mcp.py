"""Network by allowlist through the official client on a real ``codeward serve``: a run reaches an
allowed name (served by a local index on loopback, mapped by ``[network] hosts`` for the proxy only)
through the egress proxy, over plain http and a CONNECT tunnel; ``pip install`` from that index works;
a denied name, an unlisted one, a raw IP, and names resolving to loopback or private addresses are
refused with the reason and the key to change — before any connection; nothing bypasses the proxy
(direct TCP, UDP, DNS). Every packet stays on this machine's loopback or in the box's namespace."""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from tests.egress_support import PACKAGE, VALUE, build_index, self_signed, serve_directory
from tests.sandbox_support import needs_bwrap

pytestmark = [pytest.mark.anyio, needs_bwrap]

CONFIG = """
[network]
allowed_domains = ["pkg.test", "*.mirror.test", "private.test", "rebind.test"]
denied_domains = ["evil.mirror.test"]
allowed_addresses = ["127.0.0.1"]

[network.hosts]
"pkg.test" = "127.0.0.1"
"files.mirror.test" = "127.0.0.1"
"secure.mirror.test" = "127.0.0.1"
"evil.mirror.test" = "127.0.0.1"
"private.test" = "10.1.2.3"
"rebind.test" = "127.0.0.2"
# refused by name before any lookup; mapped all the same, so that a broken name check could only reach loopback
"unlisted.test" = "127.0.0.3"
"index.other.test" = "127.0.0.3"
"""


def _text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


async def shell(client: Client, script: str) -> str:
    result = await client.call_tool("run_shell", {"script": script, "timeout_s": 120})
    return _text(result)


async def test_allowed_names_go_through_the_proxy_and_nothing_else_leaves(root: Path, tmp_path: Path) -> None:
    index = build_index(tmp_path / "index")
    (root / "codeward.toml").write_text(CONFIG)
    params = StdioServerParameters(command=sys.executable, args=["-m", "codeward", "serve", str(root)],
                                   cwd=str(root), env={**os.environ, "PYTHONUNBUFFERED": "1"})
    cert, key = self_signed("secure.mirror.test", root, tmp_path)  # the box sees the certificate in the project
    with serve_directory(index) as upstream, serve_directory(index, "127.0.0.2") as rebound, \
            serve_directory(index, tls=(cert, key)) as secure:
        port = upstream.port
        async with Client(params) as client:
            # allowed: plain http forwarded, and a CONNECT tunnel (what https uses)
            text = await shell(client, f"curl -sS http://pkg.test:{port}/hello.txt; "
                                       f"curl -sS -p http://files.mirror.test:{port}/hello.txt; "
                                       f"curl -sS -H 'Host: admin.internal' http://pkg.test:{port}/hello.txt")
            assert text.count("hello through the proxy") == 3, text
            assert upstream.hosts.count(f"pkg.test:{port}") == 2 and "admin.internal" not in upstream.hosts
            assert "connection(s) allowed through the proxy" in text, text

            # https end to end through a CONNECT tunnel (HTTPS_PROXY), and pip install from the index that way
            text = await shell(client, (
                f"curl -sS --cacert {cert} https://secure.mirror.test:{secure.port}/hello.txt && "
                f"python3 -m pip install -q --no-cache-dir --disable-pip-version-check --target /tmp/t --cert {cert} "
                f"--index-url https://secure.mirror.test:{secure.port}/simple/ {PACKAGE} && "
                f"python3 -c 'import sys; sys.path.insert(0, \"/tmp/t\"); import {PACKAGE}; print({PACKAGE}.VALUE)'"))
            assert "hello through the proxy" in text and VALUE in text and "EXIT CODE: 0" in text, text
            assert f"CONNECT secure.mirror.test:{secure.port}" not in text  # allowed: counted, not listed
            # ... and a clear failure when the index's host is not allowed
            text = await shell(client, (
                f"python3 -m pip install --no-cache-dir --disable-pip-version-check --target /tmp/u "
                f"--index-url http://index.other.test:{port}/simple/ --trusted-host index.other.test {PACKAGE}"))
            assert "EXIT CODE: 0" not in text, text
            assert ('index.other.test is not in [network] allowed_domains; an operator can allow it by adding '
                    '"index.other.test"') in text, text

            # refused by name, by address after resolution, or as a raw IP: 403 with the reason, nothing reached
            before = len(upstream.connections)
            refused = {
                "evil.mirror.test": "refused by [network] denied_domains ('evil.mirror.test')",
                "unlisted.test": 'not in [network] allowed_domains; an operator can allow it by adding "unlisted.test"',
                "rebind.test": "resolves to 127.0.0.2, a loopback address: refused before connecting",
                "private.test": "resolves to 10.1.2.3, a private address: refused before connecting",
                "127.0.0.2": "127.0.0.2 is an IP address: runs reach named hosts only",
                "10.1.2.3": "10.1.2.3 is an IP address",
            }
            text = await shell(client, "".join(
                f"echo {host} $(curl -sS --noproxy '' -o /dev/null -w '%{{http_code}}' http://{host}:{port}/hello.txt)"
                f" $(curl -sS --noproxy '' -p http://{host}:{port}/hello.txt 2>&1 | grep -c 'response 403');"
                for host in refused))
            for host, reason in refused.items():
                assert f"{host} 403 1" in text, text  # forwarded: 403; tunnelled: curl saw the 403 to its CONNECT
                assert f"network: REFUSED GET {host}:{port}" in text and reason in text, text
                assert f"network: REFUSED CONNECT {host}:{port}" in text, text
            assert "hello through the proxy" not in text, text
            assert len(upstream.connections) == before and rebound.connections == []

            # no way around the proxy: no route at all, direct TCP and UDP stay in the box's own loopback (the
            # host's listeners see nothing), no DNS (without resolv.conf a lookup could only ask the box's 127.0.0.1)
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
                udp.bind(("127.0.0.1", 0))
                udp.setblocking(False)
                probe = (
                    "import os, socket\n"
                    "def attempt(what, fn):\n"
                    "    try:\n"
                    "        fn(); print(what, 'OPEN')\n"
                    "    except OSError as exc:\n"
                    "        print(what, 'blocked', type(exc).__name__)\n"
                    "v4, v6 = (open(f'/proc/net/{t}').read().splitlines() for t in ('route', 'ipv6_route'))\n"
                    "print('routes', len(v4) - 1, 'v6 via', sorted({line.split()[-1] for line in v6}))\n"
                    f"attempt('tcp-loopback', lambda: socket.create_connection(('127.0.0.1', {port}), timeout=3))\n"
                    "attempt('dns', lambda: socket.getaddrinfo('pkg.test', 80))\n"
                    f"socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', {udp.getsockname()!r})\n")
                text = await shell(client, f"python3 - <<'EOF'\n{probe}EOF\ncurl -sS --noproxy '*' "
                                           f"http://pkg.test:{port}/hello.txt")
                assert "routes 0 v6 via ['lo']" in text, text  # no IPv4 route; IPv6 only on loopback
                for what in ("tcp-loopback", "dns"):
                    assert f"{what} blocked" in text, text
                assert "OPEN" not in text and "hello through the proxy" not in text, text
                with pytest.raises(BlockingIOError):
                    udp.recv(10)
            assert len(upstream.connections) == before

            # a long-running process has the same way out
            result = await client.call_tool("process_start", {"name": "fetch", "command": (
                f"curl -sS http://pkg.test:{port}/hello.txt; curl -sS http://unlisted.test:{port}/; echo done")})
            assert not result.is_error, _text(result)
            result = await client.call_tool("process_read", {"name": "fetch", "wait_s": 30, "until": "done"})
            data = result.structured_content or {}
            assert "hello through the proxy" in data.get("text", ""), _text(result)
            assert any(f"network: REFUSED GET unlisted.test:{port}" in note for note in data.get("notes", [])), data
            await client.call_tool("process_stop", {"name": "fetch"})

    # the audit log: one line per decision, allowed and refused
    logged = [json.loads(line) for line in (root / ".codeward/logs/network.jsonl").read_text().splitlines()]
    assert {(e["host"], e["allowed"]) for e in logged} >= {("pkg.test", True), ("files.mirror.test", True),
                                                             ("secure.mirror.test", True),
                                                             *((host, False) for host in refused)}
    assert any(e["host"] == "private.test" and "private address" in e["reason"] for e in logged)
