"""The long-lived parts of code execution for one server: the chosen sandbox, the detected
toolchains, the warm pool and the live sessions.

A :class:`CodingRuntime` lives in ``ToolContext.extras`` (one per server, created on first
use by :func:`runtime_of`), never in a module global; its processes are stopped by
:meth:`CodingRuntime.close`, when it is garbage-collected, or at interpreter exit.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from codeward.coding.languages import BY_NAME, Toolchain, detect_toolchain, detect_toolchains
from codeward.coding.sandbox import Sandbox, SandboxUnavailable, probe_sandbox
from codeward.coding.sandbox.runner import StartableSandbox
from codeward.coding.sessions import SessionStore
from codeward.coding.warm_pool import WarmPool
from codeward.llm.profile import ModelProfile

RUNTIME_KEY = "coding_runtime"
SETTINGS_KEY = "coding_settings"
DEFAULT_OPENAI_URL = "https://api.openai.com/v1"


@dataclass(frozen=True)
class CodingSettings:
    """Choices for code execution; from ``extras["coding_settings"]`` or the environment.

    Environment: ``CODEWARD_SANDBOX`` (bwrap|docker|process), ``CODEWARD_MODEL_BASE_URL``,
    ``CODEWARD_MODEL``, ``CODEWARD_MODEL_API_KEY`` (the OpenAI-compatible model that
    ``coding_debug_code`` asks for fixes).
    """

    backend: str | None = None
    pool_size: int = 2
    session_idle_s: float = 900.0
    max_sessions: int = 8
    session_memory_budget_mb: int = 2048
    """The most memory the live sessions of one server may be allowed together (their limits summed)."""
    model_base_url: str | None = None
    model: str | None = None
    model_api_key: str | None = None
    model_timeout_s: float = 60.0
    allow_network: bool = False
    """``[coding] allow_network``: whether a call may ask for network (``network=true``). The
    operator's decision, never the model's; even allowed, the host and private ranges stay out
    of reach where the backend can keep them so (bwrap), and results say so where it cannot."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> CodingSettings:
        env = os.environ if environ is None else environ
        return cls(
            backend=env.get("CODEWARD_SANDBOX") or None,
            model_base_url=env.get("CODEWARD_MODEL_BASE_URL") or None,
            model=env.get("CODEWARD_MODEL") or None,
            model_api_key=env.get("CODEWARD_MODEL_API_KEY") or None,
        )


    def model_profile(self) -> ModelProfile | None:
        """The model ``coding_debug_code`` asks, as a profile of the one model client; ``None`` if unset."""
        if not self.model:
            return None
        return ModelProfile(name=self.model, base_url=self.model_base_url or DEFAULT_OPENAI_URL, model=self.model,
                            temperature=0.2, timeout_s=self.model_timeout_s)


NO_MODEL = ("no model is configured: set CODEWARD_MODEL (and CODEWARD_MODEL_BASE_URL for a local or "
            "OpenAI-compatible server, CODEWARD_MODEL_API_KEY if it needs a key), or add a [model] profile "
            "to codeward.toml")


def settings_of(extras: Mapping[str, Any]) -> CodingSettings:
    value = extras.get(SETTINGS_KEY)
    return value if isinstance(value, CodingSettings) else CodingSettings.from_env()


class CodingRuntime:
    """Lazily probes the sandbox and toolchains; owns the warm pool and sessions."""

    def __init__(self, settings: CodingSettings | None = None) -> None:
        self.settings = settings or CodingSettings.from_env()
        self._lock = threading.Lock()
        self._sandbox: Sandbox | None = None
        self._sandbox_notes: list[str] = []
        self._toolchains: dict[str, Toolchain] | None = None
        self._single: dict[str, Toolchain] = {}
        self._pool: WarmPool | None = None
        self._sessions: SessionStore | None = None

    def sandbox(self) -> Sandbox:
        """The backend in use (probed once). A preferred backend that cannot run falls back."""
        with self._lock:
            if self._sandbox is None:
                preferred = self.settings.backend
                try:
                    self._sandbox = probe_sandbox(preferred)
                except SandboxUnavailable as exc:
                    self._sandbox_notes.append(f"sandbox {preferred!r} is unavailable ({exc}); using another")
                    self._sandbox = probe_sandbox()
            return self._sandbox

    @property
    def sandbox_notes(self) -> list[str]:
        return list(self._sandbox_notes)

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
        sandbox = self.sandbox()
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
        self.sandbox()
        self.toolchains()
        self.pool()

    def close(self) -> None:
        with self._lock:
            pool, sessions = self._pool, self._sessions
            self._pool = self._sessions = None
        if pool is not None:
            pool.close()
        if sessions is not None:
            sessions.close()


def runtime_of(extras: dict[str, Any]) -> CodingRuntime:
    """The runtime stored in a context's extras, created there on first use."""
    runtime = extras.get(RUNTIME_KEY)
    if isinstance(runtime, CodingRuntime):
        return runtime
    return extras.setdefault(RUNTIME_KEY, CodingRuntime(settings_of(extras)))  # type: ignore[no-any-return]
