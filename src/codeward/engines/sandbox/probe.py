"""Choose a sandbox backend by trying them: bwrap, then a Docker engine, then plain processes."""

from __future__ import annotations

from codeward.engines.sandbox.cgroups import detect_layout
from codeward.engines.sandbox.model import Sandbox, SandboxUnavailable
from codeward.engines.sandbox.seccomp import build_filter, seccomp_available

BACKENDS = ("bwrap", "docker", "process")


def probe_sandbox(preferred: str | None = None) -> Sandbox:
    """The best backend that works here, or ``preferred`` (raising :class:`SandboxUnavailable`
    with the reason when that one cannot run). The ``process`` backend always works.

    Probing costs a few tens of milliseconds (one real bwrap run); keep the returned object.
    """
    if preferred is not None and preferred not in BACKENDS:
        raise SandboxUnavailable(f"unknown sandbox backend {preferred!r}; choose one of {', '.join(BACKENDS)}")
    order = (preferred,) if preferred else BACKENDS
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
