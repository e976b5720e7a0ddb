"""A tool's own environment: a folder holding exactly its declared, pinned packages.

Built the first time it is needed — when the human signs the tool (``codeward sign``), or on a
first run the human approves — and reused while the pins and the sandbox's interpreter stay
the same; replaced when they change. Tools that need only the standard library have none.

What is installed is the signed list and nothing else (see :mod:`codeward.engines.registry.deps`):
pip's resolver first checks the pins are complete (a missing one is an error that lists the
exact pins to add), then codeward's own pip unpacks the wheels with ``--no-deps --target``
for the sandbox's Python version. No package code runs on the host: no source builds, no
``.pth`` start-up hooks (the tool's interpreter runs with ``-S`` in the sandbox, the folder on
its path). Creation holds a file lock, so two first runs build once; a half-built folder
(no ready marker) is rebuilt.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from codeward.engines.registry.deps import extra_requirements, load_report
from codeward.kernel.context import ToolContext
from codeward.kernel.result import ErrorKind, Result

READY_MARKER = ".codeward-ready"
SITE = "site"
MAX_PIP_OUTPUT = 200_000
PIP_FLAGS = ("--disable-pip-version-check", "--no-input", "--only-binary=:all:", "--implementation", "cp")
_VERSION_NAME = re.compile(r"python(\d+)\.(\d+)$")


@dataclass(frozen=True)
class SandboxPython:
    """The interpreter tools run with inside the sandbox (the system's, visible there under /usr)."""

    path: str
    version: tuple[int, int]

    @property
    def tag(self) -> str:
        return f"{self.version[0]}.{self.version[1]}"

    @property
    def abi(self) -> str:
        return f"cp{self.version[0]}{self.version[1]}"


def sandbox_python(path: str) -> Result[SandboxPython | None]:
    """The interpreter at ``path`` and its version (read from its name, else asked with ``-I -S``)."""
    real = os.path.realpath(path)
    if not os.access(real, os.X_OK):
        return Result.fail(ErrorKind.UNAVAILABLE, f"registry tools run with {path} in the sandbox, which is not "
                           "installed here", "Install the system's Python 3 (Debian: apt-get install python3), or "
                           "set [registry] python in codeward.toml to an interpreter under /usr.", data=None)
    match = _VERSION_NAME.search(os.path.basename(real))
    if match is not None:
        return Result.success(SandboxPython(real, (int(match.group(1)), int(match.group(2)))))
    try:
        done = subprocess.run([real, "-I", "-S", "-c", "import sys; print(*sys.version_info[:2])"],
                              capture_output=True, text=True, timeout=10, check=True)
        major, minor = (int(p) for p in done.stdout.split())
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        return Result.fail(ErrorKind.UNAVAILABLE, f"cannot tell the version of {path}: {exc}", data=None)
    return Result.success(SandboxPython(real, (major, minor)))


@dataclass(frozen=True)
class ToolEnvironment:
    """Where one tool's packages live (``<folder>/<tool>-<key>/site``)."""

    path: Path
    requirements: tuple[str, ...]

    @property
    def site(self) -> Path:
        return self.path / SITE

    @property
    def ready(self) -> bool:
        return (self.path / READY_MARKER).is_file() and self.site.is_dir()


def environment_for(tool: str, requirements: Sequence[str], folder: Path, python: SandboxPython) -> ToolEnvironment:
    """The environment ``tool`` gets for these pins and this interpreter (it may not exist yet)."""
    key = hashlib.sha256(json.dumps([python.tag, sorted(requirements)]).encode()).hexdigest()[:12]
    return ToolEnvironment(folder / f"{tool}-{key}", tuple(sorted(requirements)))


def build(env: ToolEnvironment, python: SandboxPython, ctx: ToolContext, timeout: float, tool: str) -> Result[None]:
    """Install the pins into ``env`` (a no-op when it is ready); old environments of the tool go."""
    if not importlib.util.find_spec("pip"):
        return Result.fail(ErrorKind.UNAVAILABLE, f"{tool} declares packages, and installing them needs pip, which "
                           "codeward's environment does not have", "Install pip next to codeward "
                           "(python -m ensurepip), then run the tool again.", data=None)
    try:
        env.path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return Result.fail(ErrorKind.PERMISSION, f"cannot create {env.path.parent} for {tool}'s packages: "
                           f"{exc.strerror}", "Set [registry] venv_dir (CODEWARD_VENV_DIR) to a writable folder.",
                           data=None)
    with _locked(env.path.with_name(env.path.name + ".lock")):
        if env.ready:
            return Result.success(None)
        built = _install(env, python, ctx, timeout, tool)
        if not built.ok:
            shutil.rmtree(env.path, ignore_errors=True)
            return built
        (env.path / READY_MARKER).write_text(json.dumps({"requirements": list(env.requirements),
                                                         "python": python.tag}), encoding="utf-8")
    _remove_stale(env.path.parent, tool, env.path)
    return Result.success(None)


def _install(env: ToolEnvironment, python: SandboxPython, ctx: ToolContext, timeout: float,
             tool: str) -> Result[None]:
    shutil.rmtree(env.path, ignore_errors=True)
    wanted = ", ".join(env.requirements)
    deadline = time.monotonic() + timeout
    target = ("--python-version", python.tag, "--abi", python.abi)
    ctx.log("info", f"installing {wanted} for {tool} (its declared pins, wheels only); later runs reuse them")
    ctx.progress(0, 2, f"checking that {tool}'s pins are complete")
    with tempfile.TemporaryDirectory(prefix="codeward-resolve-") as scratch:
        report_path = Path(scratch) / "report.json"
        resolved = _pip(["install", *PIP_FLAGS, *target, "--dry-run", "--ignore-installed", "--quiet",
                         "--target", str(Path(scratch) / "t"), "--report", str(report_path), *env.requirements],
                        ctx, deadline)
        if not resolved.ok:
            return _install_failure(tool, wanted, resolved.errors[0].message)
        try:
            report = load_report(report_path.read_text(encoding="utf-8"))
        except OSError:
            report = {}
    missing = extra_requirements(report, env.requirements)
    if missing:
        listed = ", ".join(f'"{m}"' for m in missing)
        return Result.fail(ErrorKind.INVALID_INPUT, f"{tool}'s dependencies need packages it does not declare: "
                           f"{', '.join(missing)}", f"Add them to __dependencies__ ({listed}), then sign the tool "
                           "again: a tool installs exactly its declared pins, nothing more.", data=None)
    ctx.progress(1, 2, f"installing {wanted} for {tool}")
    installed = _pip(["install", *PIP_FLAGS, *target, "--no-deps", "--quiet", "--target", str(env.site),
                      *env.requirements], ctx, deadline)
    if not installed.ok:
        return _install_failure(tool, wanted, installed.errors[0].message)
    ctx.progress(2, 2, f"packages for {tool} ready")
    return Result.success(None)


def _install_failure(tool: str, wanted: str, detail: str) -> Result[None]:
    return Result.fail(ErrorKind.UNAVAILABLE, f"cannot install {wanted} for {tool}: {detail}",
                       "Check each pin's name and version on PyPI, that a wheel exists for this platform (source "
                       "builds run code and are not used), and that PyPI is reachable.", data=None)


def _pip(arguments: list[str], ctx: ToolContext, deadline: float) -> Result[None]:
    from codeward.engines.sandbox.runner import Launch, collect, kill_tree, spawn

    remaining = deadline - time.monotonic()
    if remaining <= 0:
        return Result.fail(ErrorKind.TIMEOUT, "the install ran out of time ([registry] install_timeout)", data=None)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONHOME", "PYTHONPATH")}
    try:
        proc = spawn(Launch(argv=[sys.executable, "-m", "pip", *arguments], env=env, cwd=tempfile.gettempdir()))
    except OSError as exc:
        return Result.fail(ErrorKind.UNAVAILABLE, f"cannot start pip: {exc.strerror}", data=None)

    def check_cancel() -> None:
        if ctx.cancelled.is_set():
            kill_tree(proc, None)

    done = collect(proc, b"", remaining, MAX_PIP_OUTPUT, None, on_tick=check_cancel, tick_s=0.2)
    if ctx.cancelled.is_set():
        return Result.fail(ErrorKind.TIMEOUT, "cancelled", data=None)
    if done.timed_out:
        return Result.fail(ErrorKind.TIMEOUT, "pip took longer than [registry] install_timeout", data=None)
    if done.returncode != 0:
        lines = [line for line in done.stderr.decode("utf-8", "replace").strip().splitlines()
                 if line.strip() and not line.startswith("WARNING: Location")]
        return Result.fail(ErrorKind.UNAVAILABLE, " | ".join(lines[-6:]) or f"exit code {done.returncode}",
                           data=None)
    return Result.success(None)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _remove_stale(folder: Path, tool: str, keep: Path) -> None:
    """Environments of this tool for pins it no longer has."""
    for old in folder.glob(f"{tool}-*"):
        suffix = old.name[len(tool) + 1 :]
        if old != keep and old.is_dir() and len(suffix) == 12 and all(c in "0123456789abcdef" for c in suffix):
            with _locked(old.with_name(old.name + ".lock")):
                shutil.rmtree(old, ignore_errors=True)
            with contextlib.suppress(OSError):
                old.with_name(old.name + ".lock").unlink()
