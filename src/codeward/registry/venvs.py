"""A virtual environment per tool that imports anything beyond the standard library.

Created on the tool's first run (``python -m venv``, then pip into it), reused while its
requirements stay the same, replaced when they change; never touching the server's own
environment. Tools that need only the standard library run in the base interpreter with
``-I -S``: no site-packages at all, so nothing of the server leaks into them.

Creation holds a file lock, so two first runs at once build it once; a half-built
environment (no ready marker) is rebuilt.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import json
import shutil
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from codeward.coding.sandbox.runner import Launch, collect, kill_tree, spawn
from codeward.context import ToolContext
from codeward.result import ErrorKind, Result

READY_MARKER = ".codeward-ready"
MAX_PIP_OUTPUT = 200_000


@dataclass(frozen=True)
class Interpreter:
    """How to start Python for a tool: the executable and its flags."""

    argv: tuple[str, ...]
    environment: Path | None = None
    """The tool's virtual environment, if it has one."""


def base_python() -> str:
    """The interpreter the server's Python was made from (outside any virtual environment)."""
    return str(getattr(sys, "_base_executable", None) or sys.executable)


def interpreter_for(tool: str, requirements: list[str], folder: Path, ctx: ToolContext,
                    timeout: float) -> Result[Interpreter | None]:
    """The interpreter for ``tool``: the bare base Python, or its own environment (built if needed)."""
    if not requirements:
        return Result.success(Interpreter((base_python(), "-I", "-S")))
    key = hashlib.sha256(json.dumps([sys.version, requirements]).encode()).hexdigest()[:12]
    target = folder / f"{tool}-{key}"
    python = target / "bin" / "python"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return Result.fail(ErrorKind.PERMISSION, f"cannot create {folder} for the tool's environment: {exc.strerror}",
                           "Set [registry] venv_dir (or CODEWARD_VENV_DIR) to a writable folder.", data=None)
    with _locked(folder / f"{tool}-{key}.lock"):
        if (target / READY_MARKER).exists() and python.exists():
            return Result.success(Interpreter((str(python), "-I"), target))
        built = _build(target, requirements, ctx, timeout, tool)
        if not built.ok:
            shutil.rmtree(target, ignore_errors=True)
            return built.cast(None)
        (target / READY_MARKER).write_text(json.dumps({"requirements": requirements}), encoding="utf-8")
    _remove_stale(folder, tool, target)
    return Result.success(Interpreter((str(python), "-I"), target))


def _build(target: Path, requirements: list[str], ctx: ToolContext, timeout: float, tool: str) -> Result[None]:
    shutil.rmtree(target, ignore_errors=True)
    wanted = ", ".join(requirements)
    message = f"creating a virtual environment for {tool} ({wanted}); later runs reuse it"
    ctx.log("info", message)
    ctx.progress(0, 2, message)
    deadline = time.monotonic() + timeout
    own_pip = importlib.util.find_spec("pip") is not None
    venv = [base_python(), "-m", "venv", *(["--without-pip"] if own_pip else []), str(target)]
    made = _run(venv, ctx, deadline)
    if not made.ok:
        return made.cast(None)
    python = str(target / "bin" / "python")
    pip = [sys.executable, "-m", "pip", "--python", python] if own_pip else [python, "-m", "pip"]
    ctx.progress(1, 2, f"installing {wanted} for {tool}")
    installed = _run([*pip, "install", "--disable-pip-version-check", "--no-input", "--quiet", *requirements],
                     ctx, deadline)
    if not installed.ok:
        error = installed.errors[0]
        return Result.fail(ErrorKind.UNAVAILABLE, f"cannot install {wanted} for {tool}: {error.message}",
                           "Check the package names (a PyPI name can differ from the import name: declare "
                           '__dependencies__ = ["name>=1.0"] in the tool) and that PyPI is reachable.', data=None)
    ctx.progress(2, 2, f"environment for {tool} ready")
    return Result.success(None)


def _run(argv: list[str], ctx: ToolContext, deadline: float) -> Result[None]:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        return Result.fail(ErrorKind.TIMEOUT, "ran out of time", data=None)
    try:
        proc = spawn(Launch(argv=argv, env=_clean_env()))
    except OSError as exc:
        return Result.fail(ErrorKind.UNAVAILABLE, f"cannot start {argv[0]}: {exc.strerror}", data=None)

    def check_cancel() -> None:
        if ctx.cancelled.is_set():
            kill_tree(proc, None)

    done = collect(proc, b"", remaining, MAX_PIP_OUTPUT, None, on_tick=check_cancel, tick_s=0.2)
    if ctx.cancelled.is_set():
        return Result.fail(ErrorKind.TIMEOUT, "cancelled", data=None)
    if done.timed_out:
        return Result.fail(ErrorKind.TIMEOUT, f"{' '.join(argv[:4])} took longer than the install timeout",
                           data=None)
    if done.returncode != 0:
        tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-6:]
        return Result.fail(ErrorKind.UNAVAILABLE, " | ".join(tail) or f"exit code {done.returncode}", data=None)
    return Result.success(None)


def _clean_env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONHOME", "PYTHONPATH")}


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _remove_stale(folder: Path, tool: str, keep: Path) -> None:
    """Environments of this tool for requirements it no longer has."""
    for old in folder.glob(f"{tool}-*"):
        suffix = old.name[len(tool) + 1 :]
        if old != keep and old.is_dir() and len(suffix) == 12 and all(c in "0123456789abcdef" for c in suffix):
            with _locked(old.with_name(old.name + ".lock")):
                shutil.rmtree(old, ignore_errors=True)
            with contextlib.suppress(OSError):
                old.with_name(old.name + ".lock").unlink()
