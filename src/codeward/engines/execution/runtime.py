"""The long-lived parts of code execution for one server: the chosen sandbox, the detected
toolchains, the warm pool and the live sessions.

A :class:`CodingRuntime` lives in ``ToolContext.services.runtimes`` (one per server, created on first
use by :func:`runtime_of`), never in a module global; its processes are stopped by
:meth:`CodingRuntime.close`, when it is garbage-collected, or at interpreter exit.
"""

from __future__ import annotations

import threading
import weakref
from typing import TYPE_CHECKING

from codeward.config.coding import CodingSettings
from codeward.config.sandbox import SandboxSettings
from codeward.engines.contained.project_sandbox import backends_of
from codeward.engines.execution.languages import BY_NAME, Toolchain, detect_toolchain, detect_toolchains
from codeward.engines.execution.sessions import SessionStore
from codeward.engines.execution.warm_pool import WarmPool
from codeward.engines.sandbox import Sandbox
from codeward.engines.sandbox.choice import BackendChoice, SandboxRefused
from codeward.engines.sandbox.process import NOT_ISOLATED_NOTE
from codeward.engines.sandbox.runner import StartableSandbox

if TYPE_CHECKING:
    from codeward.engines.execution.docker_pool import DockerWarmPool
    from codeward.engines.sandbox.docker import DockerSandbox
    from codeward.kernel.context import Services

NO_MODEL = ("no model is configured: name a [model.profiles] profile in [coding] profile (or [model] default), "
            "or set CODEWARD_MODEL (with CODEWARD_MODEL_BASE_URL for a local or OpenAI-compatible server, "
            "CODEWARD_MODEL_API_KEY if it needs a key)")


class CodingRuntime:
    """Lazily probes the sandbox and toolchains; owns the warm pool and sessions."""

    def __init__(self, settings: CodingSettings | None = None, backends: BackendChoice | None = None) -> None:
        self.settings = settings or CodingSettings.unconfigured()
        if backends is None:
            sandbox = SandboxSettings.unconfigured()
            backends = BackendChoice(sandbox.backend, self.settings.backend, sandbox.disk_mb)
        self.backends = backends
        self._lock = threading.Lock()
        self._toolchains: dict[str, Toolchain] | None = None
        self._single: dict[str, Toolchain] = {}
        self._pool: WarmPool | None = None
        self._docker_pools: dict[str, DockerWarmPool] = {}
        self._sessions: SessionStore | None = None

    def sandbox(self) -> Sandbox:
        """The backend code runs in (probed once); raises :class:`SandboxRefused` naming what to
        install when no backend the operator allows works here — never a silent downgrade."""
        return self.backends.for_code()

    @property
    def sandbox_notes(self) -> list[str]:
        """What every result of this runtime should say about where it ran."""
        try:
            sandbox = self.sandbox()
        except SandboxRefused:
            return []
        return [] if sandbox.isolated else [NOT_ISOLATED_NOTE]

    def toolchains(self) -> dict[str, Toolchain]:
        """Every language's toolchain (detected once; a few ``--version`` runs)."""
        with self._lock:
            if self._toolchains is None:
                self._toolchains = {**detect_toolchains(), **self._single}
            return self._toolchains

    def toolchain(self, language: str) -> Toolchain:
        """One language's toolchain, detecting only that one when the others are not needed."""
        with self._lock:
            if self._toolchains is not None:
                return self._toolchains[language]
            if language not in self._single:
                self._single[language] = detect_toolchain(BY_NAME[language])
            return self._single[language]

    def startable(self) -> StartableSandbox | None:
        try:
            sandbox = self.sandbox()
        except SandboxRefused:
            return None
        return sandbox if hasattr(sandbox, "start") and hasattr(sandbox, "finish") else None  # type: ignore[return-value]

    def pool(self) -> WarmPool | None:
        """The Python warm pool (started on first use), or ``None`` when it cannot exist here."""
        startable = self.startable()
        if startable is None or self.settings.pool_size < 1:
            return None
        python = self.toolchain("python")
        if not python.available:
            return None
        with self._lock:
            if self._pool is None:
                language = BY_NAME["python"]
                self._pool = WarmPool(startable, self.settings.pool_size, python.binds, language.memory_mb,
                                      language.max_processes)
                weakref.finalize(self, self._pool.close)
            pool = self._pool
        pool.start()
        return pool

    def docker_pool(self, sandbox: DockerSandbox, image: str) -> DockerWarmPool | None:
        """The Docker warm pool of ``image`` for Python runs with the default limits (started on first use),
        or None with ``pool_size = 0``."""
        if self.settings.pool_size < 1:
            return None
        from codeward.engines.execution.docker_exec import warm_python_request
        from codeward.engines.execution.docker_pool import DockerWarmPool, PoolShape

        with self._lock:
            pool = self._docker_pools.get(image)
            if pool is None:
                template = warm_python_request("", 30.0)
                pool = DockerWarmPool(sandbox, PoolShape.of(image, template), template, self.settings.pool_size)
                self._docker_pools[image] = pool
                weakref.finalize(self, pool.close)
        pool.start()
        return pool

    def sessions(self) -> SessionStore | None:
        startable = self.startable()
        if startable is None:
            return None
        python = self.toolchain("python")
        with self._lock:
            if self._sessions is None:
                self._sessions = SessionStore(startable, python.binds, self.settings.session_idle_s,
                                              self.settings.max_sessions, self.settings.session_memory_budget_mb)
                weakref.finalize(self, self._sessions.close)
            return self._sessions

    def warm_up(self) -> None:
        """Probe everything and start the pool now (a server can call this at start-up)."""
        self.startable()
        self.toolchains()
        self.pool()

    def close(self) -> None:
        with self._lock:
            pool, sessions, docker_pools = self._pool, self._sessions, list(self._docker_pools.values())
            self._pool = self._sessions = None
            self._docker_pools = {}
        for docker_pool in docker_pools:
            docker_pool.close()
        if pool is not None:
            pool.close()
        if sessions is not None:
            sessions.close()


def runtime_of(services: Services) -> CodingRuntime:
    """The server's runtime, created on first use, with the server's one backend choice."""
    backends = backends_of(services)  # first: Runtimes.get holds its lock while it makes a helper
    return services.runtimes.get(CodingRuntime, lambda: CodingRuntime(services.get(CodingSettings), backends))
