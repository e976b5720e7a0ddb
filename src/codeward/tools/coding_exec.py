"""Coding tools that run code: execute, list languages, monitor, run in Docker, debug.

Every run goes through the sandbox the server's backend choice gives code execution (bwrap
where namespaces work, else a Docker engine; plain processes, marked not isolated, only when the
operator set ``[sandbox] backend = "process"``; otherwise a refusal naming what to install);
each result names the backend.
Program failures and timeouts are *results* (``status`` says which); only what stops the
code from running at all (``setup_error``) is reported as a tool error.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from codeward.config.coding import IMAGE_REFERENCE, CodingSettings
from codeward.engines.execution.debug import Attempt, detect_language, diagnose, repair
from codeward.engines.execution.execute import Execution, Limits, ProxiedNetwork, execute
from codeward.engines.execution.languages import docker_image
from codeward.engines.execution.monitor import Sampler
from codeward.engines.execution.runtime import NO_MODEL, CodingRuntime, runtime_of
from codeward.engines.llm.client import ask_text_sync
from codeward.engines.sandbox import SandboxUnavailable
from codeward.engines.sandbox.choice import SandboxRefused
from codeward.engines.sandbox.runner import RunObserver
from codeward.engines.shell.egress import client_egress
from codeward.kernel.catalog import tool
from codeward.kernel.context import ToolContext
from codeward.kernel.result import ErrorKind, Result
from codeward.tools.codomyrmex_shapes import failed

LanguageName = Literal["python", "javascript", "java", "cpp", "c", "go", "rust", "bash"]
LanguageArg = LanguageName
CodeArg = Annotated[str, Field(description="A whole program.")]
StdinArg = str
TimeoutArg = Annotated[int, Field(ge=1, le=300, description="Seconds.")]
STATUS_HELP = "success | error | timeout | setup_error"
_MEMORY = re.compile(r"^\d+[bkmg]?$", re.IGNORECASE)
_UNIT_BYTES = {"b": 1, "k": 1024, "m": 1048576, "g": 1073741824}
DOCKER_MIN_MB, DOCKER_MAX_MB = 32, 8192
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")


class ExecutionOutput(BaseModel):
    """What ``coding_execute_code`` returns (the seed's fields first)."""

    stdout: str
    stderr: str
    exit_code: int | None
    execution_time: float = Field(description="Seconds the program ran (compilation not included).")
    status: Literal["success", "timeout", "error", "setup_error"]
    error_message: str | None
    language: str
    backend: str = Field(description="Sandbox that ran the code: bwrap, docker or process.")
    isolated: bool = Field(description="False for the process backend: host files and network were visible.")
    compile_time: float | None = None
    session_id: str | None = None
    warm: bool = Field(False, description="Ran in a pre-started sandbox of the warm pool.")
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    limit_hit: str | None = None
    peak_memory_mb: float | None = None
    notes: list[str] = Field(default_factory=list)
    limits: list[str] = Field(default_factory=list, description="Limits enforced on the run, with how.")
    limits_not_enforced: list[str] = Field(default_factory=list,
                                           description="Limits asked for that this host could not enforce.")

    @classmethod
    def of(cls, execution: Execution) -> ExecutionOutput:
        return cls(
            stdout=execution.stdout, stderr=execution.stderr, exit_code=execution.exit_code,
            execution_time=execution.execution_time, status=execution.status.value,
            error_message=execution.error_message, language=execution.language, backend=execution.backend,
            isolated=execution.isolated, compile_time=execution.compile_time, session_id=execution.session_id,
            warm=execution.warm, stdout_truncated=execution.stdout_truncated,
            stderr_truncated=execution.stderr_truncated, limit_hit=execution.limit_hit,
            peak_memory_mb=execution.peak_memory_mb, notes=execution.notes, limits=execution.limits,
            limits_not_enforced=execution.unenforced_limits,
        )

    def render(self) -> str:
        isolation = "" if self.isolated else ", NOT isolated"
        timing = f"{self.execution_time:.3f}s" + (f", compiled in {self.compile_time:.2f}s"
                                                 if self.compile_time is not None else "")
        head = (f"status: {self.status} (exit code {self.exit_code}, {timing}, {self.language} "
                f"in {self.backend}{isolation}{', session ' + self.session_id if self.session_id else ''})")
        parts = [head]
        if self.error_message:
            parts.append(f"error: {self.error_message}")
        parts.append("--- stdout ---\n" + self.stdout + ("\n[stdout truncated]" if self.stdout_truncated else ""))
        if self.stderr:
            parts.append("--- stderr ---\n" + self.stderr + ("\n[stderr truncated]" if self.stderr_truncated
                                                               else ""))
        parts += [f"note: {note}" for note in self.notes]
        if self.limits:
            parts.append("limits: " + "; ".join(self.limits))
        parts += [f"NOT enforced: {limit}" for limit in self.limits_not_enforced]
        return "\n".join(parts)


def network_refusal(ctx: ToolContext, asked: bool, argument: str) -> Result[None] | None:
    """A refusal when a call asks for network the operator has not allowed, else ``None``."""
    if not asked or ctx.services.get(CodingSettings).allow_network:
        return None
    return Result.fail(ErrorKind.PERMISSION,
                       f"{argument}=true was refused: network access for code is the operator's decision, and this "
                       "server does not allow it",
                       f"Run the code without {argument} (it has no network), or ask the user to set "
                       "`[coding] allow_network = true` in codeward.toml. Even then the host and private networks "
                       "stay out of reach.", data=None)


def _execution_result(execution: Execution) -> Result[ExecutionOutput]:
    output = ExecutionOutput.of(execution)
    if execution.status.value == "setup_error":
        return Result.fail(ErrorKind.UNAVAILABLE, f"setup_error: {execution.error_message}",
                           "Call code_list_languages to see what can run here, then fix the arguments.",
                           data=output)
    return Result.success(output)


@tool(toolset="coding", open_world=False, output=ExecutionOutput, title="Execute code in a sandbox",
      failure=failed("Execution", status="setup_error"),
      examples=[
          {"language": "python", "code": "prices = [2.5, 4.0, 1.25]\nprint(f'total: {sum(prices):.2f}')"},
          {"language": "python", "code": "stock = {'apples': 12}", "session_id": "inventory"},
      ])
def coding_execute_code(
    ctx: ToolContext,
    language: LanguageArg,
    code: CodeArg,
    stdin: StdinArg = "",
    timeout: TimeoutArg = 30,
    session_id: Annotated[str | None, Field(
        description="python: keep variables and /work files between calls with this id (15 idle minutes).")] = None,
    memory_mb: Annotated[int | None, Field(ge=32, le=8192)] = None,
    network: Annotated[bool, Field(description="Only if the operator allows it.")] = False,
) -> Result[ExecutionOutput]:
    """Run a program in a sandbox (no network, a private /work folder, limits) and return its output. Compiled
    languages are built first; check status: a failing or uncompilable program is a result, not an error."""
    refused = network_refusal(ctx, network, "network")
    if refused is not None:
        return refused.cast(None)  # type: ignore[arg-type]
    ctx.progress(0, 1, f"running {language} code")
    runtime = runtime_of(ctx.services)
    execution = execute_proxied(ctx, runtime, language, code, stdin, Limits(timeout, memory_mb, network), session_id,
                                client=ctx.call.client)
    ctx.progress(1, 1, execution.status.value)
    return _execution_result(execution)


def execute_proxied(ctx: ToolContext, runtime: CodingRuntime, language: str, code: str, stdin: str, limits: Limits,
                    session_id: str | None = None, observer: RunObserver | None = None,
                    client: str | None = "") -> Execution:
    """:func:`execute`, with the egress proxy when the operator allows code execution some domains
    (``[network.code]``; never from a call's arguments): the run's own credential, its own refusals in its notes."""
    if limits.network:  # the whole network ([coding] allow_network): no proxy
        return execute(runtime, language, code, stdin, limits, session_id, observer, client)
    found = client_egress(ctx, "code", f"code {language}")
    egress = found.data
    if not found.ok or egress is None:
        return Execution.setup_error(language, "; ".join(f"{error.message} ({error.hint})" if error.hint else
                                                        error.message for error in found.errors))
    proxied = ProxiedNetwork(egress.network, egress.environment()) \
        if egress.network is not None and egress.grant is not None else None
    try:
        execution = execute(runtime, language, code, stdin, limits, session_id, observer, client, proxied)
    finally:
        network_notes = egress.finish()
    execution.notes += [*found.notes, *network_notes]
    return execution


class LanguageInfo(BaseModel):
    name: str
    available: bool
    reason: str = Field("", description="Why it is unavailable, and how to install it.")
    version: str = ""
    compiled: bool
    default_memory_mb: int
    sessions: bool = Field(description="Whether session_id keeps state between calls.")


class LanguagesOutput(BaseModel):
    languages: list[LanguageInfo]
    backend: str
    isolated: bool
    sandbox: str = Field(description="What protects runs here.")
    notes: list[str] = Field(default_factory=list)

    def render(self) -> str:
        lines = [f"sandbox: {self.sandbox}"]
        for info in self.languages:
            if info.available:
                extra = ", compiled" if info.compiled else ""
                extra += ", sessions" if info.sessions else ""
                lines.append(f"  {info.name:<11} available   {info.version}{extra}")
            else:
                lines.append(f"  {info.name:<11} UNAVAILABLE {info.reason}")
        lines += [f"note: {note}" for note in self.notes]
        return "\n".join(lines)


@tool(toolset="coding", read_only=True, output=LanguagesOutput, title="List runnable languages",
      examples=[{}])
def code_list_languages(ctx: ToolContext) -> Result[LanguagesOutput]:
    """Which languages coding_execute_code can run here (and why not), and the sandbox in use."""
    runtime = runtime_of(ctx.services)
    try:
        sandbox = runtime.sandbox()
    except SandboxRefused as refused:
        return Result.fail(ErrorKind.UNAVAILABLE, str(refused), refused.hint)
    languages = [
        LanguageInfo(name=name, available=chain.available, reason=chain.reason, version=chain.version,
                     compiled=chain.language.compiled, default_memory_mb=chain.language.memory_mb,
                     sessions=name == "python" and runtime.startable() is not None)
        for name, chain in runtime.toolchains().items()
    ]
    return Result.success(LanguagesOutput(languages=languages, backend=sandbox.name, isolated=sandbox.isolated,
                                          sandbox=sandbox.describe(), notes=runtime.sandbox_notes))


# -- monitoring ------------------------------------------------------------------------------


class TimelineSample(BaseModel):
    timestamp_ms: float
    memory_mb: float
    cpu_percent: float
    io_read_bytes: int
    io_write_bytes: int
    processes: int
    vms_mb: float | None = None


class MonitorMetrics(BaseModel):
    peak_memory_mb: float
    avg_cpu_percent: float
    total_duration_ms: float
    io_read_bytes: int = Field(description="Bytes read through read calls (files, pipes) by the run's processes.")
    io_write_bytes: int
    samples: int


class ProcessMemory(BaseModel):
    pid: int
    name: str
    peak_rss_mb: float


class MonitorOutput(BaseModel):
    success: bool = Field(description="Whether the program ran to completion with exit code 0.")
    execution_result: ExecutionOutput
    metrics: MonitorMetrics
    timeline: list[TimelineSample]
    memory_profile: list[ProcessMemory] | None = None
    error: str | None = None

    def render(self) -> str:
        m = self.metrics
        lines = [self.execution_result.render(), "--- metrics ---",
                 f"peak memory {m.peak_memory_mb} MB, average CPU {m.avg_cpu_percent}%, "
                 f"{m.total_duration_ms:.0f} ms, read {m.io_read_bytes} B, wrote {m.io_write_bytes} B, "
                 f"{m.samples} samples"]
        for sample in self.timeline[:50]:
            lines.append(f"  t={sample.timestamp_ms:>8.1f}ms mem={sample.memory_mb:>8.2f}MB "
                         f"cpu={sample.cpu_percent:>6.1f}% procs={sample.processes}")
        if len(self.timeline) > 50:
            lines.append(f"  ... {len(self.timeline) - 50} more samples in the structured result")
        if self.memory_profile:
            lines.append("--- peak memory per process ---")
            lines += [f"  {p.pid} {p.name}: {p.peak_rss_mb} MB" for p in self.memory_profile]
        if self.error:
            lines.append(f"monitoring: {self.error}")
        return "\n".join(lines)


@tool(toolset="coding", output=MonitorOutput, title="Run code and sample CPU, memory and I/O",
      failure=failed("Monitoring"),
      examples=[
          {
              "language": "python",
              "code": "data = [i * i for i in range(200_000)]\nprint(len(data))",
              "sample_interval_ms": 50,
          },
      ])
def coding_monitor_execution(
    ctx: ToolContext,
    language: LanguageArg,
    code: CodeArg,
    sample_interval_ms: Annotated[int, Field(ge=10, le=5000)] = 100,
    include_memory_profile: Annotated[bool, Field(description="Virtual memory, per-process peaks.")] = False,
    timeout: TimeoutArg = 60,
    stdin: StdinArg = "",
) -> Result[MonitorOutput]:
    """Run a program in the sandbox, sampling its CPU, memory and I/O into a timeline."""
    runtime = runtime_of(ctx.services)
    sampler = Sampler(tick_s=sample_interval_ms / 1000, detailed=include_memory_profile)
    execution = execute_proxied(ctx, runtime, language, code, stdin, Limits(timeout_s=timeout), observer=sampler)
    output = ExecutionOutput.of(execution)
    if execution.status.value == "setup_error":
        return Result.fail(ErrorKind.UNAVAILABLE, f"Monitoring failed (status: setup_error): {execution.error_message}",
                           "Call code_list_languages to see what can run here.")
    reads, writes = sampler.io_totals()
    peak = max(sampler.peak_memory_mb(), execution.peak_memory_mb or 0.0)
    metrics = MonitorMetrics(peak_memory_mb=round(peak, 2), avg_cpu_percent=sampler.average_cpu_percent(),
                             total_duration_ms=round(execution.execution_time * 1000, 1), io_read_bytes=reads,
                             io_write_bytes=writes, samples=len(sampler.samples))
    timeline = [TimelineSample(**vars(sample)) for sample in sampler.samples]
    profile = ([ProcessMemory(**vars(p)) for p in sampler.peaks.values()] if include_memory_profile else None)
    error = sampler.error
    if not sampler.samples and error is None:
        error = "the program ended before the first sample; metrics come from the cgroup only"
    return Result.success(MonitorOutput(success=execution.status.value == "success", execution_result=output,
                                        metrics=metrics, timeline=timeline, memory_profile=profile, error=error))


# -- docker ----------------------------------------------------------------------------------


class DockerOutput(BaseModel):
    stdout: str
    stderr: str
    exit_code: int | None
    execution_time: float
    status: str = Field(description=STATUS_HELP)
    container_id: str
    resource_usage: dict[str, float]
    image: str
    error_message: str | None = None

    def render(self) -> str:
        head = (f"status: {self.status} (exit code {self.exit_code}, {self.execution_time:.3f}s, image {self.image}, "
                f"container {self.container_id})")
        parts = [head] + ([f"error: {self.error_message}"] if self.error_message else [])
        parts.append("--- stdout ---\n" + self.stdout)
        if self.stderr:
            parts.append("--- stderr ---\n" + self.stderr)
        if self.resource_usage:
            parts.append("usage: " + ", ".join(f"{k}={v}" for k, v in self.resource_usage.items()))
        return "\n".join(parts)


@tool(toolset="coding", open_world=True, output=DockerOutput, title="Run code in a Docker container",
      failure=failed("Docker execution", status="setup_error"),
      examples=[
          {"language": "python", "code": "import platform\nprint(platform.python_version())", "memory_limit": "256m"},
      ])
def coding_run_in_docker(
    ctx: ToolContext,
    language: LanguageArg,
    code: CodeArg,
    image: Annotated[str | None, Field(description="A local image (never pulled); default: the language's.")
                     ] = None,
    environment: dict[str, str] | None = None,
    memory_limit: Annotated[str, Field(description="e.g. 1g")] = "256m",
    cpu_limit: Annotated[float, Field(gt=0, le=64)] = 1.0,
    network_enabled: bool = False,
    timeout: TimeoutArg = 30,
    stdin: StdinArg = "",
) -> Result[DockerOutput]:
    """Run a program in a throw-away Docker container (needs a Docker engine)."""
    problem = _docker_argument_problem(image, environment or {}, memory_limit)
    if problem is not None:
        return Result.fail(ErrorKind.INVALID_INPUT, problem, "Fix the argument and call again.")
    refused = network_refusal(ctx, network_enabled, "network_enabled")
    if refused is not None:
        return refused.cast(None)  # type: ignore[arg-type]
    from codeward.engines.execution.docker_exec import run_code_in_docker
    from codeward.engines.sandbox.docker import DockerSandbox, engine_client

    try:
        sandbox = DockerSandbox(engine_client())
    except SandboxUnavailable as exc:
        return Result.fail(ErrorKind.UNAVAILABLE, f"Docker execution failed (status: setup_error): {exc}",
                           "Use coding_execute_code, which runs code in the local sandbox without Docker.")
    chosen = image or docker_image(ctx.services.get(CodingSettings), language)
    ctx.progress(0, 1, f"running {language} in {chosen}")
    outcome = run_code_in_docker(sandbox, language, code, stdin, image=chosen, environment=environment,
                                 memory_limit=memory_limit.lower(), cpu_limit=cpu_limit, network=network_enabled,
                                 timeout_s=timeout)
    result = outcome.result
    output = DockerOutput(stdout=result.stdout, stderr=result.stderr, exit_code=result.exit_code,
                          execution_time=result.duration_s, status=result.status.value,
                          container_id=outcome.container_id, resource_usage=outcome.resource_usage, image=chosen,
                          error_message=result.error_message)
    if result.status.value == "setup_error":
        return Result.fail(ErrorKind.UNAVAILABLE, f"Docker execution failed (status: setup_error): "
                                                  f"{result.error_message}",
                           "Ask the user to provide the image (the error says how), or pass an image that exists.",
                           data=output)
    return Result.success(output)


def _docker_argument_problem(image: str | None, environment: dict[str, str], memory_limit: str) -> str | None:
    if image is not None and not IMAGE_REFERENCE.match(image):
        return f"image {image!r} is not a valid Docker image reference (like python:3.11-slim)"
    if not _MEMORY.match(memory_limit):
        return f"memory_limit {memory_limit!r} is not a size like '256m' or '1g'"
    unit = memory_limit[-1].lower() if memory_limit[-1].isalpha() else "b"
    megabytes = int(memory_limit.rstrip("bkmgBKMG")) * _UNIT_BYTES[unit] / 1048576
    if not DOCKER_MIN_MB <= megabytes <= DOCKER_MAX_MB:  # "0" would mean no limit at all to the engine
        return (f"memory_limit {memory_limit!r} must be between {DOCKER_MIN_MB}m and {DOCKER_MAX_MB // 1024}g "
                "(like coding_execute_code's memory_mb)")
    bad = [name for name in environment if not _ENV_NAME.match(name)]
    if bad:
        return f"environment variable names must be letters, digits and '_': {', '.join(map(repr, bad))}"
    return None


# -- debugging -------------------------------------------------------------------------------


class DiagnosisOutput(BaseModel):
    error_type: str
    line_number: int | None
    root_cause: str
    message: str = ""
    language: str


class VerificationOutput(BaseModel):
    tests_passed: bool = Field(description="Whether the fixed code ran cleanly (exit code 0) in the sandbox.")
    status: str = ""
    stdout: str = ""
    stderr: str = ""


class AttemptOutput(BaseModel):
    description: str
    status: str
    exit_code: int | None
    stderr: str


class DebugOutput(BaseModel):
    success: bool
    fixed_code: str | None
    diagnosis: DiagnosisOutput
    patches_attempted: int
    patch_description: str
    verification: VerificationOutput
    attempts: list[AttemptOutput] = Field(default_factory=list)
    model: str | None = None
    error: str | None = None

    def render(self) -> str:
        d = self.diagnosis
        where = f" at line {d.line_number}" if d.line_number else ""
        lines = [f"diagnosis: {d.error_type}{where} — {d.root_cause}"]
        if self.success:
            lines.append(f"fixed after {self.patches_attempted} attempt(s): {self.patch_description}")
            lines.append(f"verification: ran cleanly ({self.verification.status})")
            lines.append(f"--- fixed code ---\n{self.fixed_code}")
        else:
            lines.append(f"not fixed: {self.error}")
            for number, attempt in enumerate(self.attempts, 1):
                lines.append(f"  attempt {number}: {attempt.description} -> {attempt.status}")
        return "\n".join(lines)


@tool(toolset="coding", output=DebugOutput, title="Diagnose and repair failing code", failure=failed("Debugging"),
      examples=[
          {
              "language": "python",
              "source_code": "prices = []\nprint(sum(prices) / len(prices))\n",
              "stdout": "",
              "stderr": ("Traceback (most recent call last):\n"
                         "  File \"main.py\", line 2, in <module>\n"
                         "    print(sum(prices) / len(prices))\n"
                         "ZeroDivisionError: division by zero\n"),
              "exit_code": 1,
          },
      ])
def coding_debug_code(
    ctx: ToolContext,
    source_code: str,
    stdout: str,
    stderr: str,
    exit_code: int,
    language: Annotated[LanguageName | None, Field(description="Default: detected.")] = None,
    max_retries: Annotated[int, Field(ge=1, le=10)] = 3,
    stdin: StdinArg = "",
    timeout: TimeoutArg = 30,
) -> Result[DebugOutput]:
    """Diagnose a failed run from its output; with a model configured, also fixes proposed and tried in the
    sandbox, up to max_retries."""
    if not source_code.strip():
        return Result.fail(ErrorKind.INVALID_INPUT, "source_code is empty", "Pass the code that failed.")
    lang = language or detect_language(source_code, stderr)
    found = diagnose(lang, stderr, stdout, exit_code)
    diagnosis = DiagnosisOutput(**vars(found))
    settings = ctx.services.get(CodingSettings)
    profile = settings.model_profile()
    if profile is None:
        return Result.success(DebugOutput(
            success=False, fixed_code=None, diagnosis=diagnosis, patches_attempted=0, patch_description="",
            verification=VerificationOutput(tests_passed=False), error=NO_MODEL))
    runtime = runtime_of(ctx.services)

    def verify(candidate: str) -> Attempt:
        ran = execute_proxied(ctx, runtime, lang, candidate, stdin, Limits(timeout_s=timeout))
        return Attempt(candidate, "", ran.status.value, ran.stdout, ran.stderr, ran.exit_code)

    def report(number: int, attempt: Attempt) -> None:
        ctx.progress(number, max_retries, f"attempt {number}: {attempt.status}")

    def ask(messages: list[dict[str, str]]) -> str:
        return ask_text_sync(profile, list(messages), api_key=settings.model_api_key or "not-needed")

    fixed = repair(ask, verify, lang, source_code, stderr, stdout,
                   found, max_retries, report)
    last = fixed.attempts[-1] if fixed.attempts else None
    verification = VerificationOutput(tests_passed=fixed.success, status=last.status if last else "",
                                      stdout=last.stdout if last else "", stderr=last.stderr if last else "")
    return Result.success(DebugOutput(
        success=fixed.success, fixed_code=fixed.fixed_code, diagnosis=diagnosis,
        patches_attempted=len(fixed.attempts), patch_description=fixed.description, verification=verification,
        attempts=[AttemptOutput(description=a.description, status=a.status, exit_code=a.exit_code,
                                stderr=a.stderr[-2000:]) for a in fixed.attempts],
        model=settings.model, error=None if fixed.success else f"Debugging failed: {fixed.error}"))
