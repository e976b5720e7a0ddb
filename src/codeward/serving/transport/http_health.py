"""``/healthz`` and ``/readyz``: what a balancer or Kubernetes asks a replica, without a token.

``GET /healthz`` is liveness — the process answers its HTTP port (``200 {"status": "ok"}``); a hung
process (stopped, deadlocked) does not answer at all, which the probe's timeout turns into a failure.
``GET /readyz`` is readiness — this replica should get new work: ``200`` unless it is draining
(SIGTERM), a gateway's upstream server is still connecting (a replica just started), or its shared
state (Redis) does not answer within ``[state] timeout``, then ``503`` with a JSON body saying which.
An upstream that failed does not make the replica unready (every replica would share the failure):
its calls answer with the upstream's error. Neither says anything a stranger could use: no users, no tools, no versions.
They sit outside the bearer token (probes carry none) and outside everything else.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from codeward.kernel.state_unavailable import StateUnavailable
from codeward.serving.drain import STOPPING, Drain
from codeward.serving.shared_state.backend import StateBackend

HEALTHZ = "/healthz"
READYZ = "/readyz"


class HealthEndpoints:
    """Answer the two probes; everything else goes on."""

    def __init__(self, app: Any, drain: Drain, state: StateBackend,
                 connecting: Callable[[], Sequence[str]] = tuple) -> None:
        self.app = app
        self.drain = drain
        self.state = state
        self.connecting = connecting

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        path = scope.get("path", "").rstrip("/") if scope["type"] == "http" else ""
        if path not in (HEALTHZ, READYZ):
            await self.app(scope, receive, send)
            return
        if scope["method"] not in ("GET", "HEAD"):
            await _answer(send, 405, {"error": "method not allowed", "message": f"GET {path}"}, scope)
            return
        if path == HEALTHZ:
            await _answer(send, 200, {"status": "ok", "replica": self.state.replica}, scope)
            return
        status, answer = await self.readiness()
        await _answer(send, status, answer, scope)

    async def readiness(self) -> tuple[int, dict[str, Any]]:
        answer: dict[str, Any] = {"ready": False, "replica": self.state.replica, "draining": self.drain.draining}
        if self.drain.draining:
            return 503, {**answer, "reason": STOPPING, "in_flight": self.drain.running}
        if starting := list(self.connecting()):
            return 503, {**answer, "reason": f"upstream servers still connecting: {', '.join(starting)}"}
        if self.state.shared:
            try:
                await self.state.check()
            except StateUnavailable as error:
                return 503, {**answer, "reason": str(error)}
        return 200, {**answer, "ready": True}


async def _answer(send: Any, status: int, payload: dict[str, Any], scope: dict[str, Any]) -> None:
    body = json.dumps(payload).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-store"), (b"x-codeward-replica", str(payload.get("replica", "")).encode())]})
    await send({"type": "http.response.body", "body": body if scope["method"] != "HEAD" else b""})
