"""Which backend an executor runs in: one that isolates, or a refusal naming what to install.

Every executor asks the server's one :class:`BackendChoice` (made from ``[sandbox]``):

- runs that see the project — ``run_shell``, ``run_tests``, registry tools, the review's
  analyzers, the Beads CLI, language servers — need bubblewrap: only its namespaces show the
  project read-only (or through an overlay whose writes are checked afterwards) with the secrets
  covered;
- code execution sees no project, and also runs in a Docker engine when one answers;
- the plain-process backend runs only when the operator names it (``[sandbox] backend =
  "process"``, or the older ``[coding] backend = "process"`` for code execution alone); each
  result then says the run was not isolated.

Nothing falls back silently: when no isolating backend works, the executor refuses with
:class:`SandboxRefused`, whose hint names the package to install. Each backend is probed once
(a bwrap probe is one real run, a few tens of milliseconds) and the answer kept.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from codeward.engines.sandbox.model import Sandbox, SandboxUnavailable

AUTO = "auto"
PROCESS = "process"
PROJECT_BACKENDS = ("bwrap",)
"""What may run a program that sees the project: only bwrap hides secrets and checks writes."""
CODE_BACKENDS = ("bwrap", "docker")
"""What ``auto`` tries for code execution, in order."""
INSTALL_BWRAP = "apt-get install bubblewrap"
INSTALL_HINT = (f"Install bubblewrap where unprivileged user namespaces are allowed (Debian/Ubuntu: `{INSTALL_BWRAP}`; "
                "Fedora: `dnf install bubblewrap`){docker}. `codeward doctor` shows what is missing. To run without "
                "isolation anyway, the operator sets `[sandbox] backend = \"process\"` in codeward.toml (every result "
                "then says it was not isolated).")
DOCKER_ALTERNATIVE = ", or start a Docker engine (code execution only)"


class Executor(StrEnum):
    """The programs codeward starts, as ``codeward doctor`` and refusals name them."""

    SHELL = "run_shell"
    TESTS = "run_tests"
    CODE = "code execution"
    REVIEW = "review analyzers"
    REGISTRY = "registry tools"
    BEADS = "bd (Beads CLI)"
    LANGUAGE_SERVERS = "language servers"

    @property
    def sees_project(self) -> bool:
        return self is not Executor.CODE


class SandboxRefused(SandboxUnavailable):
    """No backend the operator allows can run here; ``hint`` says what to install or set."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.hint = hint


@dataclass(frozen=True)
class Plan:
    """What an executor will run in, and why: a backend, or the refusal it will give."""

    executor: Executor
    backend: str | None
    isolated: bool
    why: str
    hint: str = ""


class BackendChoice:
    """The backend each executor uses, probed once per server (thread-safe).

    ``backend`` is ``[sandbox] backend``; ``code_backend`` the older ``[coding] backend``,
    which, when set, decides for code execution alone; ``disk_mb`` the disk cap.
    """

    def __init__(self, backend: str = AUTO, code_backend: str | None = None, disk_mb: int | None = None) -> None:
        self.backend = backend
        self.code_backend = code_backend
        self.disk_mb = disk_mb
        """``[sandbox] disk_mb``: each backend's private tmpfs mounts hold at most half of it."""
        self._lock = threading.Lock()
        self._probed: dict[str, Sandbox | str] = {}
        self.disk_cap_problem: str | None = None
        """Why a run's disk cannot be a size-limited tmpfs here, once a run found out (then its
        overlay layers live on the host's disk, under the per-file size limit only)."""

    # -- what each executor gets -------------------------------------------------------

    def for_project(self, executor: Executor = Executor.SHELL) -> Sandbox:
        """The backend for a program that sees the project; raises :class:`SandboxRefused`."""
        return self._choose(executor, self.backend, PROJECT_BACKENDS)

    def for_code(self) -> Sandbox:
        """The backend for code execution; raises :class:`SandboxRefused`."""
        return self._choose(Executor.CODE, self.code_backend or self.backend, CODE_BACKENDS)

    def sandbox_for(self, executor: Executor) -> Sandbox:
        return self.for_project(executor) if executor.sees_project else self.for_code()

    def plan(self, executor: Executor) -> Plan:
        """What ``executor`` will run in (probing what it needs), for ``codeward doctor``."""
        try:
            sandbox = self.sandbox_for(executor)
        except SandboxRefused as refused:
            return Plan(executor, None, False, str(refused), refused.hint)
        configured = self._configured(executor)
        if sandbox.name == PROCESS:
            why = f"{configured} = \"process\": NOT isolated (host files and network visible, secrets not hidden)"
        elif configured.endswith(f'"{AUTO}"') or configured == "default":
            why = f"{configured}: {sandbox.name} works here"
        else:
            why = f"{configured} = \"{sandbox.name}\""
        return Plan(executor, sandbox.name, sandbox.isolated, why)

    def probe(self, name: str) -> Sandbox | str:
        """The backend ``name`` if it runs here, else why not (probed once, then remembered)."""
        with self._lock:
            known = self._probed.get(name)
        if known is not None:
            return known
        from codeward.engines.sandbox.probe import probe_sandbox

        try:
            found: Sandbox | str = probe_sandbox(name)
        except SandboxUnavailable as exc:
            found = str(exc)
        if self.disk_mb is not None and hasattr(found, "scratch_cap_mb"):
            found.scratch_cap_mb = max(1, self.disk_mb // 2)
        with self._lock:
            return self._probed.setdefault(name, found)

    # -- choosing ------------------------------------------------------------------------

    def _configured(self, executor: Executor) -> str:
        if executor is Executor.CODE and self.code_backend:
            return "[coding] backend"
        return "[sandbox] backend" if self.backend != AUTO else "[sandbox] backend = \"auto\""

    def _choose(self, executor: Executor, wanted: str, usable: Sequence[str]) -> Sandbox:
        if wanted == PROCESS:
            found = self.probe(PROCESS)
            if isinstance(found, str):
                raise SandboxRefused(f"{executor} cannot run: the process backend cannot start here ({found})",
                                     "Check that temporary folders can be created.")
            return found
        candidates = list(usable) if wanted == AUTO else [wanted]
        reasons: list[str] = []
        for name in candidates:
            if name not in usable:
                reasons.append(f"{self._configured(executor)} = \"{name}\", which runs code execution only: "
                               f"{executor} sees the project, and only bubblewrap can show it with secrets covered "
                               "and writes checked")
                continue
            found = self.probe(name)
            if not isinstance(found, str):
                return found
            reasons.append(found)  # the probe names the backend
        docker = DOCKER_ALTERNATIVE if "docker" in usable and wanted == AUTO else ""
        raise SandboxRefused(f"{executor} cannot run: no isolating sandbox works here ({'; '.join(reasons)})",
                             INSTALL_HINT.format(docker=docker))
