"""Python sessions of one server: owned by the client that started them, reached by handle when the
transport names no client, and bounded (idle timeout enforced without calls, count, memory)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from codeward.config import CodingSettings
from codeward.engines.execution.languages import BY_NAME
from codeward.engines.execution.runtime import CodingRuntime
from codeward.engines.execution.sessions import SessionStore
from codeward.engines.sandbox import SandboxRequest
from codeward.engines.sandbox.model import Status

pytestmark = pytest.mark.xdist_group("sandbox")


def _request(memory_mb: int = 128) -> SandboxRequest:
    language = BY_NAME["python"]
    return SandboxRequest(argv=[], timeout_s=30, memory_mb=memory_mb, max_processes=language.max_processes)


@pytest.fixture
def runtime() -> Iterator[CodingRuntime]:
    made = CodingRuntime(CodingSettings(pool_size=0, max_sessions=3, session_memory_budget_mb=400,
                                        session_idle_s=600))
    yield made
    made.close()


def _store(runtime: CodingRuntime) -> SessionStore:
    store = runtime.sessions()
    if store is None:
        pytest.skip("no sandbox that can hold a session here")
    return store


def _run(store: SessionStore, session_id: str, code: str, client: str | None = "", memory_mb: int = 128
         ) -> tuple[str, str, list[str]]:
    result, shown = store.run(session_id, code, _request(memory_mb), client)
    return result.stdout + result.stderr, shown, result.notes


def test_two_clients_with_one_session_id_have_two_interpreters(runtime: CodingRuntime) -> None:
    store = _store(runtime)
    assert _run(store, "s", "x = 42", client="alice")[1] == "s"
    out, _, _ = _run(store, "s", "print(x)", client="alice")
    assert out == "42\n"
    out, _, notes = _run(store, "s", "print(x)", client="bob")  # bob's "s" is his own, fresh
    assert "NameError" in out and any("started session 's'" in note for note in notes)
    _run(store, "s", "x = 1", client="bob")
    assert _run(store, "s", "print(x)", client="alice")[0] == "42\n"
    assert store.ids("alice") == ["s"] and store.ids("bob") == ["s"] and store.ids("") == []
    assert store.end_client("bob") == 1 and store.ids("bob") == []
    assert _run(store, "s", "print(x)", client="alice")[0] == "42\n"


def test_without_a_client_the_session_is_reached_only_by_its_handle(runtime: CodingRuntime) -> None:
    store = _store(runtime)
    _, handle, notes = _run(store, "work", "secret = 'mine'", client=None)
    assert handle.startswith("work.") and len(handle) >= 25 and len(handle) <= 64
    assert any(handle in note for note in notes), notes
    assert _run(store, handle, "print(secret)", client=None)[0] == "mine\n"
    guessed, other, _ = _run(store, "work", "print(secret)", client=None)  # the name alone: a new session
    assert "NameError" in guessed and other != handle
    assert "NameError" in _run(store, handle, "print(secret)", client="someone")[0]  # a client's own namespace
    assert _run(store, handle, "print(secret)", client=None)[0] == "mine\n"


def test_the_least_recently_used_session_makes_room_without_naming_another_client(runtime: CodingRuntime) -> None:
    store = _store(runtime)  # at most 3 sessions
    for name in ("a", "b"):
        _run(store, name, f"name = {name!r}", client="alice")
    _run(store, "c", "name = 'c'", client="bob")
    _, _, notes = _run(store, "d", "name = 'd'", client="bob")
    assert len(store) == 3
    assert any("(another's)" in note for note in notes) and not any("'a'" in note for note in notes), notes
    out, _, notes = _run(store, "a", "print(name)", client="alice")
    assert "NameError" in out and any("had expired" in note for note in notes)


def test_the_memory_budget_bounds_the_live_sessions(runtime: CodingRuntime) -> None:
    store = _store(runtime)  # 400 MB for all sessions together
    _run(store, "big", "x = 1", memory_mb=256)
    _, _, notes = _run(store, "bigger", "x = 2", memory_mb=256)
    assert store.ids("") == ["bigger"] and any("to make room" in note for note in notes)
    result, _ = store.run("huge", "x = 3", _request(memory_mb=512), "")
    assert result.status is Status.SETUP_ERROR and "memory budget of 400 MB" in (result.error_message or "")
    assert store.ids("") == ["bigger"]


def test_idle_sessions_end_without_another_call() -> None:
    runtime = CodingRuntime(CodingSettings(pool_size=0, session_idle_s=0.3))
    try:
        store = _store(runtime)
        _run(store, "short", "value = 7")
        assert len(store) == 1
        deadline = time.monotonic() + 30
        while len(store) and time.monotonic() < deadline:  # the reaper, not a call, ends it
            time.sleep(0.1)
        assert len(store) == 0
        out, _, notes = _run(store, "short", "print(value)")
        assert "NameError" in out and any("had expired" in note for note in notes)
    finally:
        runtime.close()


def test_the_configuration_names_exactly_the_languages_that_have_a_recipe() -> None:
    """``[coding] docker_images`` and a call's ``language`` are checked against the configuration's list,
    which lives below the engine that runs them: it must name every recipe, and only those."""
    from codeward.config.coding import LANGUAGE_NAMES

    assert tuple(BY_NAME) == LANGUAGE_NAMES
