"""Turn a finished process into a :class:`SandboxResult`: status, and an error message that
names the limit that was hit and how to change it."""

from __future__ import annotations

import signal

from codeward.engines.sandbox.cgroups import CgroupEvents
from codeward.engines.sandbox.limits import LimitPlan
from codeward.engines.sandbox.model import Limit, SandboxRequest, SandboxResult, Status
from codeward.engines.sandbox.runner import Collected

NO_SPACE_MARKERS = ("No space left on device", "ENOSPC")
OUT_OF_MEMORY_MARKERS = ("cannot allocate memory", "out of memory", "allocation failed", "bad_alloc")
"""How runtimes say a (per-process) memory limit refused an allocation, lower-cased."""
NO_PROCESS_MARKERS = ("fork: retry", "fork: Resource temporarily unavailable", "can't start new thread",
                      "BlockingIOError: [Errno 11]")
"""How programs say the process limit (RLIMIT_NPROC or pids.max) refused a new process."""


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


FATAL_SIGNALS = frozenset({signal.SIGILL, signal.SIGABRT, signal.SIGBUS, signal.SIGFPE, signal.SIGKILL,
                           signal.SIGSEGV, signal.SIGPIPE, signal.SIGTERM, signal.SIGXCPU, signal.SIGXFSZ,
                           signal.SIGSYS})


def normalize_exit(code: int, shell_style: bool) -> int:
    """bwrap reports a death by signal N as status 128+N; give it as -N like subprocess does.

    The two cannot be told apart, so only signals that end programs on their own are read
    this way: ``exit(130)`` stays 130, while 137 is taken as SIGKILL.
    """
    if shell_style and 128 < code < 128 + 65 and (code - 128) in FATAL_SIGNALS:
        return -(code - 128)
    return code


def to_result(
    collected: Collected,
    events: CgroupEvents,
    request: SandboxRequest,
    backend: str,
    isolated: bool,
    shell_style_exit: bool = False,
    limits: LimitPlan | None = None,
) -> SandboxResult:
    code = normalize_exit(collected.returncode, shell_style_exit)
    stderr = collected.stderr.decode("utf-8", "replace")
    result = SandboxResult(
        status=Status.SUCCESS,
        exit_code=code,
        stdout=collected.stdout.decode("utf-8", "replace"),
        stderr=stderr,
        duration_s=round(collected.duration_s, 4),
        backend=backend,
        isolated=isolated,
        stdout_truncated=collected.stdout_truncated,
        stderr_truncated=collected.stderr_truncated,
        peak_memory_mb=events.peak_memory_mb,
    )
    if limits is not None:
        result.limits = [f"wall clock {request.timeout_s:g} s (the whole process tree is killed)", *limits.enforced]
        result.unenforced_limits = list(limits.unenforced)
    if collected.stdout_truncated or collected.stderr_truncated:
        result.notes.append(f"output was cut at {request.max_output_bytes} bytes per stream")
    if collected.leftovers_killed:
        result.notes.append(f"killed {collected.leftovers_killed} background process(es) the program left running")
    processes = f" (the process limit of {request.max_processes} was reached, so new processes failed)" if (
        events.pids_limited) else ""
    if collected.timed_out:
        result.status, result.limit_hit = Status.TIMEOUT, Limit.TIMEOUT
        result.error_message = (f"timed out after {request.timeout_s:g} s; the program and every process it "
                                f"started were killed{processes}. Make it finish sooner or raise the timeout.")
        return result
    if collected.output_flooded:
        result.status, result.limit_hit = Status.ERROR, Limit.OUTPUT
        result.error_message = (f"killed: it printed more than {request.max_output_bytes * 16} bytes of output. "
                                "Print less (write big results to a file and print a summary).")
        return result
    if events.oom_killed:
        result.status, result.limit_hit = Status.ERROR, Limit.MEMORY
        result.error_message = (f"killed: out of memory — the run may use {request.memory_mb} MB. "
                                "Use less memory (process data in chunks) or ask for a larger memory limit.")
        return result
    if code == -signal.SIGXCPU or (code == -signal.SIGKILL and _cpu_limited(request, collected)):
        result.status, result.limit_hit = Status.ERROR, Limit.CPU_TIME
        result.error_message = f"killed: CPU time limit of {request.cpu_seconds or '?'} s used up. Do less work."
        return result
    if code == -signal.SIGXFSZ:
        result.status, result.limit_hit = Status.ERROR, Limit.FILE_SIZE
        result.error_message = f"killed: a file grew past the {request.file_size_mb} MB file-size limit."
        return result
    if code == 0:
        if events.pids_limited:
            result.notes.append(f"the process limit of {request.max_processes} was reached at some point")
        return result
    result.status = Status.ERROR
    if code < 0:
        result.error_message = f"the program was killed by {signal_name(-code)}{processes}"
    else:
        result.error_message = f"the program exited with status {code}{processes}"
    if events.pids_limited:
        result.limit_hit = Limit.PROCESSES
    if any(marker in stderr for marker in NO_SPACE_MARKERS):
        result.limit_hit = Limit.DISK
        result.error_message += (f"; its writable space is full (the sandbox's /tmp and work dir hold "
                                 f"{request.scratch_mb} MB)")
    elif "File too large" in stderr or "EFBIG" in stderr:
        result.limit_hit = Limit.FILE_SIZE
        result.error_message += f"; a file reached the {request.file_size_mb} MB file-size limit"
    elif any(marker in stderr.lower() for marker in OUT_OF_MEMORY_MARKERS) or "MemoryError" in stderr:
        result.limit_hit = Limit.MEMORY
        result.error_message += f"; it ran out of memory (limit {request.memory_mb} MB)"
    elif not events.pids_limited and any(marker in stderr for marker in NO_PROCESS_MARKERS):
        result.limit_hit = Limit.PROCESSES
        result.error_message += f"; it could not start more processes (limit {request.max_processes})"
    return result


def _cpu_limited(request: SandboxRequest, collected: Collected) -> bool:
    return request.cpu_seconds is not None and collected.duration_s >= request.cpu_seconds
