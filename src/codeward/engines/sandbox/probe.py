"""Probe a sandbox backend: bwrap, a Docker engine, or plain processes (only when named).

Which backend each executor uses — and the refusal when none isolates — is decided by
:mod:`.choice`; this module only says whether one backend runs here.
"""

from __future__ import annotations

from codeward.engines.sandbox.cgroups import detect_layout
from codeward.engines.sandbox.model import Sandbox, SandboxUnavailable
from codeward.engines.sandbox.seccomp import build_filter, seccomp_available

BACKENDS = ("bwrap", "docker", "process")
ISOLATING = ("bwrap", "docker")
"""What is tried without a name: the plain-process backend never runs unless it is named."""


def probe_sandbox(preferred: str | None = None) -> Sandbox:
    """The first isolating backend that works here (bwrap, then Docker), or ``preferred``;
    raises :class:`SandboxUnavailable` with the reasons when none can run. The ``process``
    backend (which always works) is returned only when asked for by name.

    Probing costs a few tens of milliseconds (one real bwrap run); keep the returned object.
    """
    if preferred is not None and preferred not in BACKENDS:
        raise SandboxUnavailable(f"unknown sandbox backend {preferred!r}; choose one of {', '.join(BACKENDS)}")
    order = (preferred,) if preferred else ISOLATING
    reasons: list[str] = []
    cgroups = detect_layout()
    for name in order:
        try:
            if name == "bwrap":
                from codeward.engines.sandbox.bwrap import probe_bwrap

                seccomp = None
                if seccomp_available() is None:
                    seccomp = {False: build_filter(False), True: build_filter(True)}
                return probe_bwrap(cgroups, seccomp)
            if name == "docker":
                from codeward.engines.sandbox.docker import probe_docker

                return probe_docker()
            from codeward.engines.sandbox.process import ProcessSandbox

            return ProcessSandbox(cgroups)
        except SandboxUnavailable as exc:
            reasons.append(f"{name}: {exc}")
    raise SandboxUnavailable("; ".join(reasons))


def unavailable_reasons() -> dict[str, str]:
    """Why each backend other than the chosen one is not used (for status displays)."""
    reasons: dict[str, str] = {}
    for name in BACKENDS:
        try:
            probe_sandbox(name)
        except SandboxUnavailable as exc:
            reasons[name] = str(exc)
    return reasons
