"""codeward.kernel.afterwards: work a call leaves for after its answer runs once, in order, only when started
(or at once for a call nobody answers later), and a failing hand-over does not stop the rest."""

from __future__ import annotations

import logging

import pytest

from codeward.kernel.afterwards import Afterwards
from codeward.kernel.context import CallInfo


def test_work_waits_for_the_start_then_runs_once_in_order() -> None:
    done: list[str] = []
    afterwards = Afterwards()
    call = CallInfo(afterwards=afterwards)
    call.later(lambda: done.append("box"))
    call.later(lambda: done.append("layers"))
    assert done == []  # the answer is not out yet
    afterwards.start()
    afterwards.start()
    assert done == ["box", "layers"]
    call.later(lambda: done.append("late"))  # left after the start: runs at once
    assert done == ["box", "layers", "late"]


def test_a_call_nobody_answers_later_runs_its_work_at_once() -> None:
    done: list[str] = []
    CallInfo().later(lambda: done.append("now"))
    assert done == ["now"]


def test_a_failing_hand_over_is_logged_and_the_rest_still_runs(caplog: pytest.LogCaptureFixture) -> None:
    done: list[str] = []
    afterwards = Afterwards()

    def broken() -> None:
        raise OSError("no space")

    afterwards.add(broken)
    afterwards.add(lambda: done.append("next"))
    with caplog.at_level(logging.ERROR, logger="codeward.kernel.afterwards"):
        afterwards.start()
    assert done == ["next"] and "work left for after a call failed" in caplog.text
