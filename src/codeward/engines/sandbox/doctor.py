"""What this machine can contain, checked: ``codeward doctor`` and the ``serve`` banner's sandbox line.

Each check is one fact with the fix when it fails (bubblewrap installed, user namespaces allowed,
overlays, the disk cap's tmpfs, cgroups, seccomp, slirp4netns, a Docker engine); then, for every
executor, the backend it will use and why, or the refusal it will give.
"""

from __future__ import annotations

import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from codeward.config.network import EXECUTORS, NetworkExecutor, NetworkSettings
from codeward.engines.sandbox.cgroups import detect_layout
from codeward.engines.sandbox.choice import INSTALL_BWRAP, BackendChoice, Executor, Plan
from codeward.engines.sandbox.network import network_unavailable
from codeward.engines.sandbox.overlay import overlays_work
from codeward.engines.sandbox.seccomp import seccomp_available

WRITERS = frozenset({Executor.SHELL, Executor.TESTS, Executor.REGISTRY, Executor.BEADS})
"""Executors whose runs write the project through an overlay (bwrap needs overlays for them)."""
USERNS_KNOBS = (
    ("/proc/sys/user/max_user_namespaces", "0", "user namespaces are disabled (user.max_user_namespaces = 0)",
     "sysctl -w user.max_user_namespaces=15000"),
    ("/proc/sys/kernel/unprivileged_userns_clone", "0", "unprivileged user namespaces are disabled "
     "(kernel.unprivileged_userns_clone = 0)", "sysctl -w kernel.unprivileged_userns_clone=1"),
    ("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1", "AppArmor restricts unprivileged user "
     "namespaces (kernel.apparmor_restrict_unprivileged_userns = 1)",
     "add an AppArmor profile allowing userns for bwrap, or sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"),
)


@dataclass(frozen=True)
class Check:
    """One fact about this machine: whether it holds, what was found, and the fix when it does not."""

    name: str
    ok: bool
    detail: str
    fix: str = ""
    needed_by: str = ""
    """Who needs it, when not everyone does (said when it fails)."""


@dataclass
class Diagnosis:
    """Every check, and what each executor will run in."""

    checks: list[Check] = field(default_factory=list)
    executors: list[Plan] = field(default_factory=list)
    configured: dict[str, str | int | bool] = field(default_factory=dict)
    """The settings that decide (``[sandbox] backend``...), as their values."""

    @property
    def ok(self) -> bool:
        """Every executor has a backend (isolating, or the operator's explicit process choice)."""
        return all(plan.backend is not None for plan in self.executors)

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "configured": self.configured, "checks": [asdict(c) for c in self.checks],
                "executors": [{"executor": str(p.executor), "backend": p.backend, "isolated": p.isolated,
                               "why": p.why, "fix": p.hint} for p in self.executors]}

    def render(self) -> str:
        shown = ", ".join(f"{key} = {_toml(value)}" for key, value in self.configured.items())
        lines = [f"configuration: {shown}", "", "checks:"]
        for check in self.checks:
            mark = "ok  " if check.ok else "MISS"
            lines.append(f"  [{mark}] {check.name}: {check.detail}")
            if not check.ok and check.fix:
                needed = f" (needed by {check.needed_by})" if check.needed_by else ""
                lines.append(f"         fix{needed}: {check.fix}")
        lines += ["", "executors:"]
        width = max(len(str(plan.executor)) for plan in self.executors)
        for plan in self.executors:
            if plan.backend is None:
                lines.append(f"  {plan.executor!s:<{width}}  REFUSES  {plan.why}")
                if plan.hint:
                    lines.append(f"  {'':<{width}}           fix: {plan.hint}")
            else:
                isolation = "isolated" if plan.isolated else "NOT isolated"
                lines.append(f"  {plan.executor!s:<{width}}  {plan.backend:<7}  {isolation}: {plan.why}")
        return "\n".join(lines)


def diagnose(choice: BackendChoice, disk_mb: int, *, shell_sandbox: bool = True,
             egress: NetworkSettings | None = None) -> Diagnosis:
    """Check this machine and say what each executor will use (runs a few probes: ~0.1-0.5 s)."""
    from codeward.engines.sandbox.bwrap import find_bwrap

    diagnosis = Diagnosis(configured={"[sandbox] backend": choice.backend, "[sandbox] disk_mb": disk_mb})
    if choice.code_backend:
        diagnosis.configured["[coding] backend"] = choice.code_backend
    if not shell_sandbox:
        diagnosis.configured["[shell] sandbox"] = False
    checks = diagnosis.checks
    binary = find_bwrap()
    checks.append(Check("bubblewrap installed", binary is not None,
                        f"{binary} ({_version(binary)})" if binary else "no `bwrap` on PATH or at /usr/bin/bwrap",
                        f"{INSTALL_BWRAP} (Debian/Ubuntu), dnf install bubblewrap (Fedora)"))
    checks += _namespace_checks()
    bwrap = choice.probe("bwrap") if binary else "bubblewrap is not installed"
    checks.append(Check("bwrap creates its namespaces", not isinstance(bwrap, str),
                        bwrap.describe() if not isinstance(bwrap, str) else bwrap.removeprefix("bwrap: "),
                        "allow unprivileged user namespaces (see the checks above) and run codeward as a user "
                        "that may create them"))
    overlay = overlays_work()
    checks.append(Check("overlayfs in a user namespace", overlay is None, overlay or "mounts (Linux 5.11+)",
                        "run on Linux 5.11 or later with user namespaces allowed",
                        "run_shell, run_tests, registry tools"))
    disk = overlays_work(disk_mb=disk_mb) if overlay is None else "needs the overlay"
    checks.append(Check("disk cap (a size-limited tmpfs in the run's namespace)", disk is None,
                        f"{disk_mb} MiB per run" if disk is None else f"{disk}: writes are bounded per file only",
                        "a kernel whose tmpfs can hold an overlay's upper layer in a user namespace; without one "
                        "the layers stay on the host's disk",
                        "the disk cap of run_shell, run_tests, registry tools"))
    layout = detect_layout()
    checks.append(Check("cgroups for memory and processes", layout is not None,
                        layout.describe() if layout else "none writable: limits are per process (rlimits)",
                        "start codeward in a delegated cgroup: systemd-run --user --scope -p Delegate=yes "
                        "codeward serve", "limits on all of a run's processes together"))
    seccomp = seccomp_available()
    checks.append(Check("seccomp filter", seccomp is None, seccomp or "libseccomp usable",
                        "pip install pyseccomp; apt-get install libseccomp2"))
    network = network_unavailable()
    checks.append(Check("isolated network (slirp4netns)", network is None, network or "slirp4netns and ip found",
                        "apt-get install slirp4netns iproute2", "runs the operator allows the network"))
    if egress is not None:
        checks.append(_egress_check(egress))
    docker = choice.probe("docker")
    checks.append(Check("Docker engine", not isinstance(docker, str),
                        docker.describe() if not isinstance(docker, str) else docker.removeprefix("docker: "),
                        "start the Docker daemon or set DOCKER_HOST", "coding_run_in_docker, and code execution "
                        "when bwrap cannot run"))
    for executor in Executor:
        diagnosis.executors.append(_plan(choice, executor, overlay, shell_sandbox))
    return diagnosis


def _egress_check(network: NetworkSettings) -> Check:
    """Whether a client's namespace and the egress proxy's listener in it can be made here (``[network]``)."""
    name = "egress proxy ([network] allowed_domains)"
    if not network.active:
        return Check(name, True, "no domain allowed: runs have no network (list domains in [network] "
                                 "allowed_domains to reach them through the proxy)")
    from codeward.engines.sandbox.egress_proxy import PROXY_PORT
    from codeward.engines.sandbox.shared_net import SharedNetwork

    try:
        made = SharedNetwork.create()
        try:
            made.listen(PROXY_PORT).close()
        finally:
            made.close()
    except OSError as exc:
        return Check(name, False, f"cannot listen in a network namespace: {exc}", "allow unprivileged user and "
                     "network namespaces (see the checks above)", "run_shell, run_tests and processes with network")
    return Check(name, True, "; ".join(_reach(network, executor) for executor in EXECUTORS))


def _reach(network: NetworkSettings, executor: NetworkExecutor) -> str:
    """What one executor reaches through the proxy, as the doctor says it."""
    who = EXECUTORS[executor]
    lists = network.lists(executor)
    domains = lists.allowed_domains
    if not domains:
        return f"{who}: no network ([{lists.table}] allows no domain)"
    listed = ", ".join(domains[:5]) + (f" and {len(domains) - 5} more" if len(domains) > 5 else "")
    return f"{who} reach {listed} through the proxy ([{lists.table}]), nothing else"


def banner_line(choice: BackendChoice) -> str:
    """One line for ``serve``'s start-up banner: what the executors run in (probes bwrap once)."""
    plans = [choice.plan(executor) for executor in Executor]
    refused = [plan for plan in plans if plan.backend is None]
    used = sorted({f"{plan.backend}{'' if plan.isolated else ' (NOT isolated)'}" for plan in plans if plan.backend})
    if not refused:
        return f"sandbox: {', '.join(used)} for every executor (`codeward doctor` checks it)"
    names = ", ".join(str(plan.executor) for plan in refused)
    runs = f"; {', '.join(used)} for the others" if used else ""
    return (f"sandbox: NONE for {names} — they refuse to run here{runs}; `codeward doctor` says what to install "
            f"({INSTALL_BWRAP})")


def _plan(choice: BackendChoice, executor: Executor, overlay: str | None, shell_sandbox: bool) -> Plan:
    if executor in (Executor.SHELL, Executor.TESTS) and not shell_sandbox:
        return Plan(executor, "host", False, "[shell] sandbox = false: scripts run as the server's user, with its "
                    "full access to files, processes and the network")
    plan = choice.plan(executor)
    if plan.backend == "bwrap" and executor in WRITERS and overlay is not None:
        return Plan(executor, None, False, f"its writes need an overlay, which cannot be mounted here ({overlay})",
                    "run codeward on Linux 5.11 or later with user namespaces allowed")
    return plan


def _toml(value: str | int | bool) -> str:
    """A value as codeward.toml spells it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return f'"{value}"' if isinstance(value, str) else str(value)


def _namespace_checks() -> list[Check]:
    checks: list[Check] = []
    for path, bad, problem, fix in USERNS_KNOBS:
        try:
            value = Path(path).read_text(encoding="ascii").strip()
        except OSError:
            continue  # this kernel has no such knob
        ok = value != bad
        checks.append(Check(f"user namespaces ({Path(path).name})", ok, f"{Path(path).name} = {value}"
                            if ok else problem, fix))
    return checks


def _version(binary: str) -> str:
    try:
        done = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"does not run: {exc}"
    return done.stdout.strip() or done.stderr.strip() or "unknown version"
