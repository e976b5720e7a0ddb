"""Attack 6 of the issue: an HTTP server any local user could call. ``serve --http`` and
``gateway --http`` without a token now generate one (a 0600 file of the server's user, its path
printed, kept for the port); ``--no-auth`` is an explicit, warned opt-out for loopback only."""

from __future__ import annotations

import json
import stat
import subprocess

import httpx2 as httpx

from tests.redteam.harness import Host, HttpServer

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "r", "version": "1"}}}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def test_http_without_a_token_option_generates_one_only_the_server_user_can_read(host: Host) -> None:
    with host.serve_http() as server:
        token_file = host.home / ".local" / "share" / "codeward" / "http" / f"{server.port}.token"
        info = token_file.stat()
        assert stat.S_IMODE(info.st_mode) == 0o600 and info.st_uid == host.principal.uid
        token = token_file.read_text().strip()
        with httpx.Client(timeout=60) as client:
            anonymous = client.post(server.url, headers=HEADERS, json=INIT)
            assert anonymous.status_code == 401, anonymous.text
            wrong = client.post(server.url, headers={**HEADERS, "Authorization": "Bearer guess"}, json=INIT)
            assert wrong.status_code == 401
            authorized = client.post(server.url, headers={**HEADERS, "Authorization": f"Bearer {token}"}, json=INIT)
            assert authorized.status_code == 200, authorized.text
            host.record(anonymous.text + wrong.text)
    assert str(token_file) in server.stderr and token not in server.stderr
    assert token_file.read_text().strip() == token, "the port's token is kept: configured clients reconnect"
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600


def test_no_auth_is_loopback_only_and_warned(host: Host) -> None:
    with host.serve_http("--no-auth") as server, httpx.Client(timeout=60) as client:
        assert client.post(server.url, headers=HEADERS, json=INIT).status_code == 200
    assert "WARNING: --no-auth" in server.stderr
    refused = subprocess.run(host.server_argv("--http", "--no-auth", "--host", "0.0.0.0", "--allow-remote"),
                             cwd=host.project, env=host.principal.env(host.home), capture_output=True, text=True,
                             timeout=120)
    assert refused.returncode == 2 and "loopback" in refused.stderr, refused.stderr


def test_the_gateway_over_http_requires_a_token_too(host: Host) -> None:
    config = host.base / "gateway.toml"
    upstream_env = {"PYTHONPATH": host.principal.pythonpath} if host.principal.pythonpath else {}
    config.write_text(f'[mcp]\nnative = false\n\n[mcp.servers.up]\ncommand = {json.dumps(host.principal.python[0])}\n'
                      f'args = {json.dumps(["-m", "codeward", "serve", str(host.project)])}\n'
                      f'env = {{ {", ".join(f"{k} = {json.dumps(v)}" for k, v in upstream_env.items())} }}\n')
    config.chmod(0o644)
    argv = host.principal.wrap([*host.principal.python, "-m", "codeward", "gateway", "--config", str(config),
                                "--http", "--port", "0", "--root", str(host.project)])
    with host.serve_http() as probe:  # borrow a free port the harness proved usable, then stop that server
        port = probe.port
    argv[argv.index("--port") + 1] = str(port)
    proc = subprocess.Popen(argv, cwd=host.project, env=host.principal.env(host.home), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        server = HttpServer(proc, f"http://127.0.0.1:{port}/mcp", port)
        server.wait_ready()
        token_file = host.home / ".local" / "share" / "codeward" / "http" / f"{port}.token"
        with httpx.Client(timeout=60) as client:
            assert client.post(server.url, headers=HEADERS, json=INIT).status_code == 401
            token = token_file.read_text().strip()
            assert client.post(server.url, headers={**HEADERS, "Authorization": f"Bearer {token}"},
                               json=INIT).status_code == 200
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    finally:
        proc.terminate()
        proc.wait(timeout=30)
