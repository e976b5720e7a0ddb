"""The Hook API over real HTTP: every endpoint, the token, Host/Origin checks, asks, the SSE stream."""

from __future__ import annotations

import http.client
import json
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codeward.apps.control.client import ApiHookClient, HookError
from codeward.apps.control.server import ControlServer
from codeward.apps.control.state import ControlState
from tests.process_support import free_port


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ControlServer]:
    state = ControlState("test")
    with ControlServer(state, port=0, token_dir=tmp_path / "control", ask_timeout=5.0) as running:
        yield running


@pytest.fixture
def client(server: ControlServer) -> ApiHookClient:
    return ApiHookClient(server.url, server.token, max_retries=0)


def raw(server: ControlServer, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None,
        host: str | None = None, timeout: float = 10.0) -> tuple[int, dict[str, str], bytes]:
    """One request with exactly the headers given (http.client lets us forge Host)."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=timeout)
    try:
        connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        connection.putheader("Host", host or f"127.0.0.1:{server.port}")
        data = b"" if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        for key, value in (headers or {}).items():
            connection.putheader(key, value)
        if body is not None:
            connection.putheader("Content-Type", "application/json")
            connection.putheader("Content-Length", str(len(data)))
        connection.endheaders(data if body is not None else None)
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def bearer(server: ControlServer) -> dict[str, str]:
    return {"Authorization": f"Bearer {server.token}"}


ENDPOINTS = [
    ("GET", "/status"), ("GET", "/api/project"), ("POST", "/api/project"), ("GET", "/api/session"),
    ("POST", "/api/session"), ("GET", "/api/performance"), ("GET", "/api/events"), ("GET", "/api/events/stream"),
    ("GET", "/api/calls"), ("GET", "/api/asks"), ("GET", "/api/servers"), ("POST", "/api/ask"),
    ("POST", "/api/ask/respond"), ("GET", "/console/"), ("GET", "/console/console.js"), ("GET", "/"),
    ("POST", "/api/gui"), ("GET", "/api/gui/value"), ("GET", "/api/gui/value/model"),
    ("GET", "/api/gui/diagnostics"), ("GET", "/api/gui/mma_status"),
]


# -- the endpoints ---------------------------------------------------------------------------------


def test_status_and_reads_of_an_empty_session(client: ApiHookClient) -> None:
    assert client.wait_for_server(timeout=3)
    status = client.get_status()
    assert status["status"] == "ok" and status["label"] == "test" and status["pending_asks"] == 0
    assert client.get_project() == {}
    assert client.get_session() == {"id": None, "entries": []}
    assert client.get_calls() == [] and client.get_asks() == [] and client.get_servers() == []
    performance = client.get_performance()
    assert performance["memory"]["rss_bytes"] > 0 and performance["tool_calls"]["total"] == 0
    assert performance["threads"] >= 2 and performance["uptime_s"] >= 0


def test_project_and_session_round_trip_and_are_announced(client: ApiHookClient) -> None:
    assert client.post_project({"name": "demo", "roots": ["a"]}) == {"status": "updated"}
    assert client.get_project() == {"name": "demo", "roots": ["a"]}
    entries = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    assert client.post_session(entries, id="s1") == {"status": "updated"}
    assert client.get_session() == {"id": "s1", "entries": entries}
    assert client.get_value("session.entries.-1.content") == "hello"
    assert client.wait_for_value("project.name", "demo", timeout=1)
    kinds = [e["type"] for e in client.get_events()]
    assert kinds == ["project_updated", "session_updated"]
    assert client.get_events() == []  # drained


def test_events_hold_the_state_as_it_was_when_they_happened(server: ControlServer, client: ApiHookClient) -> None:
    server.state.set_session({"id": "s", "entries": []})
    server.state.add_entry({"role": "user", "content": "hi"})
    updated, added = client.get_events()
    assert updated["session"]["entries"] == [] and added["entry"] == {"role": "user", "content": "hi"}


def test_tool_calls_model_requests_and_servers_show_up(server: ControlServer, client: ApiHookClient) -> None:
    state = server.state
    call_id = state.call_started("read_file", {"path": "a.txt"}, "codeward")
    assert client.get_calls()[0]["status"] == "running"
    state.call_finished(call_id, is_error=False, seconds=0.012, text="contents")
    failed = state.call_started("write_file", {"path": "b.txt"}, "codeward")
    state.call_finished(failed, is_error=True, seconds=0.003, text="ERROR (permission): no")
    request = state.model_request("fake-model", messages=2, tools=5)
    state.model_response(request, "fake-model", seconds=0.2, ok=True, text="done", tool_calls=["read_file"])
    state.set_servers([{"alias": "git", "state": "ready", "tools": 3}])
    calls = {c["name"]: c for c in client.get_calls()}
    assert calls["read_file"]["status"] == "ok" and calls["read_file"]["duration_ms"] == 12.0
    assert calls["read_file"]["preview"] == "contents" and calls["read_file"]["arguments"] == {"path": "a.txt"}
    assert calls["write_file"]["status"] == "error"
    performance = client.get_performance()
    assert performance["tool_calls"]["total"] == 2 and performance["tool_calls"]["errors"] == 1
    assert {t["name"] for t in performance["tool_calls"]["by_name"]} == {"read_file", "write_file"}
    assert performance["model_requests"]["by_name"][0]["p50_ms"] == 200.0
    assert client.get_servers() == [{"alias": "git", "state": "ready", "tools": 3}]
    kinds = [e["type"] for e in client.get_events()]
    assert kinds.count("tool_call") == 4 and "model_request" in kinds and "model_response" in kinds
    assert kinds[-1] == "servers"


def test_console_files_are_served(server: ControlServer) -> None:
    status, headers, body = raw(server, "GET", "/console/", headers=bearer(server))
    assert status == 200 and headers["content-type"].startswith("text/html") and b"console.js" in body
    status, headers, body = raw(server, "GET", "/console/console.js", headers=bearer(server))
    assert status == 200 and b"EventSource" in body
    status, headers, _ = raw(server, "GET", "/", headers=bearer(server))
    assert status == 303 and headers["location"] == "/console/"


# -- who may ask ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("method", "path"), ENDPOINTS)
def test_every_endpoint_needs_the_token(server: ControlServer, method: str, path: str) -> None:
    body = {} if method == "POST" else None
    status, headers, payload = raw(server, method, path, body)
    assert status == 401, payload
    assert "bearer" in headers.get("www-authenticate", "").lower()
    status, _, _ = raw(server, method, path, body, headers={"Authorization": "Bearer not-the-token"})
    assert status == 401


def test_a_wrong_token_is_a_clear_client_error(server: ControlServer) -> None:
    with pytest.raises(HookError) as caught:
        ApiHookClient(server.url, "nope", max_retries=0).get_status()
    assert caught.value.status == 401 and "bearer token" in str(caught.value)


def test_the_token_in_a_query_only_opens_the_console(server: ControlServer) -> None:
    status, _, _ = raw(server, "GET", f"/api/session?token={server.token}")
    assert status == 401
    status, _, _ = raw(server, "GET", "/?token=wrong")
    assert status == 401


@pytest.mark.parametrize("host", ["evil.example:8999", "evil.example", "127.0.0.1:1", "localhost", "192.168.1.5:80"])
def test_foreign_host_is_refused_even_with_the_token(server: ControlServer, host: str) -> None:
    status, _, body = raw(server, "GET", "/api/session", headers=bearer(server), host=host)
    assert status == 403 and json.loads(body)["error"] == "forbidden_host"


def test_loopback_names_of_the_server_are_accepted(server: ControlServer) -> None:
    for name in ("127.0.0.1", "localhost", "[::1]"):
        status, _, _ = raw(server, "GET", "/status", headers=bearer(server), host=f"{name}:{server.port}")
        assert status == 200, name


@pytest.mark.parametrize("origin", ["http://evil.example", "http://127.0.0.1:1", "null", "https://127.0.0.1"])
def test_foreign_origin_is_refused_even_with_the_token(server: ControlServer, origin: str) -> None:
    status, _, body = raw(server, "POST", "/api/project", {"project": {"x": 1}},
                          headers={**bearer(server), "Origin": origin})
    assert status == 403 and json.loads(body)["error"] == "forbidden_origin"
    assert server.state.project() == {}


def test_own_origin_is_accepted(server: ControlServer) -> None:
    status, _, _ = raw(server, "POST", "/api/project", {"project": {"x": 1}},
                       headers={**bearer(server), "Origin": f"http://127.0.0.1:{server.port}"})
    assert status == 200 and server.state.project() == {"x": 1}


def test_console_url_sets_a_strict_cookie_that_only_same_origin_requests_can_use(server: ControlServer) -> None:
    assert server.console_url == f"{server.url}/?token={server.token}"
    status, headers, _ = raw(server, "GET", f"/?token={server.token}", headers={"Sec-Fetch-Site": "none"})
    assert status == 303 and headers["location"] == "/console/"
    cookie = headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and server.token in cookie
    jar = {"Cookie": cookie.split(";")[0]}
    for site in ("same-origin", "none"):
        status, _, _ = raw(server, "GET", "/api/session", headers={**jar, "Sec-Fetch-Site": site})
        assert status == 200, site
    for site in ("same-site", "cross-site"):
        status, _, body = raw(server, "GET", "/api/events", headers={**jar, "Sec-Fetch-Site": site})
        assert status == 403 and json.loads(body)["error"] == "forbidden_site", site
    status, _, _ = raw(server, "GET", "/api/session", headers={"Cookie": "codeward_control_1=" + server.token})
    assert status == 401  # another port's cookie name


def test_token_file_is_private_and_removed_at_stop(tmp_path: Path) -> None:
    server = ControlServer(ControlState(), port=0, token_dir=tmp_path / "control").start()
    try:
        path = server.token_file_path
        assert path is not None and path.name == f"{server.port}.token"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert path.read_text().strip() == server.token
        assert ApiHookClient.for_port(server.port, home=tmp_path).get_status()["status"] == "ok"
    finally:
        server.stop()
    assert not path.exists()
    with pytest.raises(HookError, match="no token file"):
        ApiHookClient.for_port(server.port, home=tmp_path)


def test_each_run_gets_its_own_token() -> None:
    first, second = ControlServer(ControlState(), port=0), ControlServer(ControlState(), port=0)
    assert first.token != second.token and len(first.token) >= 32


def test_non_loopback_bind_needs_the_explicit_flag() -> None:
    with pytest.raises(ValueError, match="--control-allow-remote"):
        ControlServer(ControlState(), host="0.0.0.0", port=0)
    remote = ControlServer(ControlState(), host="0.0.0.0", port=0, allow_remote=True).start()
    try:  # still needs the token
        client = ApiHookClient(f"http://127.0.0.1:{remote.port}", None, max_retries=0)
        with pytest.raises(HookError) as caught:
            client.get_status()
        assert caught.value.status == 401
        assert ApiHookClient(f"http://127.0.0.1:{remote.port}", remote.token).get_status()["status"] == "ok"
    finally:
        remote.stop()


def test_a_taken_port_is_a_clear_error(server: ControlServer) -> None:
    with pytest.raises(OSError, match=r"already in use.*--control-port"):
        ControlServer(ControlState(), port=server.port).start()


# -- asks -------------------------------------------------------------------------------------------------


def test_ask_blocks_until_respond_unblocks_it(client: ApiHookClient) -> None:
    answers: list[Any] = []
    asker = threading.Thread(target=lambda: answers.append(
        client.request_confirmation("write_file", {"path": "x.txt"}, timeout=10)))
    asker.start()
    event = client.wait_for_event("ask_received", timeout=5)
    assert event is not None and event["data"] == {"type": "tool_confirmation", "tool": "write_file",
                                                   "args": {"path": "x.txt"}}
    assert [a["request_id"] for a in client.get_asks()] == [event["request_id"]]
    assert asker.is_alive()  # still blocked
    assert client.respond(event["request_id"], {"approved": True})
    asker.join(timeout=5)
    assert answers == [{"approved": True}]
    assert client.get_asks() == []
    resolved = client.wait_for_event("ask_resolved", timeout=2)
    assert resolved is not None and resolved["by"] == "api"


def test_ask_without_an_answer_times_out_with_504(server: ControlServer, client: ApiHookClient) -> None:
    status, _, body = raw(server, "POST", "/api/ask", {"question": "deploy?", "timeout": 0.2}, headers=bearer(server))
    reply = json.loads(body)
    assert status == 504 and reply["error"] == "timeout" and "0.2 s" in reply["message"]
    assert client.get_asks() == []
    assert not client.respond(reply["request_id"], "yes")  # too late: 404
    assert client.ask({"question": "again?"}, timeout=0.2) is None


def test_respond_to_an_unknown_id_is_404(server: ControlServer, client: ApiHookClient) -> None:
    status, _, body = raw(server, "POST", "/api/ask/respond", {"request_id": "no-such-id", "response": True},
                          headers=bearer(server))
    reply = json.loads(body)
    assert status == 404 and "no-such-id" in reply["message"] and "/api/asks" in reply["hint"]
    assert client.respond("no-such-id", True) is False


def test_an_ask_is_answered_once(server: ControlServer, client: ApiHookClient) -> None:
    pending = server.state.asks.open({"q": 1})
    assert client.respond(pending.request_id, "first")
    assert not client.respond(pending.request_id, "second")
    assert pending.future.result(timeout=1) == "first"


def test_concurrent_asks_each_get_their_own_answer(client: ApiHookClient) -> None:
    results: dict[int, Any] = {}
    lock = threading.Lock()

    def ask(n: int) -> None:
        answer = client.ask({"n": n}, timeout=10)
        with lock:
            results[n] = answer

    askers = [threading.Thread(target=ask, args=(n,)) for n in range(8)]
    for thread in askers:
        thread.start()
    deadline = time.monotonic() + 10
    while len(client.get_asks()) < 8 and time.monotonic() < deadline:
        time.sleep(0.02)
    pending = client.get_asks()
    assert sorted(a["data"]["n"] for a in pending) == list(range(8))
    answerers = [threading.Thread(target=client.respond, args=(a["request_id"], {"echo": a["data"]["n"] * 10}))
                 for a in reversed(pending)]
    for thread in answerers:
        thread.start()
    for thread in [*answerers, *askers]:
        thread.join(timeout=10)
    assert results == {n: {"echo": n * 10} for n in range(8)}


def test_ask_gone_when_the_asker_disconnects(server: ControlServer, client: ApiHookClient) -> None:
    with pytest.raises(OSError):
        raw(server, "POST", "/api/ask", {"q": "?"}, headers=bearer(server), timeout=0.3)
    deadline = time.monotonic() + 5
    while client.get_asks() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert client.get_asks() == []
    assert client.wait_for_event("ask_cancelled", timeout=2) is not None


# -- bad input ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("path", "body", "fragment"), [
    ("/api/project", b"{not json", "not valid JSON"),
    ("/api/project", [1, 2], "must be a JSON object"),
    ("/api/project", {"project": "x"}, "'project' object"),
    ("/api/session", {"session": {"entries": "x"}}, "'entries' is a list"),
    ("/api/ask", {"timeout": -1}, "timeout must be a number"),
    ("/api/ask", {"timeout": "soon"}, "timeout must be a number"),
    ("/api/ask/respond", {"response": True}, "'request_id' string"),
])
def test_bad_bodies_are_400_with_a_hint(server: ControlServer, path: str, body: Any, fragment: str) -> None:
    before = server.state.snapshot()
    status, _, payload = raw(server, "POST", path, body, headers=bearer(server))
    reply = json.loads(payload)
    assert status == 400 and fragment in reply["message"] and reply["hint"]
    assert server.state.snapshot() == before  # nothing changed


def test_oversized_body_is_413(server: ControlServer) -> None:
    big = {"project": {"blob": "x" * (2 * 1024 * 1024)}}
    status, _, payload = raw(server, "POST", "/api/project", big, headers=bearer(server))
    assert status == 413 and "larger than" in json.loads(payload)["message"]
    assert server.state.project() == {}


def test_unknown_endpoint_and_wrong_method(server: ControlServer) -> None:
    status, _, payload = raw(server, "GET", "/api/nope", headers=bearer(server))
    assert status == 404 and "/api/session" in json.loads(payload)["hint"]
    status, _, payload = raw(server, "DELETE", "/api/session", headers=bearer(server))
    assert status == 405


# -- the live stream --------------------------------------------------------------------------------------


def read_events(response: http.client.HTTPResponse, count: int) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    data: list[str] = []
    while len(events) < count:
        line = response.fp.readline().decode()
        if not line:
            break
        line = line.rstrip("\n")
        if line.startswith("data: "):
            data.append(line[6:])
        elif line == "" and data:
            events.append(json.loads("".join(data)))
            data = []
    return events


def open_stream(server: ControlServer, headers: dict[str, str] | None = None,
                query: str = "") -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    connection.request("GET", "/api/events/stream" + query, headers={**bearer(server), **(headers or {})})
    response = connection.getresponse()
    assert response.status == 200 and response.getheader("content-type", "").startswith("text/event-stream")
    return connection, response


def test_stream_starts_with_a_snapshot_then_delivers_events_live(server: ControlServer) -> None:
    state = server.state
    first = state.call_started("read_file", {"path": "a"}, "codeward")
    connection, response = open_stream(server)
    try:
        snapshot = read_events(response, 1)[0]
        assert snapshot["type"] == "snapshot" and [c["id"] for c in snapshot["calls"]] == [first]
        state.call_finished(first, is_error=False, seconds=0.001, text="ok")
        state.add_entry({"role": "user", "content": "hi"})
        live = read_events(response, 2)
        assert [e["type"] for e in live] == ["tool_call", "session_entry"]
        assert live[0]["call"]["status"] == "ok" and live[0]["seq"] == snapshot["seq"] + 1
    finally:
        connection.close()


def test_stream_resumes_after_the_last_event_id(server: ControlServer) -> None:
    state = server.state
    for n in range(3):
        state.add_entry({"role": "user", "content": str(n)})
    connection, response = open_stream(server, {"Last-Event-ID": "1"})
    try:
        replayed = read_events(response, 2)
        assert [e["entry"]["content"] for e in replayed] == ["1", "2"]
    finally:
        connection.close()


def test_stream_ends_when_the_server_stops(tmp_path: Path) -> None:
    server = ControlServer(ControlState(), port=0).start()
    connection, response = open_stream(server, query="?snapshot=0")
    stopper = threading.Thread(target=server.stop)
    stopper.start()
    rest = response.read()  # returns once the server closed the stream
    stopper.join(timeout=10)
    assert not stopper.is_alive() and b"snapshot" not in rest
    connection.close()


# -- the client's connection handling -----------------------------------------------------------------------


def test_client_waits_and_retries_until_the_server_is_up() -> None:
    port = free_port()
    client = ApiHookClient(f"http://127.0.0.1:{port}", "t" * 40, max_retries=6, retry_delay=0.05)
    assert client.wait_for_server(timeout=0.2) is False
    server = ControlServer(ControlState("late"), port=port, token="t" * 40)
    starter = threading.Timer(0.3, server.start)
    starter.start()
    try:
        assert client.get_status()["label"] == "late"  # retried with backoff meanwhile
    finally:
        starter.join()
        server.stop()


def test_client_gives_up_with_a_clear_error() -> None:
    client = ApiHookClient(f"http://127.0.0.1:{free_port()}", "t", max_retries=1, retry_delay=0.01)
    with pytest.raises(HookError, match="cannot reach the control API"):
        client.get_status()


def test_get_value_of_an_unknown_field_is_a_key_error(client: ApiHookClient) -> None:
    with pytest.raises(KeyError, match="no field or endpoint 'gui'"):
        client.get_value("gui.button")


def test_events_from_many_threads_arrive_once_and_in_order(server: ControlServer) -> None:
    state = server.state
    connection, response = open_stream(server, query="?snapshot=0")
    try:
        def work(n: int) -> None:
            for i in range(100):
                state.add_entry({"role": "user", "content": f"{n}-{i}"})

        workers = [threading.Thread(target=work, args=(n,)) for n in range(6)]
        for thread in workers:
            thread.start()
        for thread in workers:
            thread.join()
        events = read_events(response, 600)
    finally:
        connection.close()
    assert [e["seq"] for e in events] == list(range(events[0]["seq"], events[0]["seq"] + 600))
    assert sorted(e["entry"]["content"] for e in events) == sorted(f"{n}-{i}" for n in range(6) for i in range(100))
    assert [e["index"] for e in events] == list(range(600))
    assert len(state.session()["entries"]) == 600


def test_a_watcher_that_cannot_keep_up_is_cut_off() -> None:
    import asyncio

    from codeward.apps.control.events import SUBSCRIBER_QUEUE, EventHub

    async def scenario() -> tuple[bool, Any]:
        hub = EventHub()
        subscription, _ = hub.subscribe()
        for n in range(SUBSCRIBER_QUEUE + 5):
            hub.publish("tick", n=n)
        await asyncio.sleep(0)  # let the hand-overs run
        return subscription.lagged, await subscription.next(timeout=1)

    lagged, last = asyncio.run(scenario())
    assert lagged and last is None
