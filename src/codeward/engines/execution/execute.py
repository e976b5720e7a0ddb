"""Execute source code in one of the supported languages: compile (when the language needs
it) in one sandbox, run in another, report both.

The source lives in a private build directory, bound at ``/code`` — read-write for the
compiler, read-only for the program, which starts in an empty writable ``/work``. Between
the two steps the build directory is cleaned of anything the compiler should not leave
(links, special files, set-uid bits). Python without a session uses the warm pool; with a
``session_id`` it runs in that session's persistent interpreter.

With :class:`ProxiedNetwork` (the operator allows code some domains, ``[network.code]``) the
program runs in the client's loopback-only namespace with the egress proxy's variables: fresh
(compiled and run), never in the warm pool or a session, whose sandboxes were started without it.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from codeward.config.coding import LANGUAGE_NAMES
from codeward.engines.execution.languages import BY_NAME, CODE_DIR, Language, Toolchain, docker_image, java_main_class
from codeward.engines.execution.runtime import CodingRuntime
from codeward.engines.execution.sessions import SESSION_ID
from codeward.engines.sandbox import Bind, Limit, SandboxRequest, SandboxResult, Status
from codeward.engines.sandbox.choice import SandboxRefused
from codeward.engines.sandbox.runner import RunObserver

if TYPE_CHECKING:
    from codeward.engines.sandbox.shared_net import SharedNetwork

MAX_CODE_BYTES = 1_000_000
MAX_STDIN_BYTES = 10_000_000
COMPILE_TIMEOUT_S = 120.0
MIN_TIMEOUT_S, MAX_TIMEOUT_S = 1, 300
PROXY_ONLY_BWRAP = ("network: none for this run: the egress proxy ([network.code]) serves runs in bwrap only, and "
                    "this backend is not bwrap")


@dataclass
class Execution:
    """The outcome of one execution, in the seed's fields plus how it was contained."""

    language: str
    status: Status
    stdout: str = ""
    stderr: str = ""
    exit_code: int | None = None
    execution_time: float = 0.0
    error_message: str | None = None
    backend: str = ""
    isolated: bool = False
    compile_time: float | None = None
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    session_id: str | None = None
    warm: bool = False
    peak_memory_mb: float | None = None
    limit_hit: str | None = None
    notes: list[str] = field(default_factory=list)
    limits: list[str] = field(default_factory=list)
    unenforced_limits: list[str] = field(default_factory=list)

    @classmethod
    def setup_error(cls, language: str, message: str, backend: str = "", isolated: bool = False) -> Execution:
        return cls(language, Status.SETUP_ERROR, error_message=message, backend=backend, isolated=isolated)


@dataclass(frozen=True)
class Limits:
    """Per-call limits a caller may set; ``None`` takes the language's default."""

    timeout_s: float = 30.0
    memory_mb: int | None = None
    network: bool = False


@dataclass(frozen=True)
class ProxiedNetwork:
    """The way out a run gets by allowlist: the client's namespace (the proxy listens there) and the
    variables carrying the run's proxy credential."""

    network: SharedNetwork
    env: Mapping[str, str]


def execute(
    runtime: CodingRuntime,
    language: str,
    code: str,
    stdin: str = "",
    limits: Limits | None = None,
    session_id: str | None = None,
    observer: RunObserver | None = None,
    client: str | None = "",
    proxied: ProxiedNetwork | None = None,
) -> Execution:
    """Run ``code``; never raises for anything the code does (see :class:`Execution`).

    ``client`` says whose sessions ``session_id`` names (see :meth:`SessionStore.run`); ``proxied`` gives
    the run the egress proxy (ignored with ``limits.network``, the whole network).
    """
    limits = limits or Limits()
    problem = _check_input(language, code, stdin, limits, session_id)
    if problem is not None:
        return Execution.setup_error(language, problem)
    spec = BY_NAME[language]
    try:
        sandbox = runtime.sandbox()
    except SandboxRefused as refused:
        return Execution.setup_error(language, f"{refused} {refused.hint}")
    if limits.network:
        proxied = None
    if not hasattr(sandbox, "start"):  # Docker: the toolchain is the image's, not this machine's
        execution = _execute_in_docker(runtime, sandbox, docker_image(runtime.settings, language), language, code,
                                       stdin, limits)
        if proxied is not None:
            execution.notes.append(PROXY_ONLY_BWRAP)
        return execution
    toolchain = runtime.toolchain(language)
    if not toolchain.available:
        return Execution.setup_error(language, f"{language} is not available on this machine: {toolchain.reason}")
    notes = runtime.sandbox_notes
    request = _run_request(spec, toolchain, stdin, limits, code)
    if proxied is not None:
        if sandbox.name != "bwrap":
            notes.append(PROXY_ONLY_BWRAP)
        else:
            if session_id is not None:
                notes.append("session_id is ignored: with [network.code] domains allowed a run goes through the "
                             "egress proxy, which sessions (started before) do not have; this call ran fresh")
            request = replace(request, env={**request.env, **proxied.env}, shared_network=proxied.network,
                              run_as=proxied.network.run_as)
            return _compile_and_run(runtime, spec, toolchain, code, request, observer, notes)
    if session_id is not None:
        sessions = runtime.sessions() if language == "python" else None
        if sessions is not None and not limits.network:
            result, shown = sessions.run(session_id, code, request, client)
            return _from_result(language, result, notes, session_id=shown)
        notes.append(f"session_id is ignored for {language}: only python sessions (without network) keep "
                     "state; this call ran fresh")
    if language == "python" and not limits.network:
        pool = runtime.pool()
        if pool is not None:
            warm = pool.run(code, request, observer)
            if warm is not None:
                return _from_result(language, warm, notes, warm=True)
    return _compile_and_run(runtime, spec, toolchain, code, request, observer, notes)


def _execute_in_docker(runtime: CodingRuntime, sandbox: Any, image: str, language: str, code: str, stdin: str,
                       limits: Limits) -> Execution:
    """One run in the Docker backend: Python with the default limits in a started container of the warm
    pool when one is ready, anything else compiled and run in a fresh container of the language's image."""
    from codeward.engines.execution.docker_exec import run_code_in_docker, run_python_warm

    pool = runtime.docker_pool(sandbox, image) if language == "python" and limits.memory_mb is None \
        and not limits.network else None
    outcome = run_python_warm(pool, code, stdin, limits.timeout_s) if pool is not None else None
    warm = outcome is not None
    where = f"ran in a started container of the Docker warm pool (image {image}), removed after this run"
    if outcome is None:
        outcome = run_code_in_docker(sandbox, language, code, stdin, image=image, network=limits.network,
                                     timeout_s=limits.timeout_s, memory_mb=limits.memory_mb)
        where = f"ran in a throw-away container of the Docker image {image}"
    result: SandboxResult = outcome.result
    return Execution(
        language=language, status=result.status, stdout=result.stdout, stderr=result.stderr,
        exit_code=result.exit_code, execution_time=result.duration_s, error_message=result.error_message,
        backend=result.backend, isolated=result.isolated, stdout_truncated=result.stdout_truncated,
        stderr_truncated=result.stderr_truncated, peak_memory_mb=result.peak_memory_mb,
        limit_hit=result.limit_hit.value if result.limit_hit else None,
        notes=[where, *result.notes], warm=warm,
        limits=list(result.limits), unenforced_limits=list(result.unenforced_limits),
    )


def _check_input(language: str, code: str, stdin: str, limits: Limits, session_id: str | None) -> str | None:
    if language not in BY_NAME:
        return f"unknown language {language!r}; choose one of {', '.join(LANGUAGE_NAMES)}"
    if not code.strip():
        return "code is empty; pass the source code to run"
    if len(code.encode("utf-8", "surrogateescape")) > MAX_CODE_BYTES:
        return f"code is larger than {MAX_CODE_BYTES} bytes; run a smaller program or write it to files"
    if len(stdin.encode("utf-8", "surrogateescape")) > MAX_STDIN_BYTES:
        return f"stdin is larger than {MAX_STDIN_BYTES} bytes"
    if not MIN_TIMEOUT_S <= limits.timeout_s <= MAX_TIMEOUT_S:
        return f"timeout must be between {MIN_TIMEOUT_S} and {MAX_TIMEOUT_S} seconds, got {limits.timeout_s:g}"
    if limits.memory_mb is not None and not 32 <= limits.memory_mb <= 8192:
        return f"memory_mb must be between 32 and 8192, got {limits.memory_mb}"
    if session_id is not None and not SESSION_ID.match(session_id):
        return (f"session_id {session_id!r} is not valid: use 1-64 letters, digits, '_', '-', '.' or ':'")
    return None


def scratch_for(memory_mb: int) -> int:
    """Size of each writable tmpfs (/tmp, /work): a quarter of the memory limit, so a full disk
    shows as "no space left" before the files (which live in memory) exhaust the memory."""
    return max(16, memory_mb // 4)


def _substitute(argv: tuple[str, ...], main: str, heap_mb: int) -> list[str]:
    return [word.replace("{main}", main).replace("{heap}", str(heap_mb)) for word in argv]


def _heap(spec: Language, memory_mb: int) -> int:
    """The heap a runtime is told to use: room left for its own code, stacks and buffers."""
    return max(32, memory_mb // 2 if spec.name == "java" else memory_mb * 3 // 4)


def _run_request(spec: Language, toolchain: Toolchain, stdin: str, limits: Limits, code: str) -> SandboxRequest:
    memory = limits.memory_mb or spec.memory_mb
    main = java_main_class(code) if spec.name == "java" else "main"
    binds: list[Bind] = list(toolchain.binds) if spec.run_needs_toolchain else []
    return SandboxRequest(
        argv=_substitute(spec.run, main, _heap(spec, memory)), stdin=stdin, env=dict(spec.env),
        ro_binds=binds, network=limits.network, timeout_s=limits.timeout_s, memory_mb=memory,
        max_processes=spec.max_processes, scratch_mb=scratch_for(memory),
        address_space_mb=max(2 * memory, spec.address_space_mb),
    )


def _compile_and_run(
    runtime: CodingRuntime, spec: Language, toolchain: Toolchain, code: str, request: SandboxRequest,
    observer: RunObserver | None, notes: list[str],
) -> Execution:
    sandbox = runtime.startable()
    assert sandbox is not None
    build = tempfile.mkdtemp(prefix="codeward-build-")
    try:
        main = java_main_class(code) if spec.name == "java" else "main"
        source = os.path.join(build, spec.source.replace("{main}", main))
        with open(source, "w", encoding="utf-8", errors="surrogateescape") as handle:
            handle.write(code)
        os.chmod(source, 0o644)
        compile_time: float | None = None
        if spec.compile is not None:
            compiled = _compile(sandbox, spec, toolchain, main, build, request)
            compile_time = compiled.duration_s
            if compiled.status is not Status.SUCCESS:
                return _compile_failure(spec, compiled, notes)
        _sanitize(build)
        os.chmod(build, 0o755)
        run = replace(request, ro_binds=(*request.ro_binds, Bind(build, CODE_DIR)))
        proc, launch = sandbox.start(run)
        result = sandbox.finish(proc, launch, run, run.stdin_bytes(), None, observer)
    except OSError as exc:
        return Execution.setup_error(spec.name, f"could not prepare the run: {exc}", sandbox.name, sandbox.isolated)
    finally:
        shutil.rmtree(build, ignore_errors=True)
    execution = _from_result(spec.name, result, notes)
    execution.compile_time = compile_time
    return execution


def _compile(
    sandbox: object, spec: Language, toolchain: Toolchain, main: str, build: str, run: SandboxRequest
) -> SandboxResult:
    assert spec.compile is not None
    request = SandboxRequest(
        argv=_substitute(spec.compile, main, 0), env=dict(spec.env), workdir=CODE_DIR,
        rw_binds=[Bind(build, CODE_DIR)], ro_binds=toolchain.binds, timeout_s=COMPILE_TIMEOUT_S,
        memory_mb=spec.compile_memory_mb, max_processes=spec.compile_max_processes, file_size_mb=512,
        scratch_mb=512, open_files=1024,
    )
    return sandbox.run(request)  # type: ignore[attr-defined, no-any-return]


def _compile_failure(spec: Language, compiled: SandboxResult, notes: list[str]) -> Execution:
    execution = _from_result(spec.name, compiled, notes)
    execution.compile_time = compiled.duration_s
    execution.execution_time = 0.0
    if compiled.status is Status.TIMEOUT:
        execution.error_message = f"compilation timed out after {COMPILE_TIMEOUT_S:g} s"
    elif compiled.status is Status.ERROR:
        first = next((line for line in compiled.stderr.splitlines() if "error" in line.lower()), "")
        detail = f": {first.strip()}" if first else ""
        execution.error_message = (f"compilation failed (exit status {compiled.exit_code}){detail}. "
                                   "The compiler's messages are in stderr; fix the code and run again.")
        if compiled.limit_hit is Limit.MEMORY:
            execution.error_message = f"compilation ran out of memory ({spec.compile_memory_mb} MB)"
    execution.notes.append("the program was not run because it did not compile")
    return execution


def _sanitize(directory: str) -> None:
    """Leave only plain files and directories, without set-uid/set-gid/world-write bits."""
    for current, dirs, files in os.walk(directory):
        for name in dirs + files:
            path = os.path.join(current, name)
            info = os.lstat(path)
            if stat.S_ISDIR(info.st_mode):
                os.chmod(path, 0o755)
            elif stat.S_ISREG(info.st_mode):
                os.chmod(path, 0o755 if info.st_mode & 0o111 else 0o644)
            else:
                os.unlink(path)
        dirs[:] = [d for d in dirs if os.path.isdir(os.path.join(current, d))
                   and not os.path.islink(os.path.join(current, d))]


def _from_result(
    language: str, result: SandboxResult, notes: list[str], *, warm: bool = False, session_id: str | None = None
) -> Execution:
    return Execution(
        language=language, status=result.status, stdout=result.stdout, stderr=result.stderr,
        exit_code=result.exit_code, execution_time=result.duration_s, error_message=result.error_message,
        backend=result.backend, isolated=result.isolated, stdout_truncated=result.stdout_truncated,
        stderr_truncated=result.stderr_truncated, session_id=session_id, warm=warm,
        peak_memory_mb=result.peak_memory_mb, limit_hit=result.limit_hit.value if result.limit_hit else None,
        notes=list(dict.fromkeys([*notes, *result.notes])), limits=list(result.limits),
        unenforced_limits=list(result.unenforced_limits),
    )
