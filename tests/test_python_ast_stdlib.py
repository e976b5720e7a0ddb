"""Ground truth nobody here wrote: the Python tools against ``inspect`` on the standard library.

Functions, classes and methods are sampled deterministically from installed stdlib modules;
the tools read the very files ``inspect`` reads, through a Workspace rooted at the stdlib
directory, and must agree with ``inspect.getsource`` (decorators included), with
``inspect.signature`` (parameter names, kinds, defaults; async; return annotation) and with
the cleaned ``__doc__``. ``bench/ast_agreement.py`` runs the same comparison on more modules.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import sysconfig
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codeward.kernel.catalog import Catalog
from codeward.kernel.context import ToolContext
from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.workspace import Workspace

SAMPLE_MODULES: tuple[str, ...] = (
    "json.decoder", "json.encoder", "argparse", "pathlib", "collections", "email.message",
    "email.utils", "email.headerregistry", "http.client", "http.cookiejar", "asyncio.tasks",
    "asyncio.queues", "asyncio.locks", "functools", "enum", "dataclasses", "textwrap", "difflib",
    "contextlib", "configparser", "fractions", "string", "shlex", "ipaddress", "typing",
)
SAMPLE_SIZE = 400
REQUIRED_RATE = 0.98
Caller = Callable[..., ToolOutcome]


@dataclass(frozen=True)
class Sample:
    module: str
    rel_path: str
    qualname: str
    obj: Any
    line: int
    source: str


@dataclass
class Agreement:
    """Counts and the disagreements found, per property checked."""

    checked: dict[str, int] = field(default_factory=lambda: {"definition": 0, "signature": 0, "docstring": 0})
    agreed: dict[str, int] = field(default_factory=lambda: {"definition": 0, "signature": 0, "docstring": 0})
    disagreements: list[str] = field(default_factory=list)
    ambiguous_names: int = 0

    def record(self, what: str, ok: bool, sample: Sample, detail: str = "") -> None:
        self.checked[what] += 1
        if ok:
            self.agreed[what] += 1
        else:
            self.disagreements.append(f"{what}: {sample.rel_path}::{sample.qualname} (line {sample.line}) {detail}")

    def rate(self, what: str) -> float:
        return self.agreed[what] / self.checked[what] if self.checked[what] else 0.0

    def summary(self) -> str:
        rows = [f"{what:<10} {self.agreed[what]:>4}/{self.checked[what]:<4} = {self.rate(what):.2%}"
                for what in self.checked]
        rows.append(f"names defined more than once (resolved by line): {self.ambiguous_names}")
        return "\n".join(rows)


def stdlib_dir() -> Path:
    return Path(sysconfig.get_paths()["stdlib"]).resolve()


def _candidates(module: Any) -> Iterator[Any]:
    """Module-level functions and classes, and the functions, properties and classes inside classes."""
    pending = [obj for _, obj in sorted(vars(module).items()) if inspect.isclass(obj) or inspect.isfunction(obj)]
    while pending:
        obj = pending.pop(0)
        yield obj
        if not inspect.isclass(obj):
            continue
        for _, member in sorted(vars(obj).items()):
            if isinstance(member, staticmethod | classmethod):
                member = member.__func__
            if isinstance(member, property):
                yield from (f for f in (member.fget, member.fset) if inspect.isfunction(f))
            elif inspect.isfunction(member):
                yield member
            elif inspect.isclass(member) and member.__qualname__.startswith(obj.__qualname__ + "."):
                pending.append(member)


def collect_samples(modules: Iterable[str], limit: int | None) -> list[Sample]:
    """A deterministic sample of stdlib objects whose source lives in their module's own file.

    Candidates are sorted and thinned to ``limit`` before ``inspect`` reads any source,
    because ``inspect`` re-parses the whole file for every class it locates.
    """
    root = stdlib_dir()
    candidates: dict[tuple[str, str, int], tuple[str, Path, Any]] = {}
    for name in modules:
        module = importlib.import_module(name)
        file = Path(inspect.getsourcefile(module) or "").resolve()
        if not file.is_relative_to(root):
            continue
        for candidate in _candidates(module):
            obj = inspect.unwrap(candidate)
            qualname = getattr(obj, "__qualname__", "")
            if "<locals>" in qualname or "<lambda>" in qualname or getattr(obj, "__module__", None) != name:
                continue
            code = getattr(obj, "__code__", None)
            if code is not None and Path(code.co_filename).resolve() != file:
                continue
            first_line = code.co_firstlineno if code is not None else 0
            candidates.setdefault((file.relative_to(root).as_posix(), qualname, first_line), (name, file, obj))
    keys = sorted(candidates)
    if limit is not None and len(keys) > limit:
        stride = len(keys) / limit
        keys = [keys[int(i * stride)] for i in range(limit)]
    samples: list[Sample] = []
    for rel_path, qualname, _ in keys:
        name, file, obj = candidates[(rel_path, qualname, _)]
        try:
            if Path(inspect.getsourcefile(obj) or "").resolve() != file:
                continue
            lines, line = inspect.getsourcelines(obj)
        except (OSError, TypeError):
            continue
        samples.append(Sample(name, rel_path, qualname, obj, line, "".join(lines)))
    return samples


def _pick(outcome: ToolOutcome, line: int) -> tuple[str | None, bool] | None:
    """The text of the occurrence starting at ``line`` (and whether the name was ambiguous)."""
    if outcome.is_error or outcome.structured is None:
        return None
    occurrences = outcome.structured["occurrences"]
    for occurrence in occurrences:
        if occurrence["start_line"] == line:
            return occurrence["text"], len(occurrences) > 1
    return None


def _params_from_header(header: str) -> tuple[str, bool, list[tuple[str, str, bool]], bool] | None:
    try:
        node = ast.parse(header + "\n    ...\n").body[0]
    except SyntaxError:
        return None
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return None
    args = node.args
    positional = [(a.arg, "POSITIONAL_ONLY") for a in args.posonlyargs] + \
        [(a.arg, "POSITIONAL_OR_KEYWORD") for a in args.args]
    first_default = len(positional) - len(args.defaults)
    params = [(n, k, i >= first_default) for i, (n, k) in enumerate(positional)]
    if args.vararg:
        params.append((args.vararg.arg, "VAR_POSITIONAL", False))
    params += [(a.arg, "KEYWORD_ONLY", d is not None) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)]
    if args.kwarg:
        params.append((args.kwarg.arg, "VAR_KEYWORD", False))
    return node.name, isinstance(node, ast.AsyncFunctionDef), params, node.returns is not None


def _params_from_inspect(obj: Any) -> tuple[str, bool, list[tuple[str, str, bool]], bool]:
    signature = inspect.signature(obj, follow_wrapped=False)
    params = [(p.name, p.kind.name, p.default is not inspect.Parameter.empty) for p in signature.parameters.values()]
    is_async = inspect.iscoroutinefunction(obj) or inspect.isasyncgenfunction(obj)
    # the code object keeps the name as written (decorators such as total_ordering rename __name__)
    return obj.__code__.co_name, is_async, params, "return" in getattr(obj, "__annotations__", {})


def _class_header_agrees(header: str, cls: type) -> bool:
    try:
        node = ast.parse(header + "\n    ...\n").body[0]
    except SyntaxError:
        return False
    if not isinstance(node, ast.ClassDef) or node.name != cls.__name__:
        return False
    declared = cls.__dict__.get("__orig_bases__", cls.__bases__)
    return len(node.bases) == len(declared) or (not node.bases and cls.__bases__ == (object,))


def measure(call: Caller, samples: list[Sample]) -> Agreement:
    """Run the three read tools on every sample and compare with inspect."""
    agreement = Agreement()
    for sample in samples:
        args = {"path": sample.rel_path, "name": sample.qualname}
        picked = _pick(call("py_get_definition", **args), sample.line)
        text, ambiguous = picked if picked else (None, False)
        agreement.ambiguous_names += ambiguous
        agreement.record("definition", text == sample.source, sample,
                         "" if picked else "(no occurrence at inspect's line)")
        header = _pick(call("py_get_signature", **args), sample.line)
        if inspect.isclass(sample.obj):
            ok = header is not None and header[0] is not None and _class_header_agrees(header[0], sample.obj)
        else:
            ours = _params_from_header(header[0]) if header and header[0] else None
            ok = ours == _params_from_inspect(sample.obj)
        agreement.record("signature", ok, sample, f"header={header[0] if header else None!r}")
        doc = _pick(call("py_get_docstring", **args), sample.line)
        raw = sample.obj.__dict__.get("__doc__") if inspect.isclass(sample.obj) else sample.obj.__doc__
        expected = inspect.cleandoc(raw) if isinstance(raw, str) else None
        agreement.record("docstring", doc is not None and doc[0] == expected, sample)
    return agreement


def stdlib_caller(catalog: Catalog) -> Caller:
    """Call tools with a Workspace rooted at the standard library directory."""
    ctx = ToolContext(Workspace.create([stdlib_dir()]))

    def run(tool_name: str, /, **arguments: Any) -> ToolOutcome:
        return catalog.call(tool_name, arguments, ctx)

    return run


def test_python_tools_agree_with_inspect_on_the_standard_library(catalog: Catalog) -> None:
    samples = collect_samples(SAMPLE_MODULES, SAMPLE_SIZE)
    assert len(samples) >= 300, f"only {len(samples)} stdlib objects sampled"
    kinds = {"class": sum(inspect.isclass(s.obj) for s in samples),
             "method": sum("." in s.qualname and not inspect.isclass(s.obj) for s in samples)}
    assert kinds["class"] >= 30 and kinds["method"] >= 100, kinds
    assert any("@" in s.source.splitlines()[0] for s in samples), "the sample should include decorated definitions"
    agreement = measure(stdlib_caller(catalog), samples)
    print(f"\nstdlib agreement over {len(samples)} objects:\n{agreement.summary()}")
    failures = "\n".join(agreement.disagreements[:40])
    for what in agreement.checked:
        assert agreement.rate(what) >= REQUIRED_RATE, f"{what} agreement {agreement.rate(what):.2%}:\n{failures}"
