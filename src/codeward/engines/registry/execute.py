"""Running a registry tool: verify, check parameters, dispatch to the primitive, save.

Order matters: the tool's closure is read once and everything — metadata, signature, the
code that runs — comes from those bytes. The signature must be by a key the user trusts and
match the whole closure (:mod:`codeward.engines.registry.trust`); then the parameters are checked
against the tool's ``Config Schema``; then the primitive at the end of the chain runs it —
Python tools in the sandbox (:mod:`codeward.engines.registry.sandboxed`), api tools through the SSRF
guard, mcp_tool items through the server's own surface. Dispatch is a table lookup.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Protocol

from codeward.engines.registry.chain import HTTP_CLIENT, SUBPROCESS, Chain
from codeward.engines.registry.items import Item, Kind, Space, ToolType
from codeward.engines.registry.outputs import preview, save_output
from codeward.engines.registry.sandboxed import Declared, run_sandboxed
from codeward.engines.registry.served import ServedTools
from codeward.engines.registry.service import Registry, describe_covered
from codeward.engines.registry.tool_env import build
from codeward.engines.registry.trust import Verified
from codeward.kernel.context import CallInfo, ToolContext
from codeward.kernel.result import ErrorInfo, ErrorKind, Result


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


class Consent(Protocol):
    """Asks the person behind a call for what only a person may decide (``ok`` when they said yes)."""

    def __call__(self, ctx: ToolContext, question: str, *, what: str, command: str) -> Result[None]: ...


@dataclass(frozen=True)
class _Prepared:
    chain: Chain
    verified: Verified
    params: dict[str, Any]
    timeout: float
    consent: Consent | None = None

    @property
    def declared(self) -> Declared:
        """The host variables and hosts the tool and its runtimes declare, and the chain's CONFIG env."""
        env: list[str] = []
        network: list[str] = []
        for link in self.chain.links:
            env += [e for e in link.meta.get("env") or [] if e not in env]
            network += [h for h in link.meta.get("network") or [] if h not in network]
        config_env = self.chain.config.get("env")
        return Declared(tuple(env), tuple(network), config_env if isinstance(config_env, dict) else {})


Primitive = Callable[[Registry, _Prepared, ToolContext], Result[tuple[Any, str, float] | None]]


def run_tool(registry: Registry, name: str, params: dict[str, Any] | None, ctx: ToolContext, *,
             space: Space | None = None, dry_run: bool = False, timeout: float | None = None,
             consent: Consent | None = None) -> Result[RunReport | None]:
    """Run (or, with ``dry_run``, check and describe) the registry tool ``name``. ``consent`` asks a person
    for what only a person may decide (a tool's first install: :func:`codeward.approval.consent.ask_person`);
    without it, such a run is refused."""
    if params is not None and not isinstance(params, dict):
        return Result.fail(ErrorKind.INVALID_INPUT, f"params must be a JSON object, got {type(params).__name__}",
                           'Pass params as an object, e.g. {"name": "x"}.', data=None)
    prepared = _prepare(registry, name, dict(params or {}), space, timeout)
    if not prepared.ok or prepared.data is None:
        return prepared.cast(None)
    plan = replace(prepared.data, consent=consent)
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
    record.update({"status": "ok", "result": result, "stderr": stderr, "notes": list(ran.notes)})
    saved = save_output(ctx.workspace, chain.tool.name, record, registry.settings.keep_outputs)
    shown, cut = preview(result, registry.settings.result_preview_chars)
    output = ctx.workspace.display(saved.data) if saved.ok else ""
    report = RunReport(chain.tool.name, chain.names(), result, shown, cut and bool(output), output, seconds, stderr)
    notes = [f"note: {n}" for n in ran.notes]
    if cut and not output:
        notes.append("[the result was cut and could not be saved: " + saved.error_text() + "]")
    return Result.success(report, *notes)


def _prepare(registry: Registry, name: str, params: dict[str, Any], space: Space | None,
             timeout: float | None) -> Result[_Prepared | None]:
    found = registry.find(name, Kind.TOOL, space)
    if not found.ok or found.data is None:
        return found.cast(None)
    item = found.data
    if item.space is Space.HUB:
        return Result.fail(ErrorKind.PERMISSION, f"{item.name} is in the shared hub, and hub items do not run there",
                           f"Pull it (`codeward registry pull {item.name}` or registry_load with source=\"hub\" and "
                           "destination=\"project\"), review it, then run it here.", data=None)
    read = registry.fresh(item)
    if not read.ok or read.data is None:
        return read.cast(None)
    tool, data = read.data
    if tool.meta.get("tool_type") == ToolType.RUNTIME.value:
        return Result.fail(ErrorKind.INVALID_INPUT, f"{tool.name} is a runtime, which runs other tools and is not "
                           "run itself", f"Run a tool whose __executor_id__ is {tool.name!r}.", data=None)
    if tool.problems:
        listed = "; ".join(p.render() for p in tool.problems)
        return Result.fail(ErrorKind.INVALID_INPUT, f"{tool.name} has invalid metadata: {listed}",
                           "Fix the file, then sign it again.", data=None)
    verified = registry.verify(tool, data)
    if not verified.ok or verified.data is None:
        return verified.cast(None)
    chain = verified.data.covered.chain
    if chain is None:
        if tool.meta.get("tool_type") != ToolType.MCP_TOOL.value:
            return Result.fail(ErrorKind.INVALID_INPUT, f"{tool.name} has no executor chain to run on", data=None)
        chain = Chain((tool,), dict(tool.meta.get("config") or {}))
    checked = _check_params(tool, params)
    if not checked.ok:
        return checked.cast(None)
    settings = registry.settings
    limit = timeout if timeout is not None else chain.config.get("timeout", settings.default_timeout)
    if not isinstance(limit, int | float) or limit <= 0:
        return Result.fail(ErrorKind.INVALID_INPUT, f"timeout must be a positive number of seconds, got {limit!r}",
                           f"Use at most {settings.max_timeout:g}.", data=None)
    return Result.success(_Prepared(chain, verified.data, params, min(float(limit), settings.max_timeout)))


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
    covered = plan.verified.covered
    described: dict[str, Any] = {"params": "valid" if tool.meta.get("config_schema") else "not checked (no schema)",
                                 "timeout": f"{plan.timeout:g} s",
                                 "signature": f"{plan.verified.key.shown()}, {plan.verified.signed_at}; covers "
                                              + "; ".join(describe_covered(covered))}
    declared = plan.declared
    if plan.chain.primitive == SUBPROCESS:
        needs = covered.requirements
        python = registry.python()
        ready = python.ok and python.data is not None and registry.environment(tool, needs, python.data).ready
        described["environment"] = ("the standard library only" if not needs else
                                    f"its packages {', '.join(needs)}" + ("" if ready else
                                    " (not installed yet: the first run asks you, then installs them)"))
        limits = registry.settings
        described["sandbox"] = (f"the project overlaid (writes pass the workspace's checks), {limits.memory_mb} MB, "
                                f"{limits.max_processes} processes")
        described["variables"] = ", ".join(declared.env) or "none from the host"
        hosts = [h for h in declared.network if _allowed(h, registry.settings.allow_hosts)]
        described["network"] = (", ".join(hosts) if hosts else "none") + (
            f" (declared but not allowed by the operator: {', '.join(h for h in declared.network if h not in hosts)})"
            if len(hosts) < len(declared.network) else "")
    elif plan.chain.primitive == HTTP_CLIENT:
        config = plan.chain.config
        described["request"] = f"{str(config.get('method', 'GET')).upper()} {config.get('url', '')}"
    else:
        described["calls"] = plan.chain.config.get("tool")
    described["output"] = f".ai/outputs/tools/{tool.name}/ (last {registry.settings.keep_outputs} kept)"
    return described


def _allowed(host: str, allowed: tuple[str, ...]) -> bool:
    folded = {a.lower().rstrip(".") for a in allowed}
    return "*" in folded or host.lower().rstrip(".") in folded


# -- primitives -----------------------------------------------------------------------------


def _subprocess(registry: Registry, plan: _Prepared, ctx: ToolContext) -> Result[tuple[Any, str, float] | None]:
    tool = plan.chain.tool
    covered = plan.verified.covered
    python = registry.python()
    if not python.ok or python.data is None:
        return python.cast(None)
    env = None
    if covered.requirements:
        env = registry.environment(tool, covered.requirements, python.data)
        if not env.ready:
            listed = ", ".join(covered.requirements)
            if plan.consent is None:
                return Result.fail(ErrorKind.PERMISSION, f"installing {listed} for {tool.name} the first time needs "
                                   "a person's approval, and nobody can be asked here",
                                   f"Ask the user to run `codeward registry run {tool.name}` in a terminal.", data=None)
            asked = plan.consent(ctx, f"codeward: {tool.name} (signed by {plan.verified.key.shown()}) declares the "
                               f"packages {listed}. Install them from PyPI (wheels only, exactly these pins) into "
                               "its own environment? Later runs reuse them.",
                               what=f"installing {listed} for {tool.name} the first time",
                               command=f"codeward registry run {tool.name}")
            if not asked.ok:
                return asked.cast(None)
            built = build(env, python.data, ctx, registry.settings.install_timeout, tool.name)
            if not built.ok:
                return built.cast(None)
    ran = run_sandboxed(tool.name, covered.files, plan.params, plan.declared, python.data, env, ctx, plan.timeout,
                        registry.settings)
    if not ran.ok or ran.data is None:
        return ran.cast(None)
    return Result.success((ran.data.result, ran.data.stderr, ran.data.seconds), *ran.data.notes)


def _http(registry: Registry, plan: _Prepared, ctx: ToolContext) -> Result[tuple[Any, str, float] | None]:
    from codeward.engines.registry.http_primitive import run_http

    answered = run_http(plan.chain.tool.name, plan.params, plan.chain.config, ctx, plan.timeout,
                        variables=plan.declared.env)
    if not answered.ok or answered.data is None:
        return answered.cast(None)
    return Result.success((answered.data.as_dict(), "", answered.data.seconds))


def _mcp(registry: Registry, plan: _Prepared, ctx: ToolContext) -> Result[tuple[Any, str, float] | None]:
    served = ctx.services.find(ServedTools)
    config = plan.chain.config
    target = str(config.get("tool"))
    if served is None or not served.has(target):
        return Result.fail(ErrorKind.UNAVAILABLE, f"{plan.chain.tool.name} calls the tool {target!r}, which this "
                           "server does not serve", "Check CONFIG['tool'] against the served tools "
                           "(registry_search), or run it where that tool is served.", data=None)
    given = config.get("arguments")
    defaults: dict[str, Any] = given if isinstance(given, dict) else {}
    # the served call is a call of its own: approval (and a person's yes) is asked for it afresh
    outcome = served.call(target, {**defaults, **plan.params}, ctx.child(call=CallInfo()))
    if outcome.is_error:
        return Result(data=None, errors=outcome.errors or [ErrorInfo(ErrorKind.INTERNAL, outcome.text)])
    return Result.success((outcome.structured if outcome.structured is not None else outcome.text, "",
                           outcome.seconds))


PRIMITIVES: dict[str, Primitive] = {SUBPROCESS: _subprocess, HTTP_CLIENT: _http}
