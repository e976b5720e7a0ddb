"""A real local HTTP server that speaks the OpenAI chat-completions streaming protocol.

It plays scripted responses in order and records every request body, so tests can drive the
agent deterministically over real HTTP and check exactly what the model was sent. Given
``props`` or ``models``, it also answers ``GET /props`` (llama.cpp) and ``GET /v1/models`` with
them, as servers that state their context size do; otherwise those are 404.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted response: SSE chunks, or an HTTP error, optionally an error event mid-stream."""

    chunks: list[dict[str, Any]] = field(default_factory=list)
    status: int = 200
    body: str = ""
    error_event: dict[str, Any] | None = None
    delay_s: float = 0.0
    """Pause between chunks (to test cancelling a stream)."""
    before: Callable[[], None] | None = None
    """Run when this reply is about to be served (to change the world between model rounds)."""


def llama_props(n_ctx: int) -> dict[str, Any]:
    """What llama.cpp's ``/props`` says about a server whose slots have ``n_ctx`` tokens."""
    return {"default_generation_settings": {"n_ctx": n_ctx, "params": {}}, "total_slots": 1}


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": "fake",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def text(content: str, pieces: int = 3) -> Reply:
    size = max(1, len(content) // pieces)
    parts = [content[i : i + size] for i in range(0, len(content), size)] or [""]
    chunks = [_chunk({"role": "assistant", "content": ""})]
    chunks += [_chunk({"content": part}) for part in parts]
    chunks.append(_chunk({}, "stop"))
    return Reply(chunks)


def tool_calls(*calls: tuple[str, str], preface: str = "", pieces: int = 4, with_index: bool = True,
               ids: list[str] | None = None) -> Reply:
    """Calls as (name, arguments-json), arguments split into ``pieces`` fragments each."""
    chunks = [_chunk({"role": "assistant", "content": ""})]
    if preface:
        chunks.append(_chunk({"content": preface}))
    for index, (name, arguments) in enumerate(calls):
        call_id = ids[index] if ids else f"call_{index}"
        opening: dict[str, Any] = {"id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
        if with_index:
            opening["index"] = index
        chunks.append(_chunk({"tool_calls": [opening]}))
        size = max(1, len(arguments) // pieces)
        for start in range(0, len(arguments), size):
            fragment: dict[str, Any] = {"function": {"arguments": arguments[start : start + size]}}
            if with_index:
                fragment["index"] = index
            chunks.append(_chunk({"tool_calls": [fragment]}))
    chunks.append(_chunk({}, "tool_calls"))
    return Reply(chunks)


class FakeOpenAI:
    """Start with ``with FakeOpenAI([...]) as fake:``; point a client at ``fake.base_url``."""

    def __init__(self, replies: list[Reply] | None = None, repeat_last: bool = False,
                 props: dict[str, Any] | None = None, models: dict[str, Any] | None = None) -> None:
        self.replies = list(replies or [])
        self.repeat_last = repeat_last
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.gets: list[str] = []
        self.documents = {"/props": props, "/v1/models": models}
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                return None

            def do_GET(self) -> None:
                owner.gets.append(self.path)
                document = owner.documents.get(self.path)
                status = 404 if document is None else 200
                payload = json.dumps(document if document is not None else {"error": "not found"}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                reply = owner._next(body, {k.lower(): v for k, v in self.headers.items()})
                if reply.before is not None:
                    reply.before()
                if reply.status != 200:
                    payload = reply.body.encode()
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                try:
                    for chunk in reply.chunks:
                        if reply.delay_s:
                            time.sleep(reply.delay_s)
                        self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                        self.wfile.flush()
                    if reply.error_event is not None:
                        self.wfile.write(f"data: {json.dumps({'error': reply.error_event})}\n\n".encode())
                    else:
                        self.wfile.write(b"data: [DONE]\n\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass
                self.close_connection = True

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def _next(self, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            if not self.replies:
                return Reply(status=500, body='{"error": {"message": "fake server: no scripted reply left"}}')
            if self.repeat_last and len(self.replies) == 1:
                return self.replies[0]
            return self.replies.pop(0)

    def add(self, *replies: Reply) -> None:
        with self._lock:
            self.replies.extend(replies)

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def messages(self, index: int = -1) -> list[dict[str, Any]]:
        return list(self.requests[index]["messages"])
