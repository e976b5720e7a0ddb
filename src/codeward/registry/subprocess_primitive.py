"""The ``subprocess`` primitive: a Python tool's ``main`` in a process of its own.

The request (parameters plus the verified source) goes in as JSON on stdin, the result comes
back as JSON on stdout; the process runs in a new session and is killed with its whole group
at the timeout or when the call is cancelled. The child sees the server's environment minus
Python's own variables, plus the chain's ``env`` (``${VAR}`` expanded), in the project root.
"""

from __future__ import annotations

import base64
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codeward.coding.sandbox.runner import Launch, collect, kill_tree, spawn
from codeward.config import expand_env
from codeward.context import ToolContext
from codeward.registry.venvs import Interpreter
from codeward.result import ErrorKind, Result

RUNNER = Path(__file__).with_name("tool_runner.py")
MAX_RESULT_BYTES = 50_000_000
DROPPED_ENV = frozenset({"VIRTUAL_ENV", "PYTHONHOME", "PYTHONPATH", "PYTHONSTARTUP"})


@dataclass(frozen=True)
class ProcessRun:
    """What the tool's process produced."""

    result: Any
    stderr: str
    seconds: float


def run_python(name: str, source: bytes, path: Path, params: dict[str, Any], config: dict[str, Any],
               interpreter: Interpreter, lib: list[str], ctx: ToolContext, timeout: float,
               max_stderr: int) -> Result[ProcessRun | None]:
    """Run ``main(**params)`` of the tool whose verified ``source`` is given."""
    request = json.dumps({"params": params, "path": str(path), "lib": lib,
                          "source_b64": base64.b64encode(source).decode("ascii")}).encode()
    env = {k: v for k, v in os.environ.items() if k not in DROPPED_ENV}
    extra = config.get("env") or {}
    env.update({str(k): expand_env(str(v)) for k, v in extra.items()} if isinstance(extra, dict) else {})
    env.update({"CODEWARD_TOOL_NAME": name, "CODEWARD_PROJECT_ROOT": str(ctx.workspace.primary),
                "PYTHONUNBUFFERED": "1", "PYTHONIOENCODING": "utf-8"})
    argv = [*interpreter.argv, str(RUNNER)]
    try:
        proc = spawn(Launch(argv=argv, env=env, cwd=str(ctx.workspace.primary)))
    except OSError as exc:
        return Result.fail(ErrorKind.UNAVAILABLE, f"cannot start {argv[0]} for {name}: {exc.strerror}",
                           "Check that the tool's interpreter exists (delete its environment to rebuild it).",
                           data=None)

    def check_cancel() -> None:
        if ctx.cancelled.is_set():
            kill_tree(proc, None)

    done = collect(proc, request, timeout, MAX_RESULT_BYTES, None, on_tick=check_cancel, tick_s=0.1)
    stderr = _tail(done.stderr.decode("utf-8", "replace"), max_stderr)
    if ctx.cancelled.is_set():
        return Result.fail(ErrorKind.TIMEOUT, f"{name} was cancelled and its processes killed", data=None)
    if done.timed_out:
        return Result.fail(ErrorKind.TIMEOUT, f"{name} ran longer than {timeout:g} s and was killed "
                           "(with every process it started)",
                           'Pass a larger timeout, set CONFIG = {"timeout": seconds} in the tool, or make it '
                           "do less per call.", data=None)
    if done.stdout_truncated:
        return Result.fail(ErrorKind.TOO_LARGE, f"{name} returned more than {MAX_RESULT_BYTES:,} bytes",
                           "Return less (write big data to a file and return its path).", data=None)
    try:
        answer = json.loads(done.stdout.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        said = f"; stderr: {stderr}" if stderr else ""
        return Result.fail(ErrorKind.INTERNAL, f"{name} exited with code {done.returncode} without a result{said}",
                           "The process died before answering (os._exit, a crash, a kill); see stderr.", data=None)
    if not isinstance(answer, dict) or not answer.get("ok"):
        return _tool_failure(name, answer if isinstance(answer, dict) else {}, stderr)
    return Result.success(ProcessRun(answer.get("result"), stderr, done.duration_s))


def _tool_failure(name: str, answer: dict[str, Any], stderr: str) -> Result[ProcessRun | None]:
    kind = str(answer.get("error", "error"))
    message = str(answer.get("message", ""))
    if kind == "invalid_params":
        return Result.fail(ErrorKind.INVALID_INPUT, f"{name}: {message}",
                           f"See the parameters with registry_help(name={name!r}).", data=None)
    if kind in ("ModuleNotFoundError", "ImportError"):
        return Result.fail(ErrorKind.UNAVAILABLE, f"{name} failed to import: {message}",
                           'Declare the package in the tool: __dependencies__ = ["name>=1.0"], then re-sign it.',
                           data=None)
    trace = str(answer.get("traceback", "")).strip()
    detail = f"\n{trace}" if trace else ""
    more = f"\nstderr: {stderr}" if stderr else ""
    return Result.fail(ErrorKind.INTERNAL, f"{name} raised {kind}: {message}{detail}{more}",
                       "Fix the tool (then re-sign it) or call it with other parameters.", data=None)


def _tail(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else "[...]" + text[-limit:]
