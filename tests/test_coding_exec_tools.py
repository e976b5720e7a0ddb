"""The execution tools through the catalog: bad input, sessions, warm pool, languages, monitor, docker."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from codeward.config import CodingSettings
from codeward.engines.execution.languages import detect_toolchains
from codeward.engines.execution.runtime import CodingRuntime
from codeward.kernel.catalog import Catalog
from codeward.kernel.outcome import ToolOutcome
from tests.conftest import snapshot
from tests.sandbox_support import caller, context, runtime_fixture

pytestmark = pytest.mark.xdist_group("coding-tools")

runtime = pytest.fixture(scope="module")(runtime_fixture())


@pytest.fixture
def run(catalog: Catalog, root: Path, runtime: CodingRuntime) -> Callable[..., ToolOutcome]:
    return caller(catalog, context(root, runtime))


def structured(outcome: ToolOutcome) -> dict[str, object]:
    assert outcome.structured is not None, outcome.text
    return outcome.structured


# -- bad input ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"language": "cobol", "code": "x"}, "one of 'python', 'javascript'"),
        ({"language": "python"}, "missing required argument 'code'"),
        ({"language": "python", "code": "print(1)", "timeout": 0}, "timeout"),
        ({"language": "python", "code": "print(1)", "timeout": 301}, "timeout"),
        ({"language": "python", "code": "print(1)", "memory_mb": 1}, "memory_mb"),
        ({"language": "python", "code": "print(1)", "stdin": 5}, "stdin"),
    ],
)
def test_invalid_arguments_are_rejected_with_a_clear_message(
    run: Callable[..., ToolOutcome], root: Path, arguments: dict[str, object], expected: str
) -> None:
    outcome = run("coding_execute_code", **arguments)
    assert outcome.is_error
    assert expected in outcome.text
    assert snapshot(root) == {}


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"language": "python", "code": "   \n"}, "code is empty"),
        ({"language": "python", "code": "print(1)", "session_id": "../../etc"}, "session_id '../../etc' is not valid"),
        ({"language": "python", "code": "x" * 1_000_001}, "larger than 1000000 bytes"),
    ],
)
def test_unusable_input_is_a_setup_error(
    run: Callable[..., ToolOutcome], root: Path, arguments: dict[str, object], expected: str
) -> None:
    outcome = run("coding_execute_code", **arguments)
    assert outcome.is_error
    assert "setup_error" in outcome.text and expected in outcome.text
    assert "code_list_languages" in outcome.text
    assert snapshot(root) == {}


def test_program_failure_is_a_result_not_a_tool_error(run: Callable[..., ToolOutcome]) -> None:
    outcome = run("coding_execute_code", language="python", code="raise ValueError('bad value')")
    assert not outcome.is_error
    result = structured(outcome)
    assert result["status"] == "error" and result["exit_code"] == 1
    assert "ValueError: bad value" in str(result["stderr"])
    assert 'File "/code/main.py", line 1' in str(result["stderr"])
    assert "status: error" in outcome.text and "--- stderr ---" in outcome.text


# -- warm pool and sessions ----------------------------------------------------------------


def test_python_calls_use_the_warm_pool_once_it_is_ready(
    run: Callable[..., ToolOutcome], runtime: CodingRuntime
) -> None:
    pool = runtime.pool()
    assert pool is not None
    assert pool.wait_ready(20)
    first = structured(run("coding_execute_code", language="python", code="import sys\nprint(sys.stdin.read()[::-1])",
                           stdin="abc"))
    assert first["warm"] is True and first["stdout"] == "cba\n"
    assert pool.wait_ready(20)
    second = structured(run("coding_execute_code", language="python", code="import sys; sys.exit(5)"))
    assert second["warm"] is True and second["exit_code"] == 5 and second["status"] == "error"
    assert pool.wait_ready(20)
    exit_code = ("import atexit, threading, time\n"
                 "atexit.register(lambda: print('atexit ran'))\n"
                 "threading.Thread(target=lambda: (time.sleep(0.2), print('thread finished'))).start()\n"
                 "print('main done')\n")
    ending = structured(run("coding_execute_code", language="python", code=exit_code))
    assert ending["warm"] is True
    assert ending["stdout"] == "main done\nthread finished\natexit ran\n"
    assert pool.wait_ready(20)
    syntax = structured(run("coding_execute_code", language="python", code="def broken(:\n"))
    assert syntax["status"] == "error" and "SyntaxError" in str(syntax["stderr"])
    assert 'File "/code/main.py", line 1' in str(syntax["stderr"])


def test_sessions_keep_state_between_calls(run: Callable[..., ToolOutcome]) -> None:
    first = structured(run("coding_execute_code", language="python", code="counter = 41\nimport math",
                           session_id="state-test"))
    assert first["status"] == "success" and first["session_id"] == "state-test"
    assert any("started session" in note for note in first["notes"])  # type: ignore[union-attr]
    second = structured(run("coding_execute_code", language="python", code="counter += 1\nmath.sqrt(counter ** 2)",
                            session_id="state-test"))
    assert second["stdout"] == "42.0\n"
    other = structured(run("coding_execute_code", language="python", code="print(counter)", session_id="other"))
    assert other["status"] == "error" and "NameError" in str(other["stderr"])
    reads = structured(run("coding_execute_code", language="python", code="print(input().upper(), counter)",
                           session_id="state-test", stdin="hi\n"))
    assert reads["stdout"] == "HI 42\n"


def test_session_timeout_ends_the_session_and_says_so(run: Callable[..., ToolOutcome]) -> None:
    run("coding_execute_code", language="python", code="kept = 1", session_id="doomed")
    slow = structured(run("coding_execute_code", language="python", code="while True: pass", session_id="doomed",
                          timeout=1))
    assert slow["status"] == "timeout"
    assert any("state is gone" in note for note in slow["notes"])  # type: ignore[union-attr]
    fresh = structured(run("coding_execute_code", language="python", code="print(kept)", session_id="doomed"))
    assert fresh["status"] == "error" and "NameError" in str(fresh["stderr"])


def test_idle_sessions_expire(catalog: Catalog, root: Path) -> None:
    runtime = CodingRuntime(CodingSettings(session_idle_s=0.3, pool_size=0))
    try:
        run = caller(catalog, context(root, runtime))
        run("coding_execute_code", language="python", code="value = 7", session_id="short")
        time.sleep(0.5)
        later = structured(run("coding_execute_code", language="python", code="print(value)", session_id="short"))
        assert later["status"] == "error" and "NameError" in str(later["stderr"])
        assert any("had expired" in note for note in later["notes"])  # type: ignore[union-attr]
    finally:
        runtime.close()


def test_session_id_for_a_language_without_sessions_says_it_is_ignored(run: Callable[..., ToolOutcome]) -> None:
    result = structured(run("coding_execute_code", language="bash", code="echo hi", session_id="sh"))
    assert result["status"] == "success"
    assert any("only python sessions" in note for note in result["notes"])  # type: ignore[union-attr]


# -- languages --------------------------------------------------------------------------------


def test_list_languages_names_all_eight_and_the_sandbox(run: Callable[..., ToolOutcome]) -> None:
    outcome = run("code_list_languages")
    result = structured(outcome)
    names = [entry["name"] for entry in result["languages"]]  # type: ignore[union-attr, index]
    assert names == ["python", "javascript", "bash", "c", "cpp", "go", "rust", "java"]
    python = result["languages"][0]  # type: ignore[index]
    assert python["available"] is True and python["sessions"] is True
    assert result["backend"] in ("bwrap", "process", "docker")
    assert "sandbox:" in outcome.text


def test_unavailable_languages_say_why(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    chains = detect_toolchains()
    assert chains["python"].available  # found at its absolute path
    assert not chains["javascript"].available
    assert "node not found" in chains["javascript"].reason and "apt-get install nodejs" in chains["javascript"].reason
    assert not chains["go"].available and "golang-go" in chains["go"].reason


# -- monitoring -----------------------------------------------------------------------------


def test_monitor_records_a_timeline_of_memory_cpu_and_io(run: Callable[..., ToolOutcome]) -> None:
    code = ("import time\nblocks = []\n"
            "for step in range(6):\n"
            "    blocks.append(bytearray(15 * 1024 * 1024))\n"
            "    end = time.time() + 0.05\n"
            "    while time.time() < end: pass\n"
            "with open('/work/out.bin', 'wb') as handle:\n"
            "    handle.write(b'z' * 2_000_000)\n"
            "time.sleep(0.2)  # stay alive for a few samples after the write\n"
            "print('done')\n")
    outcome = run("coding_monitor_execution", language="python", code=code, sample_interval_ms=20,
                  include_memory_profile=True)
    result = structured(outcome)
    assert result["success"] is True
    assert result["execution_result"]["stdout"] == "done\n"  # type: ignore[index]
    metrics = result["metrics"]
    timeline = result["timeline"]
    assert isinstance(metrics, dict) and isinstance(timeline, list)
    assert len(timeline) >= 5
    assert metrics["peak_memory_mb"] >= 60
    assert metrics["io_write_bytes"] >= 2_000_000
    assert max(sample["cpu_percent"] for sample in timeline) > 10
    memories = [sample["memory_mb"] for sample in timeline]
    assert max(memories) > memories[0]
    assert result["memory_profile"]
    assert "--- metrics ---" in outcome.text


def test_monitor_reports_setup_errors_as_errors(run: Callable[..., ToolOutcome]) -> None:
    outcome = run("coding_monitor_execution", language="python", code="")
    assert outcome.is_error and "code is empty" in outcome.text


# -- docker ---------------------------------------------------------------------------------


def test_run_in_docker_says_clearly_when_no_engine_is_reachable(run: Callable[..., ToolOutcome]) -> None:
    from codeward.engines.sandbox import SandboxUnavailable
    from codeward.engines.sandbox.docker import engine_client

    try:
        engine_client()
    except SandboxUnavailable:
        pass
    else:
        pytest.skip("a Docker engine answers here")
    outcome = run("coding_run_in_docker", language="python", code="print(1)")
    assert outcome.is_error
    assert "setup_error" in outcome.text and "no Docker engine is reachable" in outcome.text
    assert "coding_execute_code" in outcome.text


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"image": "Bad Image!"}, "not a valid Docker image reference"),
        ({"memory_limit": "lots"}, "not a size like"),
        ({"environment": {"BAD-NAME": "1"}}, "environment variable names"),
        ({"cpu_limit": 0}, "cpu_limit"),
    ],
)
def test_run_in_docker_rejects_bad_arguments(
    run: Callable[..., ToolOutcome], arguments: dict[str, object], expected: str
) -> None:
    outcome = run("coding_run_in_docker", language="python", code="print(1)", **arguments)
    assert outcome.is_error and expected in outcome.text


# -- the process backend through the tool ----------------------------------------------------


def test_process_backend_results_are_marked_not_isolated(catalog: Catalog, root: Path) -> None:
    runtime = CodingRuntime(CodingSettings(backend="process", pool_size=0))
    try:
        run = caller(catalog, context(root, runtime))
        outcome = run("coding_execute_code", language="bash", code="echo hi; sleep 30 & disown; echo bye",
                      timeout=10)
        result = structured(outcome)
        assert result["backend"] == "process" and result["isolated"] is False
        assert result["stdout"] == "hi\nbye\n"
        assert "NOT isolated" in outcome.text
    finally:
        runtime.close()


def test_a_named_backend_that_cannot_run_is_refused_not_replaced(catalog: Catalog, root: Path) -> None:
    runtime = CodingRuntime(CodingSettings(backend="docker", pool_size=0))
    try:
        from codeward.engines.sandbox import SandboxUnavailable
        from codeward.engines.sandbox.docker import engine_client

        try:
            engine_client()
            pytest.skip("a Docker engine answers here")
        except SandboxUnavailable:
            pass
        outcome = caller(catalog, context(root, runtime))("coding_execute_code", language="bash", code="echo ok")
        assert outcome.is_error and "setup_error" in outcome.text
        assert "docker: no Docker engine is reachable" in outcome.text  # the operator named docker: nothing else
    finally:
        runtime.close()
