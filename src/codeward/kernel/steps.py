"""The steps around each run of a native tool, in the worker thread that runs it.

A :class:`~codeward.kernel.catalog.Catalog` runs a validated call through an ordered list of
:class:`CallStep` (outermost first), each seeing the call and the rest of the list (``proceed``),
the way the chain's middleware sees a surface (:mod:`codeward.kernel.chain`). The stack hands
the catalog its list (``Catalog.with_steps``); a catalog built bare runs the kernel's own
(:func:`kernel_steps`). The kernel's steps are here; the checkpoint journal's is its engine's
(:class:`codeward.engines.checkpoints.step.RecordChanges`).

* :class:`BoundOutput` — output past ``[server] output_cap_tokens`` is cut with a marker, the whole
  saved under ``.codeward/outputs/`` (``[server] spill_keep`` kept);
* :class:`HoldWriteLocks` — calls writing one file run one after the other;
* :class:`TrapErrors` — a bug in a tool becomes an ``internal`` error; the server lives on.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from codeward.kernel import state_dir
from codeward.kernel.content import displayable
from codeward.kernel.context import ToolContext
from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.path_locks import LockBusy, PathLocks
from codeward.kernel.repository_guard import RepositoryCompleted, RepositoryGuard
from codeward.kernel.result import ErrorKind, Result
from codeward.kernel.state_dir import StateDir
from codeward.kernel.workspace import GIT_MARKER_LOCK, POLICY_HINT


@dataclass(frozen=True)
class RunningCall:
    """One validated call of a native tool on its way through the steps."""

    name: str
    values: Mapping[str, Any]
    """The validated arguments (defaults filled in)."""
    ctx: ToolContext
    read_only: bool
    write_paths: tuple[str, ...]
    """The arguments naming files the tool writes (``ToolSpec.write_paths``)."""
    write_targets: tuple[Path | str, ...]
    """The files those arguments name, resolved (as given where the gate refuses them), and the
    repository-making lock key of a path that adds one."""
    func: Callable[..., Result[Any]]
    render: Callable[[Result[Any]], ToolOutcome]
    """Turns the tool's result into the outcome the steps pass back (text, structure, errors)."""

    def with_context(self, ctx: ToolContext) -> RunningCall:
        return replace(self, ctx=ctx)


Proceed = Callable[[RunningCall], ToolOutcome]


class CallStep(Protocol):
    """One step around a run: do something before, pass the call on (``proceed``), adjust the outcome."""

    def __call__(self, call: RunningCall, proceed: Proceed) -> ToolOutcome: ...


def run_tool(call: RunningCall) -> ToolOutcome:
    """The innermost step: the tool itself, its result rendered."""
    return call.render(call.func(call.ctx, **call.values))


def through(steps: Sequence[CallStep], innermost: Proceed = run_tool) -> Proceed:
    """``innermost`` behind ``steps`` (outermost first), composed once."""
    proceed = innermost
    for step in reversed(steps):
        proceed = _bind(step, proceed)
    return proceed


def _bind(step: CallStep, proceed: Proceed) -> Proceed:
    return lambda call: step(call, proceed)


class TrapErrors:
    """A bug in a tool (an exception) becomes an ``internal`` error naming it; the server stays up. A
    write the repository re-check took back (:class:`RepositoryCompleted`) and a cross-process lock
    another codeward process did not let go of (:class:`LockBusy`) are said as what they are."""

    def __call__(self, call: RunningCall, proceed: Proceed) -> ToolOutcome:
        try:
            return proceed(call)
        except RepositoryCompleted as exc:
            return call.render(Result.fail(ErrorKind.PERMISSION, str(exc), POLICY_HINT))
        except LockBusy as exc:
            return call.render(lock_busy(exc))
        except Exception as exc:  # a bug in a tool: report it, keep the server alive
            return call.render(Result.fail(
                ErrorKind.INTERNAL,
                f"tool {call.name!r} failed unexpectedly: {type(exc).__name__}: {exc}",
                "This is a bug in codeward; please report it with the arguments used.",
            ))


class HoldWriteLocks:
    """Calls writing the same file run one after another: a call holds the locks of its write targets
    while it runs, and a writing tool gets them (``ctx.call.locks``) for paths it learns later. A call
    adding a repository-making name also holds the cross-process lock of the roots, and what it wrote
    is checked again before the lock is let go (:class:`RepositoryGuard`): a repository completed
    with another writer's files loses what this call created there."""

    def __init__(self, locks: PathLocks | None = None) -> None:
        self.locks = locks if locks is not None else PathLocks()

    def __call__(self, call: RunningCall, proceed: Proceed) -> ToolOutcome:
        if call.read_only and not call.write_targets:  # a read names no file to lock
            return proceed(call)
        keys = [str(path) if isinstance(path, Path) else path for path in call.write_targets]
        workspace = call.ctx.workspace
        try:
            with self.locks.hold(keys, workspace.roots) if keys else contextlib.nullcontext():
                guard = RepositoryGuard(workspace, [p for p in call.write_targets if isinstance(p, Path)]) \
                    if GIT_MARKER_LOCK in call.write_targets else None
                if not call.read_only:
                    call = call.with_context(call.ctx.child(call=replace(call.ctx.call, locks=self.locks)))
                outcome = proceed(call)
                problem = guard.check() if guard is not None and not outcome.is_error else ""  # still under the lock
        except LockBusy as exc:
            return call.render(lock_busy(exc))
        if not problem:
            return outcome
        refused = call.render(Result.fail(ErrorKind.PERMISSION, problem, POLICY_HINT))
        refused.checkpoint = outcome.checkpoint  # what the call did write is still undone by ``undo``
        return refused


def lock_busy(exc: LockBusy) -> Result[None]:
    """The refusal of a call that could not take the cross-process write lock: nothing was written."""
    return Result.fail(ErrorKind.UNAVAILABLE, f"nothing was written: {exc}",
                       "Try again in a moment; if it persists, look for a stuck codeward process on this project.")


class BoundOutput:
    """Output past the context's cap (``ctx.settings.output_cap_chars``) is cut with a marker naming
    the file that keeps the whole (:func:`bound_output`)."""

    def __call__(self, call: RunningCall, proceed: Proceed) -> ToolOutcome:
        outcome = proceed(call)
        text, truncated = bound_output(outcome.text, call.ctx, call.name)
        if truncated:
            outcome.text, outcome.truncated = text, True
        return outcome


def kernel_steps() -> tuple[CallStep, ...]:
    """What a catalog built bare runs its calls through (outermost first); a stack hands its own list."""
    return BoundOutput(), HoldWriteLocks(), TrapErrors()


def bound_output(text: str, ctx: ToolContext, name: str) -> tuple[str, bool]:
    """Cut text past the configured cap, save the whole under the primary root, and say so."""
    cap = ctx.settings.output_cap_chars
    if len(text) <= cap:
        return text, False
    shown = _spill(text, ctx, name)
    if shown is None:
        saved = " Narrow the request (offset/limit, a smaller path or pattern) to see the rest."
    else:
        saved = f" The full output is saved as {shown}: read it with read_file and offset/limit."
    marker = (
        f"\n\n[... output truncated: {len(text):,} characters, showing the first {cap:,}."
        f"{saved} ...]"
    )
    return text[:cap] + marker, True


def save_output(text: str, ctx: ToolContext, name: str) -> str | None:
    """Keep ``text`` in the saved-outputs folder (``.codeward/outputs/``, pruned like spilled outputs);
    its path as tools show it, or None when it cannot be saved."""
    return _spill(text, ctx, name)


def _spill(text: str, ctx: ToolContext, name: str) -> str | None:
    """Save a whole output in ``.codeward/outputs``; its path as shown, or None when it cannot be saved.

    codeward's own write, through :class:`StateDir` (no link followed: a repository's
    ``.codeward`` may be a symlink to anywhere), not the tool-facing gate, which refuses
    ``.codeward/`` to tools.
    """
    primary = ctx.workspace.primary
    if not ctx.workspace.contains(primary):
        return None
    state = StateDir(primary)
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    file_name = f"{name}-{time.strftime('%Y%m%d-%H%M%S')}-{digest}.txt"
    try:
        data = text.encode("utf-8", "surrogateescape")  # undecodable bytes of a file go back as they were
    except UnicodeEncodeError:
        data = displayable(text).encode("utf-8")
    try:
        state.write_new(f"{state_dir.OUTPUTS}/{file_name}", data, 0o666)  # exists: same output, same second
    except OSError:
        return None
    _prune_spills(state.outputs, ctx.settings.spill_keep)
    return ctx.workspace.display(state.outputs / file_name)


def _prune_spills(folder: Path, keep: int) -> None:
    """Delete all but the ``keep`` newest saved outputs (regular files only; links are left alone)."""
    try:
        with os.scandir(folder) as entries:
            saved = [(entry.stat(follow_symlinks=False).st_mtime_ns, entry.name) for entry in entries
                     if entry.name.endswith(".txt") and entry.is_file(follow_symlinks=False)]
    except OSError:
        return
    saved.sort(reverse=True)
    for _mtime, name in saved[keep:]:
        with contextlib.suppress(OSError):
            os.unlink(folder / name)


