"""Running a registry tool: verify, resolve the chain, check parameters, dispatch, save.

Order matters: the tool's bytes are read once and everything — metadata, signature, the
code that runs — comes from those bytes. Every file in the chain must be signed and
unmodified; then the parameters are checked against the tool's ``Config Schema``; then the
primitive at the end of the chain runs it. Dispatch is a table lookup by primitive name.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from codeward import state_dir
from codeward.context import ToolContext
from codeward.registry.chain import HTTP_CLIENT, SUBPROCESS, Chain, build_chain
from codeward.registry.deps import requirements_of
from codeward.registry.items import Item, Kind, Space, ToolType
from codeward.registry.outputs import preview, save_output
from codeward.registry.served import served_of
from codeward.registry.service import Registry
from codeward.registry.signing import SignatureStatus, check_signature
from codeward.result import ErrorInfo, ErrorKind, Result
from codeward.state_dir import StateDir


@dataclass(frozen=True)
class RunReport:
    """A finished (or planned, for dry runs) run."""

    tool: str
    chain: list[str]
    result: Any = None
    preview: str = ""
    truncated: bool = False
    output: str = ""
    """Where the full result is saved (display path), ``""`` for dry runs."""
    seconds: float = 0.0
    stderr: str = ""
    dry_run: bool = False
    plan: dict[str, Any] = field(default_factory=dict)

    def render(self) -> str:
        chain = " → ".join(self.chain)
        if self.dry_run:
            lines = [f"dry run of {self.tool} ({chain}): nothing was run."]
            lines += [f"{key}: {value}" for key, value in self.plan.items()]
            return "\n".join(lines)
        lines = [self.preview]
        if self.truncated:
            lines.append(f"[result cut to {len(self.preview):,} characters; the whole result is saved as "
                         f"{self.output}: read it with read_file and offset/limit]")
        if self.stderr:
            lines.append(f"[stderr]\n{self.stderr}")
        saved = f"; saved as {self.output}" if self.output and not self.truncated else ""
        lines.append(f"[{self.tool} ran in {self.seconds:.2f} s via {chain}{saved}]")
        return "\n".join(lines)


@dataclass(frozen=True)
class _Prepared:
    chain: Chain
    source: bytes
    params: dict[str, Any]
    timeout: float


Primitive = Callable[[Registry, _Prepared, ToolContext], Result[tuple[Any, str, float] | None]]


def run_tool(registry: Registry, name: str, params: dict[str, Any] | None, ctx: ToolContext, *,
             space: Space | None = None, dry_run: bool = False,
             timeout: float | None = None) -> Result[RunReport | None]:
    """Run (or, with ``dry_run``, check and describe) the registry tool ``name``."""
    if params is not None and not isinstance(params, dict):
        return Result.fail(ErrorKind.INVALID_INPUT, f"params must be a JSON object, got {type(params).__name__}",
                           'Pass params as an object, e.g. {"name": "x"}.', data=None)
    prepared = _prepare(registry, name, dict(params or {}), space, timeout)
    if not prepared.ok or prepared.data is None:
        return prepared.cast(None)
    plan = prepared.data
    chain = plan.chain
    if dry_run:
        return Result.success(RunReport(chain.tool.name, chain.names(), dry_run=True,
                                        plan=_describe(registry, plan)))
    runner = PRIMITIVES.get(chain.primitive) if chain.tool.meta.get("tool_type") != ToolType.MCP_TOOL else _mcp
    if runner is None:  # a chain always ends at a built-in primitive; this is a bug guard
        return Result.fail(ErrorKind.INTERNAL, f"no primitive named {chain.primitive!r}", data=None)
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    started = time.monotonic()
    ran = runner(registry, plan, ctx)
    seconds = time.monotonic() - started
    record: dict[str, Any] = {"tool": chain.tool.name, "version": chain.tool.version, "chain": chain.names(),
                              "params": plan.params, "started_at": started_at, "seconds": round(seconds, 3)}
    if not ran.ok or ran.data is None:
        record.update({"status": "error", "errors": [e.to_dict() for e in ran.errors]})
        saved = save_output(ctx.workspace, chain.tool.name, record, registry.settings.keep_outputs)
        errors = list(ran.errors)
        if saved.ok and errors:
            first = errors[0]
            errors[0] = ErrorInfo(first.kind, f"{first.message}\n(this failed run is saved as "
                                  f"{ctx.workspace.display(saved.data)})", first.hint, first.source)
        return Result(data=None, errors=errors)
    result, stderr, _child_seconds = ran.data
    record.update({"status": "ok", "result": result, "stderr": stderr})
    saved = save_output(ctx.workspace, chain.tool.name, record, registry.settings.keep_outputs)
    shown, cut = preview(result, registry.settings.result_preview_chars)
    output = ctx.workspace.display(saved.data) if saved.ok else ""
    report = RunReport(chain.tool.name, chain.names(), result, shown, cut and bool(output), output, seconds, stderr)
    if cut and not output:
        return Result.success(report, "[the result was cut and could not be saved: " + saved.error_text() + "]")
    return Result.success(report)


def _prepare(registry: Registry, name: str, params: dict[str, Any], space: Space | None,
             timeout: float | None) -> Result[_Prepared | None]:
    found = registry.find(name, Kind.TOOL, space)
    if not found.ok or found.data is None:
        return found.cast(None)
    verified = _verified(registry, found.data)
    if not verified.ok or verified.data is None:
        return verified.cast(None)
    tool, source = verified.data
    failures: list[ErrorInfo] = []

    def lookup(executor: str) -> Item | None:
        located = registry.find(executor, Kind.TOOL)
        if not located.ok or located.data is None:
            return None
        checked = _verified(registry, located.data)
        if not checked.ok or checked.data is None:
            failures.extend(checked.errors)
            return None
        return checked.data[0]

    built = build_chain(tool, lookup)
    if failures:
        return Result(data=None, errors=failures)
    if not built.ok or built.data is None:
        return built.cast(None)
    chain = built.data
    checked = _check_params(tool, params)
    if not checked.ok:
        return checked.cast(None)
    settings = registry.settings
    limit = timeout if timeout is not None else chain.config.get("timeout", settings.default_timeout)
    if not isinstance(limit, int | float) or limit <= 0:
        return Result.fail(ErrorKind.INVALID_INPUT, f"timeout must be a positive number of seconds, got {limit!r}",
                           f"Use at most {settings.max_timeout:g}.", data=None)
    return Result.success(_Prepared(chain, source, params, min(float(limit), settings.max_timeout)))


def _verified(registry: Registry, item: Item) -> Result[tuple[Item, bytes] | None]:
    """The item re-read, valid and carrying an intact signature (built-ins need none)."""
    if item.space is Space.BUILTIN:
        return Result.success((item, b""))
    if item.space is Space.HUB:
        return Result.fail(ErrorKind.PERMISSION, f"{item.name} is in the shared hub, and hub items do not run there",
                           f"Pull it (`codeward registry pull {item.name}` or registry_load with source=\"hub\" and "
                           "destination=\"project\"), review it, then sign it.", data=None)
    read = registry.fresh(item)
    if not read.ok or read.data is None:
        return read
    fresh, data = read.data
    check = check_signature(data)
    shown = registry.spaces.display(fresh.path, fresh.space) if fresh.path else fresh.name
    resign = f"codeward sign {fresh.name}` (or registry_execute with action=\"sign\")"
    if check.status is SignatureStatus.UNSIGNED:
        return Result.fail(ErrorKind.PERMISSION, f"{fresh.name} is not signed, so it does not run ({shown})",
                           f"Review the file, then sign it: `{resign}.", data=None)
    if check.status is SignatureStatus.MODIFIED:
        return Result.fail(ErrorKind.PERMISSION,
                           f"{fresh.name} was modified after it was signed on {check.signed_at}: its content no "
                           f"longer matches the signature ({shown})",
                           f"Review the changes, then re-sign it: `{resign}.", data=None)
    if fresh.problems:
        listed = "; ".join(p.render() for p in fresh.problems)
        return Result.fail(ErrorKind.INVALID_INPUT, f"{fresh.name} has invalid metadata: {listed}",
                           "Fix the file, then re-sign it.", data=None)
    return Result.success((fresh, data))


def _check_params(tool: Item, params: dict[str, Any]) -> Result[None]:
    schema = tool.meta.get("config_schema")
    if not isinstance(schema, dict):
        return Result.success(None)
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(params), key=lambda e: list(e.absolute_path))
    if not errors:
        return Result.success(None)
    described = "; ".join(f"{'.'.join(str(p) for p in e.absolute_path) or 'params'}: {e.message}"
                          for e in errors[:5])
    return Result.fail(ErrorKind.INVALID_INPUT, f"invalid params for {tool.name}: {described}",
                       f"See the parameters with registry_help(name={tool.name!r}).", data=None)


def _describe(registry: Registry, plan: _Prepared) -> dict[str, Any]:
    tool = plan.chain.tool
    described: dict[str, Any] = {"params": "valid" if tool.meta.get("config_schema") else "not checked (no schema)",
                                 "timeout": f"{plan.timeout:g} s"}
    if plan.chain.primitive == SUBPROCESS:
        needs = requirements_of(tool)
        described["environment"] = (f"its own virtual environment with {', '.join(needs)}" if needs
                                    else "the base interpreter, standard library only")
    elif plan.chain.primitive == HTTP_CLIENT:
        config = plan.chain.config
        described["request"] = f"{str(config.get('method', 'GET')).upper()} {config.get('url', '')}"
    else:
        described["calls"] = plan.chain.config.get("tool")
    described["output"] = f".ai/outputs/tools/{tool.name}/ (last {registry.settings.keep_outputs} kept)"
    return described


# -- primitives -----------------------------------------------------------------------------


def _subprocess(registry: Registry, plan: _Prepared, ctx: ToolContext) -> Result[tuple[Any, str, float] | None]:
    from codeward.registry.subprocess_primitive import run_python
    from codeward.registry.venvs import interpreter_for

    tool = plan.chain.tool
    assert tool.path is not None
    folder = _venv_folder(registry, tool)
    interpreter = interpreter_for(tool.name, requirements_of(tool), folder, ctx, registry.settings.install_timeout)
    if not interpreter.ok or interpreter.data is None:
        return interpreter.cast(None)
    lib = [str(registry.spaces.folder(space, Kind.TOOL) / "lib") for space in (Space.PROJECT, Space.USER)]
    ran = run_python(tool.name, plan.source, tool.path, plan.params, plan.chain.config, interpreter.data, lib, ctx,
                     plan.timeout, registry.settings.max_stderr_chars)
    if not ran.ok or ran.data is None:
        return ran.cast(None)
    return Result.success((ran.data.result, ran.data.stderr, ran.data.seconds))


def _http(registry: Registry, plan: _Prepared, ctx: ToolContext) -> Result[tuple[Any, str, float] | None]:
    from codeward.registry.http_primitive import run_http

    answered = run_http(plan.chain.tool.name, plan.params, plan.chain.config, ctx, plan.timeout)
    if not answered.ok or answered.data is None:
        return answered.cast(None)
    return Result.success((answered.data.as_dict(), "", answered.data.seconds))


def _mcp(registry: Registry, plan: _Prepared, ctx: ToolContext) -> Result[tuple[Any, str, float] | None]:
    served = served_of(ctx.services)
    config = plan.chain.config
    target = str(config.get("tool"))
    if served is None or not served.has(target):
        return Result.fail(ErrorKind.UNAVAILABLE, f"{plan.chain.tool.name} calls the tool {target!r}, which this "
                           "server does not serve", "Check CONFIG['tool'] against the served tools "
                           "(registry_search), or run it where that tool is served.", data=None)
    given = config.get("arguments")
    defaults: dict[str, Any] = given if isinstance(given, dict) else {}
    outcome = served.call(target, {**defaults, **plan.params}, ctx)
    if outcome.is_error:
        return Result(data=None, errors=outcome.errors or [ErrorInfo(ErrorKind.INTERNAL, outcome.text)])
    return Result.success((outcome.structured if outcome.structured is not None else outcome.text, "",
                           outcome.seconds))


def _venv_folder(registry: Registry, tool: Item) -> Path:
    if registry.settings.venv_dir is not None:
        return registry.settings.venv_dir
    if tool.space is Space.PROJECT:
        with contextlib.suppress(OSError):  # a read-only root or a planted link: the user's cache
            return StateDir(registry.workspace.primary).folder(state_dir.VENVS)
    return registry.settings.user_cache_dir() / "venvs"


PRIMITIVES: dict[str, Primitive] = {SUBPROCESS: _subprocess, HTTP_CLIENT: _http}
