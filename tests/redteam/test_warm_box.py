"""A box prepared ahead for the next ``run_shell`` (``engines/contained/warm_box.py``) is the box a
fresh run would get, as root and as the unprivileged user: the same descriptors and environment, no
trace of the run before it (its ``/tmp``, a process it left), the same limits; a secret the person
adds while it waits is hidden all the same (a box made for another secret list is not used); and
no waiting box outlives the server."""

from __future__ import annotations

import os
import time
import uuid

import psutil
import pytest

from tests.redteam.harness import Host

pytestmark = pytest.mark.anyio

WAITER = "mapfile -t -d"
LATE = "CW-REDTEAM-LATE-WARM-"
PROBE = "ls /proc/self/fd | tr '\\n' ' '; echo; env | sort; cat /tmp/left 2>/dev/null || echo no-left"


def stdout(text: str) -> str:
    return text.split("STDOUT:\n", 1)[-1].split("\nSTDERR:", 1)[0]


@pytest.fixture(autouse=True)
def prepared_boxes(host: Host) -> None:
    """The operator turns the box prepared ahead on (``[shell] warm_box``, off by default for now)."""
    config = host.project / "codeward.toml"
    config.write_text(config.read_text() + "\n[shell]\nwarm_box = true\n")
    os.chown(config, host.principal.uid, host.principal.gid)
    host.rebaseline()


def waiting_boxes(host: Host, grace_s: float = 10.0) -> set[int]:
    """The waiters of boxes this session's server prepared (its descendants), waited for up to ``grace_s``:
    a box is made in the background after a run."""
    deadline = time.monotonic() + grace_s
    while True:
        found = set()
        for proc in psutil.process_iter(["pid", "cmdline"]):
            if WAITER not in " ".join(proc.info.get("cmdline") or []):
                continue
            try:
                parents = proc.parents()
            except psutil.Error:
                continue
            if any(str(host.project) in " ".join(parent.cmdline()) for parent in parents if _alive(parent)):
                found.add(proc.info["pid"])
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running()
    except psutil.Error:
        return False


async def test_a_prepared_box_is_a_fresh_one(host: Host) -> None:
    marker = f"4712.{uuid.uuid4().int % 10**9}"
    seen: set[int] = set()
    async with host.serve() as session:
        cold = await session.call("run_shell", {"script": PROBE})  # the session's first run: a box built for it
        assert not cold.is_error and "no-left" in cold.text, cold.text
        seen |= waiting_boxes(host)
        assert seen, "no box was prepared after the first run"
        left = await session.call("run_shell", {"script": f"echo left > /tmp/left; (setsid sleep {marker} &); "
                                                          "echo planted"})
        assert "planted" in left.text, left.text
        warm = await session.call("run_shell", {"script": PROBE})
        assert stdout(warm.text) == stdout(cold.text), f"a fresh box:\n{cold.text}\na prepared one:\n{warm.text}"
        sleeper = await session.call("run_shell", {"script": f"pgrep -f 'slee[p] {marker}' || echo no-sleeper"})
        assert "no-sleeper" in sleeper.text, sleeper.text

        # the person adds a secret while a box waits: the next run must not read it
        seen |= waiting_boxes(host)
        host.place("late/.env", f"TOKEN={LATE}dotenv\n")
        read = await session.call("run_shell", {"script": "cat late/.env; echo done"})
        assert "done" in read.text and LATE not in read.text, read.text

        # the limits of the box it ran in: the timeout ends it and its tree
        slow = await session.call("run_shell", {"script": f"sleep {marker}", "timeout_s": 1})
        assert slow.is_error and "timed out after 1 s" in slow.text, slow.text
        seen |= waiting_boxes(host)
    deadline = time.monotonic() + 5
    while (left_over := [pid for pid in seen if psutil.pid_exists(pid)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not left_over, "a prepared box outlived the server"
    assert not [p for p in psutil.process_iter(["cmdline"]) if f"sleep {marker}" in " ".join(p.info["cmdline"] or [])]
