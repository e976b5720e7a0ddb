"""Languages in Docker: compile and run in one container from the language's official image.

Used by ``coding_run_in_docker`` and by ``coding_execute_code`` when Docker is the chosen
backend. The source is bound read-only at ``/code``, copied into the container's tmpfs
``/work`` and built there; a failed compile exits with :data:`COMPILE_FAILED` so it is
reported as a compile error, not as the program's failure.
"""

from __future__ import annotations

import os
import shlex
import shutil
import tempfile
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from codeward.engines.execution.languages import BY_NAME, CODE_DIR, Language, java_main_class
from codeward.engines.sandbox import Bind, SandboxRequest, Status
from codeward.engines.sandbox.bwrap import PRIVATE_WORKDIR

if TYPE_CHECKING:
    from codeward.engines.execution.docker_pool import DockerWarmPool
    from codeward.engines.sandbox.docker import ContainerResult

COMPILE_FAILED = 97


def docker_command(spec: Language, main: str, heap_mb: int) -> list[str]:
    """``sh -c`` running the language's compile and run steps inside ``/work``."""

    def words(argv: tuple[str, ...]) -> str:
        out = []
        for index, word in enumerate(argv):
            word = word.replace("{main}", main).replace("{heap}", str(heap_mb)).replace(CODE_DIR, PRIVATE_WORKDIR)
            if index == 0 and not word.startswith(PRIVATE_WORKDIR + "/"):
                word = os.path.basename(word)  # the image's toolchain, found on its PATH; a built program stays put
            out.append(shlex.quote(word))
        return " ".join(out)

    script = f"cp -r {CODE_DIR}/. {PRIVATE_WORKDIR}/ && cd {PRIVATE_WORKDIR} && "
    if spec.compile is not None:
        script += f"{{ {words(spec.compile)} || exit {COMPILE_FAILED}; }} && "
    script += "exec " + words(spec.run)
    return ["sh", "-c", script]


def run_code_in_docker(
    sandbox: Any, language: str, code: str, stdin: str, *, image: str | None = None,
    environment: Mapping[str, str] | None = None, memory_limit: str | None = None, cpu_limit: float = 1.0,
    network: bool = False, timeout_s: float = 30.0, memory_mb: int | None = None,
) -> ContainerResult:
    """Write the source to a temp dir, bind it, and run the language's command in a container."""
    spec = BY_NAME[language]
    main = java_main_class(code) if language == "java" else "main"
    build = tempfile.mkdtemp(prefix="codeward-docker-")
    try:
        path = os.path.join(build, spec.source.replace("{main}", main))
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(code)
        os.chmod(build, 0o755)
        os.chmod(path, 0o644)
        memory = memory_mb or spec.memory_mb
        request = SandboxRequest(
            argv=docker_command(spec, main, max(32, memory // 2)), stdin=stdin, env=dict(environment or {}),
            ro_binds=[Bind(build, CODE_DIR)], network=network, timeout_s=timeout_s, memory_mb=memory,
            max_processes=max(spec.max_processes, spec.compile_max_processes),
        )
        outcome: ContainerResult = sandbox.run_container(request, image or spec.docker_image, cpu_limit, memory_limit)
    finally:
        shutil.rmtree(build, ignore_errors=True)
    result = outcome.result
    if spec.compile is not None and result.exit_code == COMPILE_FAILED:
        result.status = Status.ERROR
        result.error_message = "compilation failed; the compiler's messages are in stderr"
    return outcome


def warm_python_request(stdin: str, timeout_s: float, memory_mb: int | None = None) -> SandboxRequest:
    """A Python run for the Docker warm pool: the program comes on standard input, nothing is bound."""
    from codeward.engines.execution.docker_pool import boot_argv

    spec = BY_NAME["python"]
    return SandboxRequest(argv=boot_argv(), stdin=stdin, timeout_s=timeout_s, memory_mb=memory_mb or spec.memory_mb,
                          max_processes=spec.max_processes)


def run_python_warm(pool: DockerWarmPool, code: str, stdin: str, timeout_s: float) -> ContainerResult | None:
    """``code`` in one of the pool's started containers; None when none is ready (the caller runs it cold)."""
    return pool.run(code, warm_python_request(stdin, timeout_s))
