"""The Docker backend's compile path against a fake engine speaking the Docker Engine API on a
unix socket; everything else runs on a real engine (``test_docker_engine.py`` and
``redteam/test_docker_attacks.py``).

The fake runs each container's command in codeward's own sandbox with the host's toolchains,
so a C compile failure can be shown without building an image that holds a compiler (the real
tests' image has Python and shells only, to stay fast). The tool contract tests
(``contract_support.py``) use it too: they check answers against the output schemas and must
run where no engine can."""

from __future__ import annotations

import json
import socketserver
import struct
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from codeward.engines.execution.runtime import CodingRuntime
from codeward.engines.sandbox import SandboxRequest, SandboxResult, probe_sandbox
from codeward.kernel.catalog import Catalog
from tests.sandbox_support import caller, context

pytestmark = pytest.mark.xdist_group("sandbox-docker")


class FakeEngine:
    """Containers as dicts; ``start`` runs the command in a thread through a local sandbox."""

    def __init__(self, socket_path: Path, images: tuple[str, ...]) -> None:
        self.images = set(images)
        self.containers: dict[str, dict[str, Any]] = {}
        self.removed: list[str] = []
        self.sandbox = probe_sandbox()
        engine = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                return None

            def do_GET(self) -> None:
                engine.route(self, "GET")

            def do_POST(self) -> None:
                engine.route(self, "POST")

            def do_DELETE(self) -> None:
                engine.route(self, "DELETE")

        class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
            daemon_threads = True

        self.server = Server(str(socket_path), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    # -- HTTP plumbing -------------------------------------------------------------------

    def reply(self, handler: BaseHTTPRequestHandler, status: int, body: Any = None, raw: bytes | None = None,
              content_type: str = "application/json") -> None:
        payload = raw if raw is not None else (b"" if body is None else json.dumps(body).encode())
        handler.send_response(status)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)

    def route(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        url = urlparse(handler.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        parts = [p for p in url.path.split("/") if p]
        if parts and parts[0].startswith("v1."):
            parts = parts[1:]
        length = int(handler.headers.get("Content-Length") or 0)
        body = json.loads(handler.rfile.read(length) or b"null") if length else None
        if parts == ["_ping"]:
            return self.reply(handler, 200, raw=b"OK", content_type="text/plain")
        if parts == ["version"]:
            return self.reply(handler, 200, {"ApiVersion": "1.45", "Version": "fake", "MinAPIVersion": "1.24"})
        if parts == ["containers", "create"] and method == "POST":
            return self.create(handler, body or {})
        if len(parts) >= 2 and parts[0] == "containers":
            container = self.containers.get(parts[1])
            if container is None:
                return self.reply(handler, 404, {"message": f"No such container: {parts[1]}"})
            action = parts[2] if len(parts) > 2 else ""
            if method == "DELETE":
                self.containers.pop(parts[1])
                self.removed.append(parts[1])
                return self.reply(handler, 204)
            if action == "attach":
                return self.attach(handler, container)
            if action == "start":
                container["thread"].start()
                return self.reply(handler, 204)
            if action == "wait":
                container["done"].wait(60)
                return self.reply(handler, 200, {"StatusCode": container["result"].exit_code or 0})
            if action == "kill":
                return self.reply(handler, 204)
            if action == "json":
                result: SandboxResult | None = container.get("result")
                return self.reply(handler, 200, {
                    "Id": container["id"], "Config": {"Tty": False},
                    "State": {"OOMKilled": bool(result and result.limit_hit and result.limit_hit.value == "memory"),
                              "ExitCode": result.exit_code if result else 0}})
            if action == "stats":
                return self.reply(handler, 200, {"memory_stats": {"max_usage": 12 * 1048576},
                                                 "cpu_stats": {"cpu_usage": {"total_usage": 250_000_000}}})
            if action == "logs":
                return self.logs(handler, container, query)
        return self.reply(handler, 404, {"message": f"fake engine: no route {method} {url.path}"})

    # -- container operations ------------------------------------------------------------

    def create(self, handler: BaseHTTPRequestHandler, spec: dict[str, Any]) -> None:
        if spec.get("Image") not in self.images:
            return self.reply(handler, 404, {"message": f"No such image: {spec.get('Image')}"})
        cid = uuid.uuid4().hex * 2
        host = spec.get("HostConfig", {})
        container: dict[str, Any] = {"id": cid, "spec": spec, "stdin": b"", "done": threading.Event()}
        binds = []
        for bind in host.get("Binds") or []:
            source, dest, _mode = bind.split(":")
            binds.append((source, dest))
        env = dict(item.split("=", 1) for item in spec.get("Env") or [])

        def run() -> None:
            if "stdin_done" in container:  # attached: the stream ends when the client shuts it down
                container["stdin_done"].wait(10)
            container["result"] = self.sandbox.run(SandboxRequest(
                argv=spec["Cmd"], env={k: v for k, v in env.items() if k != "PATH"}, ro_binds=binds,
                stdin=container["stdin"], timeout_s=30, memory_mb=(host.get("Memory") or 0) // 1048576 or None,
                network=host.get("NetworkMode") != "none"))
            container["done"].set()

        container["thread"] = threading.Thread(target=run, daemon=True)
        self.containers[cid] = container
        return self.reply(handler, 201, {"Id": cid, "Warnings": []})

    def attach(self, handler: BaseHTTPRequestHandler, container: dict[str, Any]) -> None:
        container["stdin_done"] = threading.Event()
        handler.send_response(101, "UPGRADED")
        handler.send_header("Content-Type", "application/vnd.docker.raw-stream")
        handler.send_header("Connection", "Upgrade")
        handler.send_header("Upgrade", "tcp")
        handler.end_headers()
        handler.wfile.flush()
        data = b""
        while chunk := handler.rfile.read1(65536):
            data += chunk
        container["stdin"] = data
        container["stdin_done"].set()
        handler.close_connection = True

    def logs(self, handler: BaseHTTPRequestHandler, container: dict[str, Any], query: dict[str, str]) -> None:
        result: SandboxResult = container["result"]
        frames = b""
        if query.get("stdout") in ("1", "True", "true") and result.stdout:
            data = result.stdout.encode()
            frames += struct.pack(">BxxxL", 1, len(data)) + data
        if query.get("stderr") in ("1", "True", "true") and result.stderr:
            data = result.stderr.encode()
            frames += struct.pack(">BxxxL", 2, len(data)) + data
        return self.reply(handler, 200, raw=frames, content_type="application/vnd.docker.multiplexed-stream")


@pytest.fixture
def engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeEngine]:
    socket_path = tmp_path / "docker.sock"
    fake = FakeEngine(socket_path, ("python:3.11-slim", "bash:5.2", "gcc:12"))
    monkeypatch.setenv("DOCKER_HOST", f"unix://{socket_path}")
    yield fake
    fake.close()


@pytest.fixture
def run_tool(catalog: Catalog, root: Path) -> Iterator[Any]:
    runtime = CodingRuntime()
    yield caller(catalog, context(root, runtime))
    runtime.close()


def test_compile_errors_in_a_container_are_reported(engine: FakeEngine, run_tool: Any) -> None:
    outcome = run_tool("coding_run_in_docker", language="c", code="int main(void) { return nope; }\n")
    result = outcome.structured
    assert result is not None
    assert result["status"] == "error" and "compilation failed" in result["error_message"]
    assert "nope" in result["stderr"]


def test_a_compiled_program_runs_from_the_work_directory(engine: FakeEngine, run_tool: Any) -> None:
    code = '#include <stdio.h>\nint main(void) { printf("built and ran %d\\n", 6 * 7); return 0; }\n'
    result = run_tool("coding_run_in_docker", language="c", code=code).structured
    assert result is not None
    assert result["status"] == "success" and result["stdout"] == "built and ran 42\n", result
