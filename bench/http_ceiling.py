"""A replaying HTTP server: the most any MCP server could give the official client in this bench.

Not an MCP server. It starts the bench's low-level SDK server as its upstream, forwards each
request it has not seen before (the client's discovery and first ``tools/call`` happen while the
sessions open, before the clock starts) and keeps the answer. A request with the same method and
parameters is then answered from memory, with the request's own ``id`` put in: one JSON parse,
one JSON dump, one socket write, on a bare asyncio protocol with no HTTP framework.

What it shows: the client and the servers share the machine's cores, so the client's own CPU per
call bounds every server's throughput. This server costs next to nothing per call; the ratio it
reaches in ``bench/http_load.py`` is the ceiling for any server, and what a real server reaches
is measured against that ceiling in the same run.

    python bench/http_ceiling.py ROOT PORT UPSTREAM_SCRIPT
"""

from __future__ import annotations

import asyncio
import http.client
import json
import signal
import socket
import subprocess
import sys
import time
from typing import Any

DROPPED = {"content-length", "date", "server", "transfer-encoding", "connection"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Replay:
    """Answers kept by request key; unseen requests go upstream (blocking: they come before the clock)."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.kept: dict[str, tuple[bytes, dict[str, Any]]] = {}

    def answer(self, method: str, path: str, headers: list[tuple[str, str]], body: bytes) -> bytes:
        message = json.loads(body) if body and method == "POST" else None
        if isinstance(message, dict) and "id" in message:
            key = json.dumps([message.get("method"), message.get("params")], sort_keys=True)
            kept = self.kept.get(key)
            if kept is not None:
                start, template = kept
                payload = json.dumps({**template, "id": message["id"]}).encode()
                return start + str(len(payload)).encode() + b"\r\n\r\n" + payload
        status, reason, answer_headers, answer = self.forward(method, path, headers, body)
        head: str = f"HTTP/1.1 {status} {reason}\r\n" + "".join(
            f"{k}: {v}\r\n" for k, v in answer_headers if k.lower() not in DROPPED)
        content_type = dict((k.lower(), v) for k, v in answer_headers).get("content-type", "")
        if (isinstance(message, dict) and "id" in message and status == 200
                and content_type.startswith("application/json")):
            self.kept[key] = ((head + "content-length: ").encode(), json.loads(answer))
        return (head + f"content-length: {len(answer)}\r\n\r\n").encode() + answer

    def forward(self, method: str, path: str, headers: list[tuple[str, str]],
                body: bytes) -> tuple[int, str, list[tuple[str, str]], bytes]:
        connection = http.client.HTTPConnection("127.0.0.1", self.upstream_port, timeout=30)
        try:
            sent = {k: v for k, v in headers if k.lower() not in {"host", "content-length", "connection"}}
            connection.request(method, path, body=body or None, headers=sent)
            response = connection.getresponse()
            return response.status, response.reason, response.getheaders(), response.read()
        finally:
            connection.close()


class Connection(asyncio.Protocol):
    """HTTP/1.1 keep-alive with ``Content-Length`` bodies: all the official client sends here."""

    def __init__(self, replay: Replay) -> None:
        self.replay = replay
        self.buffer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            lines = self.buffer[:end].decode("latin-1").split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            headers = [(k.strip(), v.strip()) for k, _, v in (line.partition(":") for line in lines[1:])]
            if any(k.lower() == "transfer-encoding" for k, _ in headers):
                raise SystemExit("chunked request bodies are not replayed")
            length = int(dict((k.lower(), v) for k, v in headers).get("content-length", "0"))
            if len(self.buffer) < end + 4 + length:
                return
            body = self.buffer[end + 4:end + 4 + length]
            self.buffer = self.buffer[end + 4 + length:]
            assert self.transport is not None
            self.transport.write(self.replay.answer(method, path, headers, body))


async def serve(port: int, replay: Replay) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: Connection(replay), "127.0.0.1", port)
    async with server:
        await server.serve_forever()


def main() -> None:
    root, port, upstream_script = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    upstream_port = free_port()
    upstream = subprocess.Popen([sys.executable, upstream_script, root, str(upstream_port)])
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", upstream_port), timeout=0.2).close()
                break
            except OSError:
                if upstream.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("the upstream server did not start") from None
                time.sleep(0.05)
        asyncio.run(serve(port, Replay(upstream_port)))
    finally:
        upstream.terminate()
        upstream.wait(10)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # the bench stops servers with SIGTERM: stop the upstream too
    main()
