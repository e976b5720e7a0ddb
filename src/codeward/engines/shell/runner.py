"""Run one shell script for a tool call: check it, build its environment, run it sandboxed
(or, when configured, on the host), and report it in the seed's format.

The seed's result is ``STDOUT:\\n<out>\\nSTDERR:\\n<err>\\nEXIT CODE: <code>``, followed by
``QA ANALYSIS:\\n...`` when the QA callback is on and the script failed. An unsandboxed run's
result starts with an ``[unsandboxed: ...]`` line. A timeout or a cancellation is an error
result that still shows the output collected so far.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from codeward.config.network import NetworkExecutor
from codeward.engines.contained.project_sandbox import Program, ProjectAccess, ProjectSandbox, RunWatch
from codeward.engines.sandbox import SandboxRequest, SandboxResult, Status
from codeward.engines.sandbox.cgroups import detect_layout
from codeward.engines.sandbox.choice import Executor
from codeward.engines.sandbox.model import DEFAULT_PATH
from codeward.engines.sandbox.overlay import overlay_failure
from codeward.engines.sandbox.runner import minimal_env
from codeward.engines.shell.egress import ClientEgress, client_egress
from codeward.engines.shell.envfile import ENV_FILE_NAME, EnvFile, build_environment, load_env_file, prepended_dirs
from codeward.engines.shell.host import HOST_BACKEND, run_on_host
from codeward.engines.shell.log import ShellLogEntry, append_entry
from codeward.engines.shell.qa import explain_failure, failure_messages
from codeward.engines.shell.settings import ShellSettings, host_variables, readable_dirs
from codeward.kernel.result import ErrorKind, Result

if TYPE_CHECKING:

    from codeward.engines.sandbox.cgroups import CgroupLayout
    from codeward.kernel.context import Services, ToolContext

SHELLS = ("bash", "sh", "pwsh")
SHELL_PROGRAMS = {"bash": ("bash",), "sh": ("sh",), "pwsh": ("pwsh", "powershell")}
MAX_SCRIPT_CHARS = 100_000
FILE_SIZE_MB = 4096
OPEN_FILES = 4096
SCRATCH_MB = 1024
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib64")
"""Host directories the sandbox shows (read-only); its /tmp is private, not the host's."""
UNSANDBOXED_BANNER = ("[unsandboxed: [shell] sandbox = false in codeward.toml — this script ran as the server's "
                      "user, with its full access to files, processes and the network]")
NOT_ISOLATED_BANNER = ("[NOT isolated: [sandbox] backend = \"process\" in codeward.toml — this script ran as a plain "
                       "process: host files and the network were visible, secrets were not hidden, and its writes "
                       "were not checked]")


@dataclass(frozen=True)
class ShellCommand:
    """One run requested by a caller."""

    script: str
    shell: str = "bash"
    timeout_s: float = 60.0


class ShellRuntime:
    """What is probed once per server for unsandboxed runs (``[shell] sandbox = false``): the cgroups."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cgroups: CgroupLayout | None = None
        self._cgroups_probed = False

    def host_cgroups(self) -> CgroupLayout | None:
        with self._lock:
            if not self._cgroups_probed:
                self._cgroups = detect_layout()
                self._cgroups_probed = True
            return self._cgroups


def shell_runtime_of(services: Services) -> ShellRuntime:
    """The server's shell runtime, created on first use."""
    return services.runtimes.get(ShellRuntime, ShellRuntime)


@dataclass
class Executed:
    """A finished run: the sandbox's result, notes for the caller (write-back refusals...), whether cancelled."""

    result: SandboxResult
    notes: list[str]
    cancelled: bool

    @property
    def timed_out(self) -> bool:
        return self.result.status is Status.TIMEOUT


def execute(ctx: ToolContext, command: ShellCommand, settings: ShellSettings,
            executor: Executor = Executor.SHELL) -> Result[Executed | None]:
    """Check and run one script the one way codeward runs anything on the project: in a
    :class:`~codeward.engines.contained.project_sandbox.ProjectSandbox` with write access (unless the
    operator turned the shell's sandbox off), its writes brought back through the gate and recorded in the call's
    checkpoint, the run logged. Bad input runs nothing and writes nothing."""
    checked = check_command(command, settings)
    if not checked.ok:
        return checked.cast(None)
    env_file = load_env_file(ctx.workspace)
    if not env_file.ok:
        return env_file.cast(None)
    if not settings.sandbox:
        return _execute_on_host(ctx, command, settings, env_file.data)
    boxed = boxed_command(ctx, command, settings, env_file.data, executor)
    if not boxed.ok or boxed.data is None:
        return boxed.cast(None)
    box, program = boxed.data
    joined = in_client_network(ctx, program, "shell", executor.value, make=False)
    if not joined.ok or joined.data is None:
        return joined.cast(None)
    joined_program, egress = joined.data
    try:
        ran = box.run(replace(joined_program, warm=settings.warm_box))
    finally:
        network_notes = egress.finish()
    if not ran.ok or ran.data is None:
        return ran.cast(None)
    run = ran.data
    notes = [*boxed.notes, *joined.notes, *run.notes, *network_notes]
    _record(ctx, command, settings, run.result)
    if run.result.status is Status.SETUP_ERROR:
        return report(command, settings, run.result, notes, run.cancelled).cast(None)
    return Result.success(Executed(run.result, notes, run.cancelled))


def boxed_command(ctx: ToolContext, command: ShellCommand, settings: ShellSettings, env_file: EnvFile,
                  executor: Executor = Executor.SHELL) -> Result[tuple[ProjectSandbox, Program] | None]:
    """The box a script runs in and the script as it runs there (for ``run_shell`` and for a
    long-running process alike): the project overlaid, secrets hidden, the ``[shell]`` limits."""
    opened = ProjectSandbox.open(ctx, executor, ProjectAccess.WRITE, hide_secrets=settings.hide_secrets,
                                 hide_history=not settings.allow_secret_history)
    if not opened.ok or opened.data is None:
        return opened.cast(None)
    program = _program(ctx, command, settings, env_file)
    if not program.ok or program.data is None:
        return program.cast(None)
    return Result(data=(opened.data, program.data), notes=list(program.notes))


def in_client_network(ctx: ToolContext, program: Program, executor: NetworkExecutor, label: str,
                      make: bool, join: bool = True) -> Result[tuple[Program, ClientEgress] | None]:
    """The program in the client's shared loopback network: made when ``make`` (a long-running process) or
    when the operator allows ``executor`` some domains (its ``[network]`` lists: the egress proxy is its only
    way out, and the proxy variables carry the run's own credential), else joined when the client's processes
    made one and ``join`` (a dev server it started is then reachable at 127.0.0.1). A run given the whole network
    (``[shell] network``) stays apart. The caller calls :meth:`ClientEgress.finish` when the run ends."""
    if program.network:
        return Result.success((program, ClientEgress()))
    found = client_egress(ctx, executor, label, join=join, make=make)
    if not found.ok or found.data is None:
        return found.cast(None)
    egress = found.data
    if egress.network is not None:
        program = replace(program, env={**program.env, **egress.environment()}, shared_network=egress.network)
    return Result(data=(program, egress), notes=list(found.notes))


def _execute_on_host(ctx: ToolContext, command: ShellCommand, settings: ShellSettings,
                     env_file: EnvFile) -> Result[Executed | None]:
    """``[shell] sandbox = false``: the operator's choice to run scripts as the server's user."""
    primary = ctx.workspace.primary
    env = build_environment(dict(os.environ), env_file, primary)
    found = find_shell(command.shell, env.get("PATH", DEFAULT_PATH))
    if not found.ok:
        return found.cast(None)
    request = SandboxRequest(argv=shell_argv(command.shell, found.data, command.script), env=env,
                             workdir=str(primary), timeout_s=command.timeout_s,
                             max_output_bytes=settings.max_output_bytes)
    watch = RunWatch(ctx, Program(argv=request.argv, timeout_s=command.timeout_s))
    result = run_on_host(request, shell_runtime_of(ctx.services).host_cgroups(), watch)
    _record(ctx, command, settings, result)
    if result.status is Status.SETUP_ERROR:
        return report(command, settings, result, [], watch.cancelled).cast(None)
    return Result.success(Executed(result, [], watch.cancelled))


def run_command(ctx: ToolContext, command: ShellCommand, settings: ShellSettings) -> Result[str]:
    """Check, run, report and log one script (``run_shell``): :func:`execute`, in the seed's format."""
    executed = execute(ctx, command, settings)
    if not executed.ok or executed.data is None:
        return executed.cast("")
    run = executed.data
    return report(command, settings, run.result, run.notes, run.cancelled)


def check_command(command: ShellCommand, settings: ShellSettings) -> Result[str]:
    if not command.script.strip():
        return Result.fail(ErrorKind.INVALID_INPUT, "the script is empty",
                           "Pass the commands to run in `script`, e.g. \"ls -la\".", data="")
    if "\0" in command.script:
        return Result.fail(ErrorKind.INVALID_INPUT, "the script contains a NUL character",
                           "Remove the \\0 bytes; a shell script is text.", data="")
    if len(command.script) > MAX_SCRIPT_CHARS:
        return Result.fail(ErrorKind.TOO_LARGE, f"the script has {len(command.script)} characters, more than "
                           f"{MAX_SCRIPT_CHARS}", "Write long scripts to a file in the workspace and run that file.",
                           data="")
    if command.shell not in SHELLS:
        return Result.fail(ErrorKind.INVALID_INPUT, f"unknown shell {command.shell!r}",
                           f"Use one of: {', '.join(SHELLS)}.", data="")
    if not 0 < command.timeout_s <= settings.max_timeout_s:
        return Result.fail(ErrorKind.INVALID_INPUT,
                           f"timeout_s must be more than 0 and at most {settings.max_timeout_s:g} seconds, "
                           f"got {command.timeout_s:g}",
                           f"Pass a timeout between 1 and {settings.max_timeout_s:g} "
                           "([shell] max_timeout_s in codeward.toml sets the maximum).", data="")
    return Result.success("")


def find_shell(shell: str, search_path: str) -> Result[str]:
    """The shell's executable on ``search_path`` (then the server's PATH), or a clear error."""
    for name in SHELL_PROGRAMS[shell]:
        found = shutil.which(name, path=search_path) or shutil.which(name)
        if found:
            return Result.success(found)
    if shell == "pwsh":
        return Result.fail(ErrorKind.UNAVAILABLE, "PowerShell (pwsh) is not installed on this machine",
                           "Use shell=\"bash\" or shell=\"sh\", or install PowerShell 7 so that `pwsh` is on PATH.",
                           data="")
    return Result.fail(ErrorKind.UNAVAILABLE, f"{shell} is not installed on this machine",
                       "Use another shell (bash, sh), or install this one.", data="")


def shell_argv(shell: str, executable: str, script: str) -> list[str]:
    if shell == "pwsh":
        return [executable, "-NoProfile", "-NonInteractive", "-Command", script]
    if shell == "bash":
        return [executable, "--noprofile", "--norc", "-c", script]
    return [executable, "-c", script]


def _program(ctx: ToolContext, command: ShellCommand, settings: ShellSettings,
             env_file: EnvFile) -> Result[Program | None]:
    """The script as the box runs it: the shell found on the sandbox's PATH, the environment
    (``pass_env``, ``mcp_env.toml``), the operator's read-only paths, the ``[shell]`` limits.
    Its notes are those the run's result carries (``ro_paths`` missing, PATH entries not shown)."""
    primary = ctx.workspace.primary
    base = {**minimal_env({}, "/tmp", DEFAULT_PATH), **host_variables(settings.pass_env)}
    env = build_environment(base, env_file, primary)
    found = find_shell(command.shell, DEFAULT_PATH)
    if not found.ok:
        return found.cast(None)
    executable = os.path.realpath(found.data)
    readable, notes = readable_dirs(settings.ro_paths)
    visible = [*ctx.workspace.roots, *readable]
    if not _visible(executable, visible):
        readable.append(Path(executable).parent)
    for entry in prepended_dirs(env_file, base, primary):
        if not _visible(entry, visible):
            notes.append(f"PATH entry {entry} (from {ENV_FILE_NAME}) is not visible in the sandbox; add it to "
                         "[shell] ro_paths in codeward.toml to use programs from there")
    program = Program(
        argv=shell_argv(command.shell, executable, command.script), env=env, timeout_s=command.timeout_s,
        ro_binds=[str(p) for p in readable], network=settings.network, memory_mb=settings.memory_mb,
        max_processes=settings.max_processes, file_size_mb=FILE_SIZE_MB, open_files=OPEN_FILES,
        scratch_mb=SCRATCH_MB, max_output_bytes=settings.max_output_bytes)
    return Result(data=program, notes=notes)


def _visible(path: str | Path, dirs: Sequence[Path]) -> bool:
    text = str(path)
    bases = [*map(str, dirs), *SYSTEM_DIRS]
    return any(text == base or text.startswith(base.rstrip("/") + "/") for base in bases)


def report(command: ShellCommand, settings: ShellSettings, result: SandboxResult, notes: list[str],
           cancelled: bool) -> Result[str]:
    """The seed's text for a run, with the unsandboxed banner, QA analysis and notes."""
    banner = UNSANDBOXED_BANNER + "\n" if not settings.sandbox else \
        NOT_ISOLATED_BANNER + "\n" if not result.isolated and result.status is not Status.SETUP_ERROR else ""
    if result.status is Status.SETUP_ERROR:
        overlay = overlay_failure(result.stderr) or overlay_failure(result.error_message or "")
        if overlay is not None:
            return Result.fail(ErrorKind.UNAVAILABLE, f"the shell sandbox cannot run here: {overlay}",
                               "Scripts see the project through an overlay (Linux 5.11 or later with user "
                               "namespaces allowed), so that their writes pass codeward's checks; without one they "
                               "could plant code the host runs. Run codeward where overlays work.", data="")
        return Result.fail(ErrorKind.UNAVAILABLE, banner + (result.error_message or "the script could not start"),
                           "Check the sandbox with `codeward call code_list_languages`.", data="")
    body = format_output(
        bound_stream(result.stdout, settings.output_chars, result.stdout_truncated, settings.max_output_bytes),
        bound_stream(result.stderr, settings.output_chars, result.stderr_truncated, settings.max_output_bytes),
        result.exit_code)
    if cancelled:
        return Result.fail(ErrorKind.TIMEOUT, f"{banner}the run was cancelled; the script and every process it "
                           f"started were killed. Output so far:\n{body}", data="")
    if result.status is Status.TIMEOUT:
        return Result.fail(
            ErrorKind.TIMEOUT, f"{banner}the script timed out after {command.timeout_s:g} s; it and every process "
            f"it started were killed. Output so far:\n{body}",
            f"Make it finish sooner (split long work into steps, run servers with their own time limit) or pass a "
            f"larger timeout_s (at most {settings.max_timeout_s:g}).", data="")
    text = banner + body
    if result.exit_code != 0 and settings.qa_on_failure:
        messages = failure_messages(command.script, command.shell, result.exit_code, result.stdout, result.stderr)
        text += "\nQA ANALYSIS:\n" + explain_failure(settings.models, settings.qa_model, messages)
    extra = [f"note: {n}" for n in notes + result.notes]
    if result.limit_hit is not None or (result.exit_code is not None and result.exit_code < 0):
        extra.insert(0, f"note: {result.error_message}")
    extra += limit_notes(result)
    return Result.success(text, *extra)


def limit_notes(result: SandboxResult) -> list[str]:
    """When a limit could not be enforced: that, and what was. A run where every limit held
    keeps the seed's exact layout (docs/shell.md lists the limits it had)."""
    if not result.unenforced_limits:
        return []
    return [f"note: limits: {'; '.join(result.limits)}",
            *(f"note: NOT enforced: {limit}" for limit in result.unenforced_limits)]


def format_output(stdout: str, stderr: str, exit_code: int | None) -> str:
    """Exactly the seed's layout."""
    return f"STDOUT:\n{stdout}\nSTDERR:\n{stderr}\nEXIT CODE: {exit_code}"


def bound_stream(text: str, limit: int, dropped: bool, collected_bytes: int) -> str:
    """Keep the start and the end of a long stream around a marker saying how much was cut."""
    if len(text) > limit:
        head = limit // 2
        tail = limit - head
        text = f"{text[:head]}\n[... {len(text) - limit} characters cut ...]\n{text[-tail:]}"
    if dropped:
        text += f"\n[... output after the first {collected_bytes} bytes was not kept ...]\n"
    return text


def _record(ctx: ToolContext, command: ShellCommand, settings: ShellSettings, result: SandboxResult) -> None:
    how = result.backend if settings.sandbox else f"unsandboxed ({HOST_BACKEND})"
    first_line = command.script.strip().splitlines()[0][:200]
    ctx.log("info", f"run_shell [{how}] {command.shell} exit={result.exit_code} status={result.status.value} "
                    f"{result.duration_s:.2f}s: {first_line}")
    if not settings.log:
        return
    entry = ShellLogEntry(script=command.script, shell=command.shell, cwd=str(ctx.workspace.primary),
                          exit_code=result.exit_code, status=result.status.value, duration_s=result.duration_s,
                          sandbox=how, timeout_s=command.timeout_s)
    problem = append_entry(ctx.workspace, entry)
    if problem:
        ctx.log("warning", f"run_shell: the shell log was not written: {problem}")
