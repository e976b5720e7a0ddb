"""The sandbox API other tools build on: probe_sandbox + Sandbox.run, on every backend here."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeward.engines.sandbox import Limit, Sandbox, SandboxRequest, SandboxUnavailable, Status, probe_sandbox
from codeward.engines.sandbox.cgroups import RunCgroup, detect_layout
from tests.conftest import snapshot
from tests.sandbox_support import bwrap_works, survivors

BACKENDS = [pytest.param("bwrap", marks=pytest.mark.skipif(not bwrap_works(), reason="no bwrap here")), "process"]


@pytest.fixture(scope="module", params=BACKENDS)
def sandbox(request: pytest.FixtureRequest) -> Sandbox:
    return probe_sandbox(request.param)


def test_runs_a_command_with_stdin_and_names_its_backend(sandbox: Sandbox) -> None:
    result = sandbox.run(SandboxRequest(argv=["bash", "-c", "read line; echo got:$line; echo oops >&2; exit 3"],
                                        stdin="hello\n"))
    assert result.status is Status.ERROR
    assert result.exit_code == 3
    assert result.stdout == "got:hello\n"
    assert result.stderr == "oops\n"
    assert result.backend == sandbox.name
    assert result.isolated is (sandbox.name == "bwrap")
    assert result.error_message == "the program exited with status 3"


def test_environment_is_scrubbed(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEWARD_TEST_SECRET", "leak-me")
    result = sandbox.run(SandboxRequest(argv=["env"], env={"GIVEN": "yes"}))
    assert result.ok
    names = {line.split("=", 1)[0] for line in result.stdout.splitlines()}
    assert "CODEWARD_TEST_SECRET" not in names
    assert {"PATH", "HOME", "GIVEN"} <= names
    assert names <= {"PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "GIVEN", "PWD", "SHLVL", "_"}


def test_read_write_bind_is_the_only_writable_host_path(sandbox: Sandbox, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "input.txt").write_text("data\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    before = snapshot(outside)
    script = f"cat input.txt > copy.txt && echo made > {outside}/nope.txt; echo done"
    result = sandbox.run(SandboxRequest(argv=["bash", "-c", script], workdir=str(project), rw_binds=[str(project)]))
    assert result.ok, result
    assert (project / "copy.txt").read_text() == "data\n"
    if sandbox.isolated:
        assert snapshot(outside) == before
    else:
        assert before == {} and sorted(snapshot(outside)) in ([], ["nope.txt"])


def test_read_only_bind_cannot_be_changed(sandbox: Sandbox, tmp_path: Path) -> None:
    if not sandbox.isolated:
        pytest.skip("the process backend has no mount namespace to make binds read-only")
    source = tmp_path / "ro"
    source.mkdir()
    (source / "keep.txt").write_text("original\n")
    before = snapshot(source)
    result = sandbox.run(SandboxRequest(argv=["bash", "-c", "cat /data/keep.txt; echo changed > /data/keep.txt"],
                                        ro_binds=[(str(source), "/data")]))
    assert result.status is Status.ERROR
    assert result.stdout == "original\n"
    assert "Read-only file system" in result.stderr
    assert snapshot(source) == before


def test_timeout_kills_the_whole_process_tree(sandbox: Sandbox) -> None:
    seconds = f"{5000 + uuid.uuid4().int % 1000}.5"
    script = f"sleep {seconds} & setsid sleep {seconds} & sleep {seconds}"
    result = sandbox.run(SandboxRequest(argv=["bash", "-c", script], timeout_s=1))
    assert result.status is Status.TIMEOUT
    assert result.limit_hit is Limit.TIMEOUT
    assert "timed out after 1 s" in (result.error_message or "")
    assert survivors(f"sleep {seconds}") == []


def test_background_process_is_killed_when_the_main_one_exits(sandbox: Sandbox) -> None:
    seconds = f"{6000 + uuid.uuid4().int % 1000}.5"
    result = sandbox.run(SandboxRequest(argv=["bash", "-c", f"setsid sleep {seconds} >/dev/null 2>&1 & echo started"]))
    assert result.ok
    assert result.stdout == "started\n"
    assert survivors(f"sleep {seconds}") == []


def test_output_is_capped_and_a_flood_is_killed(sandbox: Sandbox) -> None:
    capped = sandbox.run(SandboxRequest(argv=["bash", "-c", "head -c 5000 /dev/zero | tr '\\0' a"],
                                        max_output_bytes=1000))
    assert capped.ok
    assert len(capped.stdout) == 1000 and capped.stdout_truncated
    assert any("cut at 1000 bytes" in note for note in capped.notes)
    flood = sandbox.run(SandboxRequest(argv=["bash", "-c", "yes"], max_output_bytes=1000, timeout_s=20))
    assert flood.status is Status.ERROR
    assert flood.limit_hit is Limit.OUTPUT
    assert "printed more than" in (flood.error_message or "")


def test_missing_program_is_a_setup_or_run_error_not_an_exception(sandbox: Sandbox) -> None:
    result = sandbox.run(SandboxRequest(argv=["/nonexistent/program"]))
    assert result.status is Status.SETUP_ERROR
    assert "/nonexistent/program" in (result.error_message or "")
    assert "No such file or directory" in (result.error_message or "")
    assert result.backend == sandbox.name


@pytest.mark.skipif(detect_layout() is None, reason="no writable cgroups here")
def test_memory_limit_comes_from_the_cgroup(sandbox: Sandbox) -> None:
    result = sandbox.run(SandboxRequest(argv=["python3", "-c", "x = bytearray(300 * 1024 * 1024)"], memory_mb=64))
    assert result.status is Status.ERROR
    assert result.limit_hit is Limit.MEMORY
    assert "out of memory" in (result.error_message or "")


def test_process_backend_says_it_is_not_isolated() -> None:
    sandbox = probe_sandbox("process")
    result = sandbox.run(SandboxRequest(argv=["true"]))
    assert result.ok and result.isolated is False
    assert any("NOT isolated" in note for note in result.notes)
    assert "NOT isolated" in sandbox.describe()


def test_unknown_backend_is_refused_with_the_choices() -> None:
    with pytest.raises(SandboxUnavailable, match="choose one of bwrap, docker, process"):
        probe_sandbox("chroot")


def test_docker_backend_says_clearly_when_no_engine_answers() -> None:
    try:
        probe_sandbox("docker")
    except SandboxUnavailable as exc:
        assert "no Docker engine is reachable" in str(exc)
    else:
        pytest.skip("a Docker engine answers here")


@pytest.mark.skipif(not bwrap_works(), reason="no bwrap here")
def test_bwrap_runs_without_capabilities_as_an_unprivileged_user() -> None:
    script = "id -u; grep -E '^(CapEff|Seccomp):' /proc/self/status"
    result = probe_sandbox("bwrap").run(SandboxRequest(argv=["bash", "-c", script]))
    assert result.ok
    uid, caps, seccomp = result.stdout.splitlines()
    assert uid == "1000"
    assert caps.split()[1] == "0000000000000000"
    assert seccomp.split()[1] == "2"  # a seccomp filter is installed


@pytest.mark.skipif(detect_layout() is None, reason="no writable cgroups here")
def test_a_cgroup_kill_is_all_at_once() -> None:
    """Thirty shells each wait on a ``sleep``; killing their group must not let one of them see its
    child die and print. Signalled one by one (in the order a set of pids iterates) while other
    threads took turns with the killer, some sleeps died before their shells, which then ran on:
    the group is frozen (v1) or ``cgroup.kill``-ed (v2), so all die together."""
    layout = detect_layout()
    assert layout is not None
    group = RunCgroup.create(layout, memory_mb=256, max_processes=200)
    script = 'for i in $(seq 30); do (sleep 30; echo "never $i") & done; echo started; wait; echo never'
    try:
        proc = subprocess.Popen(["bash", "-c", script], stdout=subprocess.PIPE, start_new_session=True,
                                preexec_fn=lambda: RunCgroup.enter(group.procs_files))
        assert proc.stdout is not None
        assert proc.stdout.readline() == b"started\n"
        deadline = time.monotonic() + 10
        while len(group.pids()) < 61 and time.monotonic() < deadline:  # the shell, 30 subshells, 30 sleeps
            time.sleep(0.01)
        assert len(group.pids()) == 61
        with _busy_threads():  # a server's other threads take turns with the killer, as on a loaded machine
            assert group.kill() == 61
        assert proc.wait(timeout=10) == -9
        assert proc.stdout.read() == b""
    finally:
        group.remove()


FORK_THEN_EAT = """
import os, time
for _ in range(20):
    try:
        if os.fork() == 0:
            time.sleep(5)
            os._exit(0)
    except OSError:
        break
x = bytearray(300 * 1024 * 1024)
"""


@pytest.mark.skipif(detect_layout() is None, reason="no writable cgroups here")
def test_a_groups_counters_opened_ahead_tell_what_happened_after() -> None:
    """A group's counter files are opened when it is made (a box prepared ahead makes its group before the
    call) and read after the run: the pids limit hit, the OOM kill and the memory peak that came in
    between are what :meth:`RunCgroup.events` reports, not what the files held when opened."""
    layout = detect_layout()
    assert layout is not None
    group = RunCgroup.create(layout, memory_mb=64, max_processes=8)
    try:
        before = group.events()
        assert not before.oom_killed and not before.pids_limited
        subprocess.run([sys.executable, "-c", FORK_THEN_EAT], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=60, check=False,
                       preexec_fn=lambda: RunCgroup.enter(group.procs_files))
        after = group.events()
        assert after.oom_killed and after.pids_limited
        assert after.peak_memory_mb is not None and after.peak_memory_mb > 32
    finally:
        group.remove()


@contextlib.contextmanager
def _busy_threads() -> Iterator[None]:
    """Two threads computing while the block runs, the interpreter switching between threads often."""
    stop = threading.Event()
    before = sys.getswitchinterval()

    def spin() -> None:
        while not stop.is_set():
            sum(range(1000))

    threads = [threading.Thread(target=spin) for _ in range(2)]
    sys.setswitchinterval(0.0002)
    for thread in threads:
        thread.start()
    try:
        yield
    finally:
        stop.set()
        for thread in threads:
            thread.join()
        sys.setswitchinterval(before)
