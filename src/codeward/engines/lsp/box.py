"""What a language server may see and do: the project read-only, secrets covered, no network, limits.

Language servers run project code or programs the project names — tsserver loads the plugins
``tsconfig.json`` lists (and a project's own ``node_modules/typescript``), gopls runs ``go list``
(and cgo's compiler), clangd reads ``.clangd`` and ``compile_commands.json``, pyright runs the
interpreter a project's configuration points at. So each server runs in the project's sandbox,
through the one entry point every program on project content takes
(:class:`codeward.engines.contained.project_sandbox.ProjectSandbox`, executor "language servers", read-only): the
server's backend choice, failing closed; the workspace roots read-only at their own paths (a
server never writes the project; codeward applies its edits through the gate); every secret the
file tools refuse covered by an empty stand-in; the server's own install and toolchain
read-only; a private ``/tmp`` for caches within the disk cap; no network; the memory, process
and file limits of ``[lsp]``. Started once and kept, it outlives the call that started it.

With no isolating backend no server starts: the navigation tools answer from the index and
say why, with the sandbox's refusal. Only the operator's ``[sandbox] backend = "process"`` runs
servers as host processes, as it does every program on project content; every answer from such
a server then says it was not isolated.
"""

from __future__ import annotations

from pathlib import Path

from codeward.engines.contained.project_sandbox import Program, ProjectSandbox, Started
from codeward.engines.lsp.servers import Located
from codeward.engines.sandbox.choice import SandboxRefused
from codeward.kernel.result import Result

NOT_ISOLATED_NOTE = ("[{server} runs NOT isolated ([sandbox] backend = \"process\" in the operator's configuration): "
                     "it sees the host and the project's secrets, and runs what the project names on the host]")
SERVER_CPU_SECONDS = 4 * 3600
"""CPU time a server may use over its life (it idles most of it); past it the kernel stops it and the
next call restarts it."""
SERVER_PROCESSES = 256
"""Tasks (processes and threads) of one server: node, Go and clangd each run a few dozen threads."""
SERVER_OPEN_FILES = 4096
SERVER_SCRATCH_MB = 512
"""The private /tmp: Go's build cache, clangd's preambles, npm's and pyright's caches (at most half
of ``[sandbox] disk_mb``)."""


class NoIsolation(Exception):
    """No sandbox backend that isolates is available; the message says what to install."""


def server_program(located: Located, root: Path, memory_mb: int) -> Program:
    """One server over ``root``, as the program its box starts."""
    env = {"XDG_CACHE_HOME": "/tmp/.cache", "NODE_OPTIONS": "", **located.env}
    return Program(
        argv=list(located.argv), env=env, workdir=str(root), ro_binds=sorted({str(p) for p in located.binds}),
        network=False, timeout_s=float(SERVER_CPU_SECONDS), cpu_seconds=SERVER_CPU_SECONDS, memory_mb=memory_mb,
        max_processes=SERVER_PROCESSES, open_files=SERVER_OPEN_FILES, scratch_mb=SERVER_SCRATCH_MB,
        file_size_mb=256, report_progress=False)


def start_boxed(opened: Result[ProjectSandbox | None], program: Program) -> Started:
    """Start the server in its box; :class:`NoIsolation` when the sandbox refused (it names what to
    install), ``OSError`` when it cannot start the server."""
    if not opened.ok or opened.data is None:
        refusal = opened.errors[0]
        raise NoIsolation(f"{refusal.message}. {refusal.hint}".strip())
    try:
        return opened.data.start(program)
    except SandboxRefused as refused:
        raise NoIsolation(f"{refused} ({refused.hint})") from refused
