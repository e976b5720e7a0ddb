"""What a language server may see and do: the project read-only, secrets covered, no network, limits.

Language servers run project code or programs the project names — tsserver loads the plugins
``tsconfig.json`` lists (and a project's own ``node_modules/typescript``), gopls runs ``go list``
(and cgo's compiler), clangd reads ``.clangd`` and ``compile_commands.json``, pyright runs the
interpreter a project's configuration points at. So each server runs in the sandbox, started
once and kept: the workspace roots shown read-only at their own paths (a server never writes the
project; codeward applies its edits through the gate), every secret the file tools refuse covered
by an empty stand-in, the server's own install and toolchain read-only, a private ``/tmp`` for
caches, no network, and the memory, process and file limits of ``[lsp]``.

A server runs only where the sandbox isolates; with no isolating backend the navigation tools
answer from the index and say why (never a silent downgrade to a host process).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from codeward.coding.sandbox.model import SandboxRequest
from codeward.coding.sandbox.runner import Launch, StartableSandbox, terminate
from codeward.lsp.servers import Located
from codeward.workspace import Workspace, secret_paths

SERVER_CPU_SECONDS = 4 * 3600
"""CPU time a server may use over its life (it idles most of it); past it the kernel stops it and the
next call restarts it."""
SERVER_PROCESSES = 256
"""Tasks (processes and threads) of one server: node, Go and clangd each run a few dozen threads."""
SERVER_OPEN_FILES = 4096
SERVER_SCRATCH_MB = 512
"""The private /tmp: Go's build cache, clangd's preambles, npm's and pyright's caches."""


class NoIsolation(Exception):
    """No sandbox backend that isolates is available; the message says what to install."""


@dataclass
class Boxed:
    """A server process started in the sandbox, and what releasing it takes."""

    proc: subprocess.Popen[bytes]
    launch: Launch
    backend: str
    hidden: list[str] = field(default_factory=list)


def server_request(located: Located, root: Path, workspace: Workspace, memory_mb: int,
                   extra_env: dict[str, str] | None = None) -> SandboxRequest:
    """The sandbox request for one server over ``root``."""
    hidden, _complete = secret_paths(workspace)
    covered = [str(p) for p in workspace.private_dirs if p.exists()]
    covered += [str(p) for p in hidden if not any(p.is_relative_to(d) for d in workspace.private_dirs)]
    shown = sorted({str(r) for r in workspace.roots} | {str(p) for p in located.binds})
    env = {"XDG_CACHE_HOME": "/tmp/.cache", "NODE_OPTIONS": "", **located.env, **(extra_env or {})}
    return SandboxRequest(
        argv=list(located.argv), env=env, workdir=str(root), ro_binds=shown, hidden=covered,
        network=False, timeout_s=float(SERVER_CPU_SECONDS), cpu_seconds=SERVER_CPU_SECONDS,
        memory_mb=memory_mb, max_processes=SERVER_PROCESSES, open_files=SERVER_OPEN_FILES,
        scratch_mb=SERVER_SCRATCH_MB, file_size_mb=256,
    )


def start_boxed(sandbox: StartableSandbox, request: SandboxRequest) -> Boxed:
    """Start the server; ``OSError`` when the sandbox cannot start it."""
    if not sandbox.isolated:
        raise NoIsolation(f"the {sandbox.name} backend does not isolate: language servers run project code and "
                          "run only in an isolating sandbox (install bubblewrap)")
    proc, launch = sandbox.start(request)
    return Boxed(proc, launch, sandbox.name, [str(item) for item in request.hidden])


def stop_boxed(boxed: Boxed) -> None:
    """Kill the server's whole process tree and release its sandbox."""
    terminate(boxed.proc, boxed.launch)
