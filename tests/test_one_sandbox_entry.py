"""Every program codeward starts on project content goes through the one sandbox entry point
(``codeward.engines.contained.project_sandbox``): a new executor cannot forget it.

Read from the source (every module's syntax tree): the modules that start a program themselves
are exactly the ones listed here, each for a reason ``docs/security.md`` states — the sandbox's
own backends, and the few programs that run on the host because nothing of what they read or run
can come from the agent. A new ``subprocess.Popen`` anywhere else fails this test: run the
program through :class:`codeward.engines.contained.project_sandbox.ProjectSandbox` (or, if it truly reads nothing the
agent writes, add it here and to the table in docs/security.md, with the reason).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Set as AbstractSet
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "src" / "codeward"
SECURITY_DOC = REPO / "docs" / "security.md"

STARTS_PROGRAMS = {
    "engines/sandbox/runner.py": "the sandbox: starts every backend's launch (the one spawn)",
    "engines/sandbox/bwrap.py": "the sandbox: bubblewrap itself, and `bwrap --version`",
    "engines/sandbox/process.py": "the sandbox: the process backend, when the operator chose it",
    "engines/sandbox/network.py": "the sandbox: slirp4netns for a run the operator gives the network",
    "engines/sandbox/doctor.py": "`bwrap --version` for codeward doctor",
    "engines/code_intel/ctags_tags.py": "ctags with --options=NONE",
    "engines/files/ripgrep.py": "ripgrep with --no-config",
    "engines/git/runner.py": "git, hardened",
    "engines/execution/languages.py": "the toolchains' --version, once",
    "engines/registry/tool_env.py": "pip installing a registry tool's signed pins (wheels only)",
    "engines/shell/host.py": "[shell] sandbox = false: the operator's unsandboxed shell",
    "gateway/stdio_client.py": "the upstream MCP servers of the operator's configuration",
    "gateway/transports.py": "the upstream MCP servers of the operator's configuration (the SDK's client)",
}
"""Module → why it may start a program itself (see docs/security.md, "What runs on the host")."""

SUBPROCESS_CALLS = frozenset({"Popen", "run", "call", "check_call", "check_output", "getoutput", "getstatusoutput"})
OS_CALLS = frozenset({"system", "popen", "posix_spawn", "posix_spawnp", "execv", "execve", "execvp", "execvpe",
                      "execl", "execle", "execlp", "execlpe", "spawnv", "spawnve", "spawnvp", "spawnvpe", "spawnl",
                      "spawnle", "spawnlp", "spawnlpe"})
ASYNC_CALLS = frozenset({"create_subprocess_exec", "create_subprocess_shell", "open_process", "run_process"})
LAUNCHERS = frozenset({"spawn", "spawn_or_release", "stdio_client", "fast_stdio_client"})
"""codeward's own process starters and the SDK's: calling them starts a program too."""


FORBIDDEN = {"subprocess": SUBPROCESS_CALLS, "os": OS_CALLS, "asyncio": ASYNC_CALLS, "anyio": ASYNC_CALLS}
MAY_START = re.compile(r"subprocess|spawn|stdio_client|_process\b|\bos\.(system|popen|exec|posix_spawn)|from os import")
"""A module can start a program only if its text matches (only those are parsed: the check stays cheap)."""


def imported_starters(tree: ast.AST) -> set[str]:
    """Names bound by ``from subprocess import Popen`` (and the like) in a module."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in FORBIDDEN:
            names.update(alias.asname or alias.name for alias in node.names
                         if alias.name in FORBIDDEN[node.module])
    return names


def starts_a_program(call: ast.Call, imported: AbstractSet[str] = frozenset()) -> bool:
    func = call.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return func.attr in FORBIDDEN.get(func.value.id, ())
    return isinstance(func, ast.Name) and (func.id in LAUNCHERS or func.id in imported)


def modules_starting_programs() -> set[str]:
    found: set[str] = set()
    for path in sorted(SOURCE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if not MAY_START.search(text):
            continue
        tree = ast.parse(text, filename=str(path))
        imported = imported_starters(tree)
        if any(isinstance(node, ast.Call) and starts_a_program(node, imported) for node in ast.walk(tree)):
            found.add(path.relative_to(SOURCE).as_posix())
    return found


def test_only_the_listed_modules_start_programs() -> None:
    found = modules_starting_programs()
    unlisted = sorted(found - set(STARTS_PROGRAMS))
    assert not unlisted, (f"{unlisted} start programs themselves: run them through "
                          "codeward.engines.contained.project_sandbox.ProjectSandbox, or, when nothing they read can "
                          "come from the agent, list them (with the reason) here and in docs/security.md")
    assert not set(STARTS_PROGRAMS) - found, "a listed module no longer starts a program: drop it from the list"


def test_security_doc_names_every_program_that_runs_on_the_host() -> None:
    text = SECURITY_DOC.read_text(encoding="utf-8")
    missing = [module for module in STARTS_PROGRAMS if f"`{module}`" not in text]
    assert not missing, f"docs/security.md does not name {missing} in its table of what runs on the host"


def test_the_guard_sees_a_program_started_outside_the_list() -> None:
    tree = ast.parse("import subprocess, os\nfrom subprocess import Popen as P\nsubprocess.run(['ruff', 'check'])\n"
                     "os.system('x')\nspawn(launch)\nP(['x'])\nshutil.which('x')\nsubprocess.PIPE\nos.path.join('a')\n")
    imported = imported_starters(tree)
    starts = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and starts_a_program(node, imported)]
    assert len(starts) == 4  # run, system, spawn, the imported Popen — not which, not PIPE, not os.path
