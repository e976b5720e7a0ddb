"""The tool catalog: typed functions registered once, dispatched by table lookup.

A tool is a plain function ``fn(ctx: ToolContext, arg: T, ...) -> Result[...]`` decorated
with :func:`tool`. The decorator derives a pydantic input model (and so the JSON Schema) from
the signature; it registers nothing globally, it only attaches a :class:`ToolSpec` to the
function. A :class:`Catalog` is built from such functions and is what every surface — the
MCP server, the gateway, the agent, the CLI — talks to.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import os
import stat
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, partial
from pathlib import Path
from types import ModuleType
from typing import Any, get_type_hints

import anyio
import anyio.to_thread
from pydantic import BaseModel, ConfigDict, ValidationError, create_model
from pydantic.fields import FieldInfo

from codeward.kernel.content import RichContent, displayable
from codeward.kernel.context import ToolContext
from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.path_locks import PathLocks
from codeward.kernel.result import ErrorKind, Result
from codeward.kernel.steps import CallStep, HoldWriteLocks, RunningCall, kernel_steps, through
from codeward.kernel.validation_messages import annotation_name, problems
from codeward.kernel.wire_schema import lean_input_schema
from codeward.kernel.workspace import Access, git_marker_lock_key

TOOL_NAME_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"
SPEC_ATTRIBUTE = "__codeward_tool__"
MAX_ARGUMENT_CHARS = 16 * 1024 * 1024
"""The most text one call may carry (all string arguments together): a model that sends more is
almost always looping, and a tool asked to hold it would spend the server's memory."""
JSON_SCHEMA_2020_12 = "https://json-schema.org/draft/2020-12/schema"


@dataclass(frozen=True, slots=True)
class Annotations:
    """MCP tool hints; they inform clients and approval policies, they enforce nothing."""

    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    open_world: bool = False

    def to_mcp(self) -> dict[str, bool]:
        return {
            "readOnlyHint": self.read_only,
            "destructiveHint": self.destructive,
            "idempotentHint": self.idempotent,
            "openWorldHint": self.open_world,
        }


@dataclass(frozen=True)
class ToolCode:
    """What running a tool takes beyond its listing: the function and its models (its module's import)."""

    func: Callable[..., Result[Any]]
    input_model: type[BaseModel]
    output_model: type[BaseModel] | None = None
    preview: Callable[[Mapping[str, Any], Any], str | None] | None = None
    """The unified diff an approval prompt shows for a call (given its arguments and context) when the
    diff of its ``write_paths`` cannot say it (see :mod:`codeward.approval.previews`)."""
    failure: FailureShape | None = None
    """The structured content a failed call carries beside its error text (a seed's error shape, such as
    Codomyrmex's ``{"success": false, "error": ...}``); ``None``: a failed call carries none."""


FailureShape = Callable[["Result[Any]"], dict[str, Any]]
"""A failed result as the structured content a tool's callers expect for a failure."""


class ToolUnavailable(Exception):
    """A listed tool whose module cannot be imported now (or no longer defines it)."""


@dataclass(frozen=True)
class ToolSpec:
    """Everything the surfaces need to know about one tool.

    The listing half (names, description, hints, schemas) is plain data; the code half
    (:class:`ToolCode`: ``func``, ``input_model``, ``output_model``, ``preview``) comes with
    importing ``module``. A spec made by :func:`tool` holds both; one listed from the schema cache
    (:mod:`codeward.kernel.schema_cache`) imports its module on first use of the code half, so a server
    starts without importing tools it is never asked to run.
    """

    name: str
    description: str
    toolset: str
    module: str
    """The module defining the tool (one of the default catalog's for a spec from the schema cache)."""
    code: ToolCode | None = field(default=None, compare=False, repr=False)
    """``None`` for a spec listed from the schema cache: :meth:`loaded` imports ``module``."""
    annotations: Annotations = Annotations()
    title: str | None = None
    write_paths: tuple[str, ...] = ()
    """Arguments naming files this tool changes: calls touching the same file are serialized."""
    schema_dialect: bool = False
    """Declare ``$schema`` (JSON Schema 2020-12, which pydantic emits) and send the input schema whole:
    a tool that names its dialect is validated by its schema, so nothing is left out for brevity
    (``additionalProperties: false`` stays)."""
    quick: bool = False
    """Read-only work bounded by the size of the files its ``*path`` arguments name: on small
    regular files :meth:`Catalog.acall` runs it on the event loop, where a worker-thread hop
    would cost more than the call (such a tool must not use ``ctx.progress`` or ``ctx.peer``)."""
    examples: tuple[dict[str, Any], ...] = ()
    """Example calls (arguments), shown in ``docs/tools.md`` and ``registry_help`` and run by the
    contract test against every real client. They are never sent in ``tools/list``: a small model
    copies example values literally, and every listed token costs context."""
    aliases: tuple[str, ...] = ()
    """Other names the tool answers to, never listed: a seed's name kept for clients that call it
    by that name, without showing a model the same tool twice."""
    hidden: bool = False
    """Callable by name but never listed: a seed's tool kept with its own (simpler) arguments,
    in front of a listed tool that does the work (``run_powershell``, ``code_execute``...)."""
    ask_always: bool = False
    """Every call needs a person's yes, whatever the approval policy would auto-approve (``git_commit``):
    approval layers always ask and mark the call approved (``ctx.call.approved``); the tool asks the
    client's user itself when no layer did, and refuses when no one can be asked."""

    @property
    def func(self) -> Callable[..., Result[Any]]:
        return self.loaded().func

    @property
    def input_model(self) -> type[BaseModel]:
        return self.loaded().input_model

    @property
    def output_model(self) -> type[BaseModel] | None:
        return self.loaded().output_model

    @property
    def preview(self) -> Callable[[Mapping[str, Any], Any], str | None] | None:
        return self.loaded().preview

    @property
    def is_loaded(self) -> bool:
        """Whether the code half is at hand (no import needed to run the tool)."""
        return self.code is not None or _LOADED in self.__dict__

    def loaded(self) -> ToolCode:
        """The code half, importing ``module`` the first time; :class:`ToolUnavailable` if that fails."""
        code = self.code or self.__dict__.get(_LOADED)
        if code is None:
            code = _import_code(self.module, self.name)
            self.__dict__[_LOADED] = code  # a frozen dataclass: kept beside the fields, like cached_property
        return code

    @cached_property
    def input_schema(self) -> dict[str, Any]:
        """The arguments' JSON Schema, generated once (shared: never mutate it)."""
        schema = self.input_model.model_json_schema()
        if self.schema_dialect:
            return {"$schema": JSON_SCHEMA_2020_12, **_drop_titles(schema)}
        return _clean_schema(schema)

    @cached_property
    def output_schema(self) -> dict[str, Any] | None:
        """The result's full JSON Schema; nullable fields stay nullable (results send ``null``).
        Generated once (shared: never mutate it)."""
        return _drop_titles(self.output_model.model_json_schema(mode="serialization")) if self.output_model else None

    def prime_schemas(self, input_schema: dict[str, Any], output_schema: dict[str, Any] | None) -> None:
        """Use schemas generated earlier from this very model (:mod:`codeward.kernel.schema_cache`)."""
        self.__dict__["input_schema"] = input_schema  # what cached_property stores
        self.__dict__["output_schema"] = output_schema

    def fingerprint(self) -> str:
        """A hash of name, description and schemas (for pinning and change detection)."""
        blob = json.dumps([self.name, self.description, self.input_schema, self.output_schema], sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()


def tool(
    *,
    toolset: str,
    read_only: bool = False,
    destructive: bool = False,
    idempotent: bool = False,
    open_world: bool = False,
    name: str | None = None,
    title: str | None = None,
    output: type[BaseModel] | None = None,
    write_paths: tuple[str, ...] | None = None,
    schema_dialect: bool = False,
    quick: bool = False,
    examples: Iterable[Mapping[str, Any]] = (),
    aliases: Iterable[str] = (),
    hidden: bool = False,
    ask_always: bool = False,
    preview: Callable[[Mapping[str, Any], Any], str | None] | None = None,
    failure: FailureShape | None = None,
) -> Callable[[Callable[..., Result[Any]]], Callable[..., Result[Any]]]:
    """Declare a function a tool. Its docstring is the description; its signature the schema.

    ``write_paths`` defaults to every ``*path`` argument of a tool that is not read-only.
    ``examples`` are argument objects of typical calls; each must validate against the signature
    (a wrong one fails here, at import, rather than in a user's hands).
    """

    def decorate(func: Callable[..., Result[Any]]) -> Callable[..., Result[Any]]:
        tool_name = name or func.__name__
        _check_name(tool_name)
        model = _input_model(func, tool_name)
        writes = write_paths
        if writes is None:
            writes = () if read_only else tuple(f for f in model.model_fields if f.endswith("path"))
        checked = tuple(_checked_example(tool_name, model, example) for example in examples)
        other_names = tuple(aliases)
        for alias in other_names:
            _check_name(alias)
        spec = ToolSpec(
            name=tool_name,
            description=inspect.cleandoc(func.__doc__ or tool_name),
            toolset=toolset,
            module=func.__module__,
            code=ToolCode(func, model, output, preview, failure),
            annotations=Annotations(read_only, destructive, idempotent or read_only, open_world),
            title=title,
            write_paths=writes,
            schema_dialect=schema_dialect,
            quick=quick and read_only,
            examples=checked,
            aliases=other_names,
            hidden=hidden,
            ask_always=ask_always and not read_only,
        )
        setattr(func, SPEC_ATTRIBUTE, spec)
        return func

    return decorate


_LOADED = "_loaded_code"
"""Where a spec listed from the schema cache keeps its code half once imported."""


def _import_code(module: str, name: str) -> ToolCode:
    """The code of tool ``name`` from ``module``, imported now; :class:`ToolUnavailable` naming the cause."""
    try:
        found = importlib.import_module(module)
    except Exception as exc:  # an ImportError, or any error the module raises while importing
        raise ToolUnavailable(f"tool {name!r} cannot run: importing its module {module} failed: "
                              f"{type(exc).__name__}: {exc}") from exc
    for value in vars(found).values():
        spec = getattr(value, SPEC_ATTRIBUTE, None)
        if isinstance(spec, ToolSpec) and spec.name == name and spec.code is not None:
            return spec.code
    raise ToolUnavailable(f"tool {name!r} cannot run: its module {module} no longer defines it")


def spec_of(func: Callable[..., Any]) -> ToolSpec:
    spec = getattr(func, SPEC_ATTRIBUTE, None)
    if not isinstance(spec, ToolSpec):
        raise TypeError(f"{func!r} is not decorated with @tool")
    return spec


def _first_line(func: Callable[..., Any]) -> int:
    """Where a function starts in its file (its code object knows; reading the source costs ~10 ms a tool)."""
    code = getattr(inspect.unwrap(func), "__code__", None)
    return code.co_firstlineno if code is not None else inspect.getsourcelines(func)[1]


def specs_in(module: ModuleType) -> list[ToolSpec]:
    """The tools a module defines, in source order."""
    found = [v for v in vars(module).values() if isinstance(getattr(v, SPEC_ATTRIBUTE, None), ToolSpec)]
    specs = [spec_of(f) for f in found if getattr(f, "__module__", None) == module.__name__]
    return sorted(specs, key=lambda s: _first_line(s.func))


class Catalog:
    """An immutable table of tools plus the machinery to call them safely."""

    def __init__(self, specs: Iterable[ToolSpec], steps: Sequence[CallStep] | None = None) -> None:
        table: dict[str, ToolSpec] = {}
        aliases: dict[str, ToolSpec] = {}
        for spec in specs:
            if spec.name in table or spec.name in aliases:
                raise ValueError(f"tool {spec.name!r} is registered twice")
            (aliases if spec.hidden else table)[spec.name] = spec
            for alias in spec.aliases:
                if alias in table or alias in aliases:
                    raise ValueError(f"alias {alias!r} of {spec.name!r} is already a tool's name")
                aliases[alias] = spec
        self._table: Mapping[str, ToolSpec] = table
        self._aliases: Mapping[str, ToolSpec] = aliases
        self.steps: tuple[CallStep, ...] = tuple(steps) if steps is not None else kernel_steps()
        self._run = through(self.steps)

    @classmethod
    def from_functions(cls, funcs: Iterable[Callable[..., Any]]) -> Catalog:
        return cls(spec_of(f) for f in funcs)

    @classmethod
    def from_modules(cls, modules: Iterable[ModuleType], toolsets: Iterable[str] | None = None) -> Catalog:
        wanted = set(toolsets) if toolsets is not None else None
        specs = [s for m in modules for s in specs_in(m) if wanted is None or s.toolset in wanted]
        return cls(specs)

    def __contains__(self, name: object) -> bool:
        return name in self._table or name in self._aliases

    def __iter__(self) -> Iterator[ToolSpec]:
        return iter(self._table.values())

    def __len__(self) -> int:
        return len(self._table)

    def get(self, name: str) -> ToolSpec | None:
        """The tool of this name, or of this alias."""
        return self._table.get(name) or self._aliases.get(name)

    def names(self) -> list[str]:
        return list(self._table)

    def toolsets(self) -> list[str]:
        return sorted({s.toolset for s in self._table.values()})

    def hidden(self) -> list[ToolSpec]:
        """The tools callable by name but never listed (the seed's names, :attr:`ToolSpec.hidden`)."""
        return list(dict.fromkeys(s for s in self._aliases.values() if s.hidden))

    def merged(self, other: Iterable[ToolSpec]) -> Catalog:
        return Catalog([*self._table.values(), *self.hidden(), *other], self.steps)

    @property
    def locks(self) -> PathLocks | None:
        """The file locks its calls hold (its :class:`~codeward.kernel.steps.HoldWriteLocks` step's), if any."""
        return next((step.locks for step in self.steps if isinstance(step, HoldWriteLocks)), None)

    def with_steps(self, steps: Sequence[CallStep]) -> Catalog:
        """The same tools, each call run through ``steps`` (outermost first: :mod:`codeward.kernel.steps`)."""
        return Catalog([*self._table.values(), *self.hidden()], steps)

    # -- calling ------------------------------------------------------------------------

    def call(self, name: str, arguments: Mapping[str, Any] | None, ctx: ToolContext) -> ToolOutcome:
        """Validate one call and run it through the steps, synchronously. Never raises for bad input."""
        started = time.perf_counter()
        spec = self.get(name)
        if spec is None:
            result: Result[Any] = Result.fail(
                ErrorKind.NOT_FOUND, f"unknown tool {name!r}", _suggest(name, self._table)
            )
            return self._finished(_render(name, result), started)
        try:
            spec.loaded()
        except ToolUnavailable as exc:
            unavailable: Result[Any] = Result.fail(
                ErrorKind.UNAVAILABLE, str(exc),
                "The other tools still work. Fix the server's Python environment (reinstall codeward with "
                "its dependencies), then restart the server.")
            return self._finished(_render(name, unavailable), started)
        failure = spec.loaded().failure
        parsed = validate_arguments(spec, arguments)
        if not parsed.ok:
            return self._finished(_render(name, parsed, failure), started)
        values = parsed.data.model_dump() if parsed.data is not None else {}
        running = RunningCall(name=name, values=values, ctx=ctx, read_only=spec.annotations.read_only,
                              write_paths=spec.write_paths, write_targets=tuple(self._write_targets(spec, values, ctx)),
                              func=spec.func, render=partial(_render, name, failure=failure))
        return self._finished(self._run(running), started)

    @staticmethod
    def _finished(outcome: ToolOutcome, started: float) -> ToolOutcome:
        outcome.text = displayable(outcome.text)
        outcome.seconds = time.perf_counter() - started
        return outcome

    async def acall(self, name: str, arguments: Mapping[str, Any] | None, ctx: ToolContext) -> ToolOutcome:
        """:meth:`call` in a worker thread, so independent calls run in parallel.

        A ``quick`` tool on small files runs right here instead: the thread hop would cost more
        than the call (two wake-ups, and on a busy machine two waits for a CPU). Not the first call of
        a tool listed from the schema cache: importing its module would hold up the event loop.
        """
        spec = self.get(name)
        if spec is not None and spec.quick and spec.is_loaded and names_only_small_files(arguments, ctx):
            return self.call(name, arguments, ctx)
        return await anyio.to_thread.run_sync(self.call, name, arguments, ctx, abandon_on_cancel=True)

    def dispatch(self, name: str, arguments: Mapping[str, Any] | None, ctx: ToolContext) -> str:
        """The seed's ``dispatch``: the result (or the error) as text."""
        return self.call(name, arguments, ctx).text

    async def async_dispatch(self, name: str, arguments: Mapping[str, Any] | None, ctx: ToolContext) -> str:
        """The seed's ``async_dispatch``: :meth:`dispatch` off the event loop."""
        return (await self.acall(name, arguments, ctx)).text

    def _write_targets(self, spec: ToolSpec, values: Mapping[str, Any], ctx: ToolContext) -> list[Path | str]:
        """The files a call's write-path arguments name: resolved, or as given when the gate refuses them."""
        targets: list[Path | str] = []
        for param in spec.write_paths:
            raw = values.get(param)
            if isinstance(raw, str):
                resolved = ctx.workspace.resolve(raw, Access.WRITE, param=param)
                targets.append(resolved.data if resolved.ok else raw)
                if not resolved.ok:
                    continue  # the call is refused: nothing of it is written
                shown = Path(ctx.workspace.display(resolved.data))
                marker = git_marker_lock_key(Path(raw)) or git_marker_lock_key(shown)
                if marker is not None and marker not in targets:  # the repository test must see such writes done
                    targets.append(marker)
        return targets

    # -- schemas for the surfaces -------------------------------------------------------

    def openai_tools(self) -> list[dict[str, Any]]:
        """The ``tools`` array of an OpenAI-compatible chat request."""
        return [
            {"type": "function", "function": {"name": s.name, "description": s.description,
                                              "parameters": s.input_schema}}
            for s in self._table.values()
        ]


QUICK_FILE_BYTES = 256 * 1024
"""Files up to this size are read on the event loop by ``quick`` tools (well under a millisecond)."""


def names_only_small_files(arguments: Mapping[str, Any] | None, ctx: ToolContext) -> bool:
    """Whether every ``*path`` argument names a small regular file, or nothing (a quick error).

    Only a scheduling hint: the path is not resolved here (the call itself goes through the
    Workspace gate); anything else — a directory, a FIFO, a device, a big file — goes to a thread.
    """
    if not isinstance(arguments, Mapping):
        return False
    primary = os.fspath(ctx.workspace.primary)
    for key, value in arguments.items():
        if not key.endswith("path"):
            continue
        if not isinstance(value, str) or "\x00" in value:
            return False
        try:
            info = os.stat(os.path.join(primary, value))
        except (OSError, ValueError):
            continue
        if not stat.S_ISREG(info.st_mode) or info.st_size > QUICK_FILE_BYTES:
            return False
    return True


def validate_arguments(spec: ToolSpec, arguments: Mapping[str, Any] | None) -> Result[BaseModel | None]:
    """Check arguments against the tool's model; errors name the field and the expected type."""
    if arguments is not None and not isinstance(arguments, Mapping):
        return Result.fail(ErrorKind.INVALID_INPUT,
                           f"arguments of {spec.name} must be a JSON object, got {type(arguments).__name__}")
    size = _text_size(arguments)
    if size > MAX_ARGUMENT_CHARS:
        return Result.fail(ErrorKind.TOO_LARGE,
                           f"arguments of {spec.name} hold {size:,} characters; a call takes up to "
                           f"{MAX_ARGUMENT_CHARS:,}",
                           "Send big content in parts (write_file the first part, then set_file_slice or "
                           "edit_file for the rest), or have a command produce it with run_shell.")
    try:
        return Result.success(spec.input_model.model_validate(dict(arguments or {})))
    except ValidationError as exc:
        return Result.fail(ErrorKind.INVALID_INPUT, describe_validation(spec, exc),
                           f"Arguments of {spec.name}: {signature_text(spec)}.")


def _text_size(value: object) -> int:
    """Characters in every string of a JSON value (keys included): what a call asks a tool to handle."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, Mapping):
        return sum(len(str(key)) + _text_size(item) for key, item in value.items())
    if isinstance(value, list | tuple):
        return sum(_text_size(item) for item in value)
    return 0


def describe_validation(spec: ToolSpec, exc: ValidationError) -> str:
    """Every problem of a call's arguments in one line, through the describer config errors use too."""
    lines: list[str] = []
    for problem in problems(exc, spec.input_model):
        where = ".".join(str(p) for p in problem.loc) or "arguments"
        if problem.kind == "missing":
            lines.append(f"missing required argument {where!r} ({problem.expected})")
        elif problem.kind == "unknown":
            close = problem.suggestion
            hint = f"did you mean {close!r}? " if close else ""
            lines.append(f"unknown argument {where!r}; {hint}{spec.name} takes: "
                         f"{', '.join(spec.input_model.model_fields) or 'no arguments'}")
        else:
            lines.append(f"argument {where!r} {problem.fix()}")
    return f"invalid arguments for {spec.name}: " + "; ".join(lines)


def signature_text(spec: ToolSpec) -> str:
    parts = []
    for fname, info in spec.input_model.model_fields.items():
        optional = "" if info.is_required() else "?"
        parts.append(f"{fname}{optional}: {_type_name(info)}")
    return ", ".join(parts) or "none"


# -- internals -------------------------------------------------------------------------------


def _render(name: str, result: Result[Any], failure: FailureShape | None = None) -> ToolOutcome:
    """A tool's result as the outcome every surface shows: text (the error's, or the data's rendering with
    the result's notes), structure for a model result (and for a failure, when the tool gives its shape),
    rich content as it is."""
    structured: dict[str, Any] | None = None
    rich: RichContent | None = None
    if not result.ok:
        text = result.error_text()
        if failure is not None:
            structured = _displayable_json(failure(result))
    else:
        data = result.data
        if isinstance(data, RichContent):
            rich = data
            text = data.render()
        elif isinstance(data, BaseModel):
            structured = _displayable_json(data.model_dump(mode="json"))
            render = getattr(data, "render", None)
            text = render() if callable(render) else json.dumps(structured, indent=2)
        elif isinstance(data, str):
            text = data
        elif data is None:
            text = "OK"
        else:
            text = json.dumps(data, indent=2, default=str)
        if result.notes:
            text = "\n".join([text, *result.notes])
    return ToolOutcome(name=name, text=text, is_error=not result.ok, errors=list(result.errors),
                       structured=structured, rich=rich)


def _check_name(name: str) -> None:
    if not (1 <= len(name) <= 128) or any(c not in TOOL_NAME_CHARS for c in name):
        raise ValueError(f"tool name {name!r} must match ^[a-zA-Z0-9_-]{{1,128}}$")


def _checked_example(tool_name: str, model: type[BaseModel], example: Mapping[str, Any]) -> dict[str, Any]:
    """An example's arguments, frozen as plain JSON; a TypeError naming the problem if they do not validate."""
    try:
        text = json.dumps(dict(example), sort_keys=False)
        model.model_validate_json(text)
    except (TypeError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
        raise TypeError(f"tool {tool_name!r}: example {example!r} does not match its arguments: {exc}") from exc
    return json.loads(text)  # type: ignore[no-any-return]


def _input_model(func: Callable[..., Any], tool_name: str) -> type[BaseModel]:
    signature = inspect.signature(func)
    hints = get_type_hints(func, include_extras=True)
    params = list(signature.parameters.values())
    if not params or params[0].name != "ctx":
        raise TypeError(f"tool {tool_name!r}: the first parameter must be 'ctx: ToolContext'")
    fields: dict[str, Any] = {}
    for param in params[1:]:
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"tool {tool_name!r}: *args/**kwargs are not allowed")
        annotation = hints.get(param.name, Any)
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (annotation, default)
    model_name = "".join(part.capitalize() for part in tool_name.replace("-", "_").split("_")) + "Arguments"
    return create_model(model_name, __config__=ConfigDict(extra="forbid"), **fields)


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop pydantic's titles, spell optionals plainly and leave out what tells a model nothing: all of it
    only costs tokens (:func:`codeward.kernel.wire_schema.lean_input_schema`)."""
    return lean_input_schema(_drop_titles(schema))  # type: ignore[no-any-return]


def _displayable_json(value: Any) -> Any:
    """Structured output with every string made :func:`displayable` (bytes of non-UTF-8 files)."""
    if isinstance(value, str):
        return displayable(value)
    if isinstance(value, dict):
        return {displayable(k): _displayable_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_displayable_json(v) for v in value]
    return value


def _drop_titles(schema: dict[str, Any]) -> dict[str, Any]:
    if isinstance(schema, dict):
        return {k: _drop_titles(v) for k, v in schema.items() if k != "title" or not isinstance(v, str)}
    if isinstance(schema, list):
        return [_drop_titles(v) for v in schema]  # type: ignore[return-value]
    return schema


def _type_name(info: FieldInfo) -> str:
    return annotation_name(info.annotation)


def _suggest(name: str, table: Mapping[str, ToolSpec]) -> str:
    import difflib

    close = difflib.get_close_matches(name, list(table), n=3, cutoff=0.5)
    if close:
        return f"Did you mean {', '.join(close)}? List all tools with tools/list (or `codeward tools`)."
    return "List the available tools with tools/list (or `codeward tools`)."
