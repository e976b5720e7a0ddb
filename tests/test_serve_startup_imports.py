"""What a server leaves for the first call that needs it stays out of its start-up.

Start-up is what an agent waits for before its first turn, and a gateway waits for it once per
upstream; each of these modules was imported at start once and was moved to first use (each
measured in ``docs/performance.md``). A probe wraps ``python -m codeward serve`` (the command a
client starts), a session through the official client does what every client does first
(``initialize``, ``tools/list``), and the probe reports at exit every module the process imported:
a start after the first, which saved the tool listing.
A change that imports one of them at start again fails here, not only in a bench.

An import inside a function body is such a deferral, and nothing else: every one in ``src/`` must
name its module here (:data:`LEFT_FOR_FIRST_USE`, or :data:`DEFERRED` with the start-up it is left
out of), and that start-up is checked not to load it. An import hidden in a function body to dodge
a layer is not a deferral (the layer contract, tests/test_layers.py, counts it anyway).
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from mcp import Client

from tests.conftest import REPO
from tests.serve_probe import RUN_AS_PYTHON_M_CODEWARD, probed_serve

PROBE = textwrap.dedent("""
    import atexit, json, os, runpy, sys

    def report():
        with open(os.environ["PROBE_REPORT"], "w") as out:
            json.dump(sorted(sys.modules), out)

    atexit.register(report)
""") + RUN_AS_PYTHON_M_CODEWARD

LEFT_FOR_FIRST_USE = {
    "codeward.kernel.providers": "the resource and prompt records: the first resource or prompt listed",
    "codeward.engines.registry.documents": "the registry's documents: the first registry prompt or resource",
    "codeward.engines.registry.items": "the registry's items: the first registry prompt or resource",
    "codeward.engines.registry.signing": "signatures: the first registry tool checked",
    "codeward.engines.registry.index": "the registry's index: the first search",
    "codeward.engines.registry.service": "the registry service: its first use",
    "codeward.engines.checkpoints.journal": "the checkpoint journal: the first call that may write",
    "codeward.approval.policy": "the approval policy: only a stack with an approver builds one",
    "codeward.apps.client_setup.banner": "a client's launch line: only a banner prints it, over a pipe there is none",
    "codeward.apps.control.plane": "the control plane: only --control",
    "anyio.from_thread": "the first call that reports progress or asks the client",
    "pathspec": "the first blacklist check or .gitignore read",
    "tomllib": "the first configuration file read (this project has none)",
    "uvloop": "the fast HTTP stack: only --http",
    "httptools": "the fast HTTP stack: only --http",
    "tree_sitter": "the first C/C++ or other tree-sitter tool call",
    "sqlite3": "the first index or registry query",
    "rich": "the terminal's rendering: the agent shell, never a server",
}

SERVE, CALL, HELP = "a stdio serve", "codeward call", "the whole command line (--help, shell completion)"
ENTRY = "the entry point until its stop handlers are in place (codeward.__main__ imported)"
DEFERRED: dict[str, tuple[str, str]] = {
    # left out of the entry point's import: a Ctrl-C or SIGTERM while the command line imports exits cleanly
    "codeward.apps.cli": (ENTRY, "the command line: imported once SIGTERM and SIGINT have their handlers"),
    # left out of a stdio serve's start (checked with LEFT_FOR_FIRST_USE above)
    "codeward.approval.askers": (SERVE, "who is asked: a command with someone to ask (--control, gateway, call)"),
    "codeward.approval.previews": (SERVE, "what a person is shown: the first write of a host-run path"),
    "codeward.approval.registry_items": (SERVE, "registry approvals: only a stack with an approver"),
    "codeward.apps.cli.completion": (SERVE, "shell completion: only while a shell completes"),
    "codeward.apps.client_setup.launch": (SERVE, "this installation's command: only a banner prints it"),
    "codeward.engines.code_intel.outline_model": (SERVE, "tree-sitter outlines: the first file summary of code"),
    "codeward.engines.contained.secret_index": (SERVE, "the kept secret list (file events): the first program run"),
    "codeward.engines.sandbox.shared_net": (SERVE, "a client's shared loopback network: the first process started"),
    "codeward.engines.shell.processes": (SERVE, "long-running processes: the first process_start or shell run"),
    "codeward.engines.sandbox.egress_proxy": (SERVE, "the egress proxy (h11): a client's first run with [network] "
                                                     "allowed_domains (or codeward doctor's check)"),
    "codeward.engines.shell.log": (SERVE, "the run logs: the first run (the egress proxy's audit log)"),
    "codeward.engines.contained.project_sandbox": (SERVE, "the one entry point for programs: the first run "
                                                          "(or the sandbox line of a banner, not over a pipe)"),
    "codeward.engines.sandbox.doctor": (SERVE, "the machine's checks: codeward doctor, a banner's sandbox line"),
    "codeward.engines.sandbox.probe": (SERVE, "the backend probe: the first call that runs a program"),
    "codeward.engines.execution.docker_exec": (SERVE, "Docker: only a call that runs code in Docker"),
    "codeward.engines.execution.docker_pool": (SERVE, "Docker's warm pool: only a Python run in Docker"),
    "codeward.engines.llm.client": (SERVE, "the model client (openai): only a shell run asked to explain itself"),
    "codeward.engines.registry.http_primitive": (SERVE, "the registry's http_client primitive: its first run"),
    "codeward.engines.registry.served_content": (SERVE, "the registry's prompts and resources: the first asked"),
    "codeward.engines.sandbox.bwrap": (SERVE, "the sandbox probe: the first call that runs a program"),
    "codeward.engines.sandbox.docker": (SERVE, "the Docker backend (its SDK): only where Docker is chosen"),
    "codeward.engines.sandbox.process": (SERVE, "the plain-process backend: only where nothing else runs"),
    "codeward.engines.sandbox.runner": (SERVE, "a registry tool's install: its first run"),
    "codeward.gateway.config": (SERVE, "a server named on the command line: only --url"),
    "codeward.gateway.gateway": (SERVE, "upstream servers: only the gateway"),
    "codeward.gateway.stdio_client": (SERVE, "an upstream server over stdio: only the gateway"),
    "codeward.serving.file_content": (SERVE, "the files as resources: the first resource listed or read"),
    "codeward.serving.http_server": (SERVE, "the HTTP side (Starlette's app, uvicorn): only --http"),
    "codeward.serving.shared_state.approvals": (SERVE, "approvals any replica answers: only --http"),
    "codeward.serving.shared_state.redis_state": (SERVE, "Redis: only [state] url = redis://..."),
    "codeward.serving.shared_state.takeover": (SERVE, "finishing a dead replica's call: only shared state"),
    "codeward.serving.transport.http_head_bound": (SERVE, "httptools' protocol: only --http on the fast stack"),
    "codeward.serving.transport.http_token": (SERVE, "bearer tokens: only --http (and install-client)"),
    "codeward.tools.meta": (SERVE, "meta mode: only --meta (or an agent whose model's context is small)"),
    "codeward.tools.registry_tools": (SERVE, "a tool module: with its tools' first call"),
    # left out of a direct call (no server)
    "codeward.serving.server": (CALL, "the MCP server: only a command that serves"),
    "codeward.serving.transport.era_loop": (CALL, "the stdio transport: only a stdio server"),
    "codeward.serving.transport.stdio": (CALL, "the stdio transport: only a stdio server"),
    "codeward.serving.transport.stdio_drain": (CALL, "a stdio server's SIGTERM drain: only a stdio server"),
    "codeward.audit.log_lines": (CALL, "log lines as JSON: only a command that serves"),
    "codeward.serving.sdk_wire_models": (CALL, "deferring the SDK's wire models: only serve and gateway"),
    # a command's own work, left out of the command line every command builds first
    "codeward.apps.agent.budget": (HELP, "what a model is offered: only chat and ask"),
    "codeward.apps.agent.conversation": (HELP, "the agent: only chat and ask"),
    "codeward.apps.agent.history": (HELP, "saved chats: only chat"),
    "codeward.apps.agent.local_model": (HELP, "the local model (llama.cpp): only model serve"),
    "codeward.apps.agent.loop": (HELP, "the agent's tool loop: only ask"),
    "codeward.apps.agent.render": (HELP, "the agent's plain output: only ask"),
    "codeward.apps.agent.session": (HELP, "an agent session (the model client): only chat and ask"),
    "codeward.apps.agent.shell": (HELP, "the terminal chat (prompt_toolkit, rich): only chat"),
    "codeward.apps.agent.tracked": (HELP, "the files a chat tracks: only chat and ask"),
    "codeward.apps.cli.quiet_view": (HELP, "ask's quiet output: only ask -q"),
    "codeward.apps.agent.progress_lines": (HELP, "the agent's progress lines: only ask and chat"),
    "codeward.apps.client_setup.jsonc": (HELP, "client configs as JSONC (json-five): only install-client runs"),
    "codeward.apps.client_setup.config_file": (HELP, "client configs: only install-client runs"),
    "codeward.engines.code_intel.symbol_index": (HELP, "the symbol index: only index"),
    "codeward.engines.execution.debug": (HELP, "code execution: only run"),
    "codeward.engines.execution.execute": (HELP, "code execution: only run"),
    "codeward.engines.execution.runtime": (HELP, "code execution: only run"),
    "codeward.engines.registry.keys": (HELP, "signing keys (cryptography): only registry sign/keys"),
    "codeward.engines.registry.scaffold": (HELP, "a new registry item: only registry new"),
    "codeward.engines.registry.settings": (HELP, "the user's key store: only registry keys"),
    "codeward.engines.sandbox.choice": (HELP, "the backend choice: only doctor (a server makes it at its first run)"),
    "codeward.engines.review.runner": (HELP, "the analyzers: only review runs them"),
    "codeward.engines.review.service": (HELP, "the review: only review runs it"),
    "codeward.engines.sandbox": (HELP, "the sandbox: only run"),
    "codeward.gateway.upstream": (HELP, "upstream connections: only servers"),
    "codeward.serving.shared_state": (HELP, "shared state: only servers, with [state] url"),
}
"""Every other module imported inside a function body: the start-up it is left out of, and why."""


@pytest.mark.anyio
async def test_a_stdio_serve_answers_tools_list_without_what_it_leaves_for_first_use(tmp_path: Path) -> None:
    named = [name for name in LEFT_FOR_FIRST_USE if importlib.util.find_spec(name) is None]
    assert named == [], "a module named here does not exist (renamed?): the check would pass for nothing"
    params, report = probed_serve(tmp_path, PROBE)
    for _ in range(2):  # the first start saves the listing (a cold start imports every tool module)
        async with Client(params) as client:
            assert "read_file" in {tool.name for tool in (await client.list_tools()).tools}
    imported = set(json.loads(report.read_text()))
    assert "codeward.serving.server" in imported and "codeward.kernel.catalog" in imported  # the probe saw the serve
    left = {**LEFT_FOR_FIRST_USE, **{name: why for name, (start, why) in DEFERRED.items() if start == SERVE}}
    at_start = {name: why for name, why in left.items() if name in imported}
    assert at_start == {}, f"imported at start-up, meant for first use: {at_start}"
    tool_modules = sorted(name for name in imported if name.startswith("codeward.tools."))
    assert tool_modules == [], "a tool module imports with its first call, not at start (the saved listing)"


def function_body_imports(src: Path) -> dict[str, list[str]]:
    """Every codeward module imported inside a function body under ``src``, with where (``module:line``);
    ``from codeward.x import y`` counts as ``codeward.x.y`` when that is a module."""
    modules = {".".join(p.relative_to(src).with_suffix("").parts).removesuffix(".__init__")
               for p in (src / "codeward").rglob("*.py")}
    found: dict[str, list[str]] = {}

    def visit(node: ast.AST, where: str, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inside = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if inside and isinstance(child, ast.ImportFrom) and (child.module or "").startswith("codeward"):
                for alias in child.names:
                    full = f"{child.module}.{alias.name}"
                    found.setdefault(full if full in modules else str(child.module), []).append(
                        f"{where}:{child.lineno}")
            elif inside and isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.name.startswith("codeward"):
                        found.setdefault(alias.name, []).append(f"{where}:{child.lineno}")
            visit(child, where, inside)

    for path in sorted((src / "codeward").rglob("*.py")):
        module = ".".join(path.relative_to(src).with_suffix("").parts)
        visit(ast.parse(path.read_text(encoding="utf-8")), module, False)
    return found


def test_every_import_in_a_function_body_is_a_named_deferral() -> None:
    deferred = function_body_imports(REPO / "src")
    named = set(LEFT_FOR_FIRST_USE) | set(DEFERRED)
    unnamed = {module: sites for module, sites in deferred.items() if module not in named}
    assert unnamed == {}, ("imported in a function body but not named as a start-up deferral (name it in "
                           f"DEFERRED with the start-up it is left out of, or import it at the top): {unnamed}")
    stale = sorted(module for module in DEFERRED if module not in deferred)
    assert stale == [], f"named as deferred but imported at the top now (drop it from DEFERRED): {stale}"


def _loaded(tmp_path: Path, script: str, *args: str) -> set[str]:
    report = tmp_path / "report.json"
    probe = textwrap.dedent("""
        import atexit, json, os, runpy, sys

        atexit.register(lambda: open(os.environ["PROBE_REPORT"], "w").write(json.dumps(sorted(sys.modules))))
    """) + script
    done = subprocess.run([sys.executable, "-c", probe, *args], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PROBE_REPORT": str(report),
                                            "CODEWARD_HOME": str(tmp_path / "home")})
    assert report.exists(), done.stderr
    return set(json.loads(report.read_text()))


def test_a_direct_call_and_the_whole_command_line_leave_out_what_they_defer(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("alpha\n")
    called = _loaded(tmp_path, RUN_AS_PYTHON_M_CODEWARD, "call", "read_file", "path=notes.txt")
    assert "codeward.serving.stack" in called  # the probe saw the call
    helped = _loaded(tmp_path, "from codeward.apps.cli import build_parser\nbuild_parser()\n")
    assert "codeward.apps.cli.serve" in helped and "codeward.apps.cli.registry" in helped  # every command
    entry = _loaded(tmp_path, "import codeward.__main__\n")
    assert "codeward.__main__" in entry  # the probe saw the import
    for start, loaded in ((CALL, called), (HELP, helped), (ENTRY, entry)):
        wrong = {name: why for name, (when, why) in DEFERRED.items() if when == start and name in loaded}
        assert wrong == {}, f"{start} imported what it leaves out: {wrong}"
