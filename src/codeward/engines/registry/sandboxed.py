"""The ``subprocess`` primitive: a Python tool's ``main`` in the same sandbox as ``run_shell``.

What the tool sees, and nothing more:

* **its closure** — the exact bytes its signature was checked against (the tool, its local
  modules), staged read-only at ``/codeward/tool``; a file that is not in the closure does
  not exist for it, so nothing can be slipped in beside it between the check and the run;
* **its packages** — the folder of its declared pins, read-only at ``/codeward/site``;
* **the project**, overlaid, with secrets covered; whatever it writes comes back through the
  workspace's write checks (``.git``, codeward's configuration and ``.codeward/`` refused);
* **an environment of its own**: the sandbox's minimal one, plus the host variables the tool
  declares in ``__env__`` (and its chain's ``CONFIG["env"]``, ``${VAR}`` only for those) —
  none of the server's secrets;
* **no network**, unless it declares the hosts it needs in ``__network__`` and the operator
  allows them (``[registry] allow_hosts``; then only those hosts), or the operator allows registry
  tools some domains (``[network.registry]``; then the egress proxy in the client's namespace is
  their one way out, each refusal in the call's notes);
* the limits of ``[registry]`` (time, memory, processes), killed with everything it started
  at the deadline or when the call is cancelled.

The request goes in as JSON on stdin, the result comes back as JSON on stdout
(:mod:`codeward.engines.registry.tool_runner`, staged beside the tool).
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import re
import shutil
import socket
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codeward.engines.contained.project_sandbox import Program, ProjectAccess, ProjectSandbox
from codeward.engines.registry.closure import LIB_FOLDER, ClosureFile
from codeward.engines.registry.tool_env import SandboxPython, ToolEnvironment
from codeward.engines.sandbox import Bind, Status
from codeward.engines.sandbox.choice import Executor
from codeward.engines.shell.runner import in_client_network
from codeward.kernel.result import ErrorKind, Result

if TYPE_CHECKING:
    from codeward.engines.registry.settings import RegistrySettings
    from codeward.kernel.context import ToolContext

RUNNER = Path(__file__).with_name("tool_runner.py")
TOOL_MOUNT = "/codeward/tool"
SITE_MOUNT = "/codeward/site"
MAX_RESULT_BYTES = 50_000_000
TOOL_FILE_SIZE_MB = 4096
TOOL_OPEN_FILES = 4096
TOOL_SCRATCH_MB = 1024
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True)
class ToolRun:
    """What the tool's process produced, and what the sandbox says about the run."""

    result: Any
    stderr: str
    seconds: float
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Declared:
    """What a tool (with its chain) declares it needs from the host."""

    env: tuple[str, ...] = ()
    network: tuple[str, ...] = ()
    config_env: Mapping[str, str] = field(default_factory=dict)


def tool_environment(name: str, declared: Declared, ctx: ToolContext,
                     environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables the tool gets: declared host variables that are set, its CONFIG env
    (``${VAR}`` filled from declared variables only), and codeward's own two."""
    host = os.environ if environ is None else environ
    env = {key: host[key] for key in declared.env if key in host}

    def fill(value: str) -> str:
        return _VARIABLE.sub(lambda m: host.get(m.group(1), "") if m.group(1) in declared.env else "", value)

    env.update({str(k): fill(str(v)) for k, v in declared.config_env.items()})
    env.update({"CODEWARD_TOOL_NAME": name, "CODEWARD_PROJECT_ROOT": str(ctx.workspace.primary)})
    return env


def reachable_hosts(declared: Sequence[str], allowed: Sequence[str]) -> tuple[dict[str, tuple[str, ...]], list[str]]:
    """The declared hosts the operator allows, each with its public addresses; notes for the rest."""
    hosts: dict[str, tuple[str, ...]] = {}
    notes: list[str] = []
    allowed_set = {a.lower().rstrip(".") for a in allowed}
    refused = [h for h in declared if h.lower().rstrip(".") not in allowed_set and "*" not in allowed_set]
    if refused:
        notes.append(f"network: the tool declares {', '.join(refused)}, which the operator does not allow "
                     "([registry] allow_hosts in codeward.toml): it ran without reaching them")
    for host in declared:
        if host in refused:
            continue
        addresses = _public_addresses(host)
        if addresses:
            hosts[host] = addresses
        else:
            notes.append(f"network: {host} has no public address (private, loopback and reserved addresses are "
                         "never reachable from the sandbox): it ran without reaching it")
    return hosts, notes


def run_sandboxed(name: str, files: Sequence[ClosureFile], params: dict[str, Any], declared: Declared,
                  python: SandboxPython, env: ToolEnvironment | None, ctx: ToolContext, timeout: float,
                  settings: RegistrySettings) -> Result[ToolRun | None]:
    """Run ``main(**params)`` of the tool whose verified closure is ``files`` (the tool first)."""
    opened = ProjectSandbox.open(ctx, Executor.REGISTRY, ProjectAccess.WRITE, hide_history=True)
    if not opened.ok or opened.data is None:
        refusal = opened.errors[0] if opened.errors else None
        return Result.fail(ErrorKind.UNAVAILABLE, f"{name} cannot run: {refusal.message if refusal else 'no sandbox'}",
                           refusal.hint if refusal else "", data=None)
    box = opened.data
    hosts, notes = reachable_hosts(declared.network, settings.allow_hosts)
    staging = Path(tempfile.mkdtemp(prefix="codeward-tool-"))
    try:
        tool_path = _stage(staging, files)
        # In the box the tool and its packages are at fixed paths; a plain process (the operator's
        # [sandbox] backend = "process") is told where they are (its argv is rewritten from the binds).
        tool_root = TOOL_MOUNT if box.isolated else str(staging)
        site_root = (SITE_MOUNT if box.isolated else str(env.site)) if env is not None else None
        request = {"params": params, "path": f"{tool_root}/tools/{tool_path}",
                   "local": [f"{tool_root}/tools/{Path(tool_path).parent.as_posix()}".rstrip("/."),
                             f"{tool_root}/tools/{LIB_FOLDER}"],
                   "site": site_root}
        binds: list[Bind] = [Bind(str(staging), TOOL_MOUNT)]
        if env is not None:
            binds.append(Bind(str(env.site), SITE_MOUNT))
        program = Program(
            argv=[python.path, "-I", "-S", "-B", f"{TOOL_MOUNT}/runner.py"], env=tool_environment(name, declared, ctx),
            stdin=json.dumps(request).encode(), timeout_s=timeout, memory_mb=settings.memory_mb,
            max_processes=settings.max_processes, network=bool(hosts), network_hosts=hosts or None,
            ro_binds=binds, max_output_bytes=MAX_RESULT_BYTES, file_size_mb=TOOL_FILE_SIZE_MB,
            open_files=TOOL_OPEN_FILES, scratch_mb=TOOL_SCRATCH_MB)
        joined = in_client_network(ctx, program, "registry", f"registry {name}", make=False, join=False)
        if not joined.ok or joined.data is None:
            return joined.cast(None)
        program, egress = joined.data
        try:
            ran = box.run(program)
        finally:
            network_notes = [*joined.notes, *egress.finish()]
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    if not ran.ok or ran.data is None:
        return ran.cast(None)
    outcome = ran.data
    result = outcome.result
    notes += outcome.notes + result.notes + network_notes
    stderr = _tail(result.stderr, settings.max_stderr_chars)
    if outcome.cancelled:
        return Result.fail(ErrorKind.TIMEOUT, f"{name} was cancelled and its processes killed", data=None)
    if result.status is Status.TIMEOUT:
        return Result.fail(ErrorKind.TIMEOUT, f"{name} ran longer than {timeout:g} s and was killed (with every "
                           "process it started)", 'Pass a larger timeout, set CONFIG = {"timeout": seconds} in the '
                           "tool, or make it do less per call.", data=None)
    if result.status is Status.SETUP_ERROR:
        return Result.fail(ErrorKind.UNAVAILABLE, f"{name} could not start in the sandbox: {result.error_message}",
                           "Check the sandbox with `codeward call code_list_languages`.", data=None)
    if result.stdout_truncated:
        return Result.fail(ErrorKind.TOO_LARGE, f"{name} returned more than {MAX_RESULT_BYTES:,} bytes",
                           "Return less (write big data to a file and return its path).", data=None)
    try:
        answer = json.loads(result.stdout)
    except ValueError:
        limit = f"; {result.error_message}" if result.limit_hit is not None and result.error_message else ""
        said = f"; stderr: {stderr}" if stderr else ""
        return Result.fail(ErrorKind.INTERNAL, f"{name} exited with code {result.exit_code} without a result"
                           f"{limit}{said}", "The process died before answering (a crash, a limit, os._exit); "
                           "see stderr.", data=None)
    if not isinstance(answer, dict) or not answer.get("ok"):
        return _tool_failure(name, answer if isinstance(answer, dict) else {}, stderr, notes)
    return Result.success(ToolRun(answer.get("result"), stderr, result.duration_s, notes))


def _stage(staging: Path, files: Sequence[ClosureFile]) -> str:
    """Write the verified bytes under ``staging/tools/`` (and the runner); world-readable, so the
    sandbox can read them when it runs as the project's owner. Returns the tool's relative path."""
    tools = staging / "tools"
    for entry in files:
        target = tools / entry.rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(entry.data)
    (tools / LIB_FOLDER).mkdir(parents=True, exist_ok=True)
    shutil.copyfile(RUNNER, staging / "runner.py")
    for top, _dirs, names in os.walk(staging):
        os.chmod(top, 0o755)
        for each in names:
            os.chmod(os.path.join(top, each), 0o644)
    return files[0].rel


def _public_addresses(host: str) -> tuple[str, ...]:
    found: list[str] = []
    with contextlib.suppress(OSError, UnicodeError):
        for info in socket.getaddrinfo(host, None, family=socket.AF_INET, type=socket.SOCK_STREAM):
            address = str(info[4][0])
            with contextlib.suppress(ValueError):
                if ipaddress.ip_address(address).is_global and address not in found:
                    found.append(address)
    return tuple(found)


def _tool_failure(name: str, answer: dict[str, Any], stderr: str, notes: list[str]) -> Result[ToolRun | None]:
    kind = str(answer.get("error", "error"))
    message = str(answer.get("message", ""))
    extra = "".join(f"\nnote: {n}" for n in notes)
    if kind == "invalid_params":
        return Result.fail(ErrorKind.INVALID_INPUT, f"{name}: {message}",
                           f"See the parameters with registry_help(name={name!r}).", data=None)
    if kind in ("ModuleNotFoundError", "ImportError"):
        return Result.fail(ErrorKind.UNAVAILABLE, f"{name} failed to import: {message}{extra}",
                           "Only the tool's signed closure, the standard library and its declared pins exist when it "
                           'runs: declare the package (__dependencies__ = ["name==VERSION"]) or add the module, then '
                           "re-sign it.", data=None)
    trace = str(answer.get("traceback", "")).strip()
    detail = f"\n{trace}" if trace else ""
    more = f"\nstderr: {stderr}" if stderr else ""
    return Result.fail(ErrorKind.INTERNAL, f"{name} raised {kind}: {message}{detail}{more}{extra}",
                       "Fix the tool (then re-sign it) or call it with other parameters.", data=None)


def _tail(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else "[...]" + text[-limit:]
