"""Every program codeward starts on project content goes through the one sandbox entry point
(``codeward.contained``): a new executor cannot forget it.

Read from the source (every module's syntax tree): the modules that start a program themselves
are exactly the ones listed here, each for a reason ``docs/security.md`` states — the sandbox's
own backends, and the few programs that run on the host because nothing of what they read or run
can come from the agent. A new ``subprocess.Popen`` anywhere else fails this test: run the
program through :class:`codeward.contained.ProjectSandbox` (or, if it truly reads nothing the
agent writes, add it here and to the table in docs/security.md, with the reason).
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "src" / "codeward"
SECURITY_DOC = REPO / "docs" / "security.md"

STARTS_PROGRAMS = {
    "coding/sandbox/runner.py": "the sandbox: starts every backend's launch (the one spawn)",
    "coding/sandbox/bwrap.py": "the sandbox: bubblewrap itself, and `bwrap --version`",
    "coding/sandbox/process.py": "the sandbox: the process backend, when the operator chose it",
    "coding/sandbox/network.py": "the sandbox: slirp4netns for a run the operator gives the network",
    "coding/sandbox/doctor.py": "`bwrap --version` for codeward doctor",
    "code/ctags_tags.py": "ctags with --options=NONE",
    "code/ripgrep.py": "ripgrep with --no-config",
    "git/runner.py": "git, hardened",
    "coding/languages.py": "the toolchains' --version, once",
    "registry/tool_env.py": "pip installing a registry tool's signed pins (wheels only)",
    "shell/host.py": "[shell] sandbox = false: the operator's unsandboxed shell",
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


def starts_a_program(call: ast.Call) -> bool:
    func = call.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        owner, name = func.value.id, func.attr
        return ((owner == "subprocess" and name in SUBPROCESS_CALLS) or (owner == "os" and name in OS_CALLS)
                or (owner in ("asyncio", "anyio") and name in ASYNC_CALLS))
    return isinstance(func, ast.Name) and func.id in LAUNCHERS


def modules_starting_programs() -> set[str]:
    found: set[str] = set()
    for path in sorted(SOURCE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        if any(isinstance(node, ast.Call) and starts_a_program(node) for node in ast.walk(tree)):
            found.add(path.relative_to(SOURCE).as_posix())
    return found


def test_only_the_listed_modules_start_programs() -> None:
    found = modules_starting_programs()
    unlisted = sorted(found - set(STARTS_PROGRAMS))
    assert not unlisted, (f"{unlisted} start programs themselves: run them through codeward.contained."
                          "ProjectSandbox, or, when nothing they read can come from the agent, list them (with the "
                          "reason) here and in docs/security.md")
    assert not set(STARTS_PROGRAMS) - found, "a listed module no longer starts a program: drop it from the list"


def test_security_doc_names_every_program_that_runs_on_the_host() -> None:
    text = SECURITY_DOC.read_text(encoding="utf-8")
    missing = [module for module in STARTS_PROGRAMS if f"`{module}`" not in text]
    assert not missing, f"docs/security.md does not name {missing} in its table of what runs on the host"


def test_the_guard_sees_a_program_started_outside_the_list(tmp_path: Path) -> None:
    tree = ast.parse("import subprocess, os\nsubprocess.run(['ruff', 'check'])\nos.system('x')\n"
                     "spawn(launch)\nshutil.which('x')\nsubprocess.PIPE\n")
    starts = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and starts_a_program(node)]
    assert len(starts) == 3  # run, system, spawn — not which, not PIPE
