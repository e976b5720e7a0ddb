"""Run a program contained. The small, stable API other tools build on::

    from codeward.engines.sandbox import SandboxRequest, probe_sandbox

    sandbox = probe_sandbox()            # once; bwrap > docker > process, by probing
    result = sandbox.run(SandboxRequest(
        argv=["bash", "-c", "make test"],
        workdir="/home/me/project",      # cwd inside; default: a private, empty /work
        rw_binds=["/home/me/project"],   # host paths (or (host, inside) pairs), read-write
        network=False, timeout_s=60,
    ))
    result.status        # Status.SUCCESS | ERROR | TIMEOUT | SETUP_ERROR  (the seed's words)
    result.exit_code, result.stdout, result.stderr, result.duration_s
    result.backend, result.isolated      # shown to users with every result
    result.error_message, result.limit_hit, result.stdout_truncated, result.stderr_truncated

:class:`SandboxRequest` fields: ``argv, stdin, env, workdir, rw_binds, ro_binds, network,
timeout_s, memory_mb, max_processes, cpu_seconds, file_size_mb, open_files, scratch_mb,
address_space_mb, max_output_bytes``. :class:`SandboxResult` fields: ``status, exit_code,
stdout, stderr, duration_s, backend, isolated, error_message, stdout_truncated,
stderr_truncated, limit_hit, peak_memory_mb, notes``.

Guarantees of every backend: the environment holds only PATH, HOME=/tmp, TMPDIR, LANG and
what ``env`` adds; the program starts in a new session; at the deadline the whole process
tree is killed (process group, pid namespace and cgroup); anything left running when the
main process exits is killed too; ``run`` never raises for what the program does.
``bwrap`` adds namespaces (no network unless asked, only the binds visible, read-only
system), no capabilities, a seccomp filter, and cgroup memory/pids limits. See
``docs/sandbox.md``.
"""

from codeward.engines.sandbox.model import (
    Bind,
    Limit,
    Sandbox,
    SandboxRequest,
    SandboxResult,
    SandboxUnavailable,
    Status,
)
from codeward.engines.sandbox.probe import BACKENDS, probe_sandbox

__all__ = [
    "BACKENDS",
    "Bind",
    "Limit",
    "Sandbox",
    "SandboxRequest",
    "SandboxResult",
    "SandboxUnavailable",
    "Status",
    "probe_sandbox",
]
