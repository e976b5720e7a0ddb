"""Analysis tools: symbol search, repository map, usages, class hierarchies, call paths,
file summaries and git diffs.

Repository-wide questions go to the symbol index (:mod:`codeward.engines.code_intel.symbol_index`),
refreshed incrementally before each answer, so they cost milliseconds after the first
build instead of a parse of every file.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from codeward.config.index import IndexSettings
from codeward.engines.code_intel.call_graph import CallGraphBuilder, CallNode
from codeward.engines.code_intel.file_summary import summarize
from codeward.engines.code_intel.index_rows import Symbol
from codeward.engines.code_intel.python_symbols import parse_module
from codeward.engines.code_intel.repo_map import build_repo_map
from codeward.engines.code_intel.symbol_index import CALLABLE_KINDS, CLASS_KINDS, SymbolIndex, index_root_for
from codeward.engines.code_intel.tags import Extractors, tagged_language
from codeward.engines.code_intel.usage_scan import SpanTable, Usage, locate_matches, usage_pattern
from codeward.engines.files.textfile import read_text
from codeward.engines.git import Repository, check_revision
from codeward.kernel.catalog import tool
from codeward.kernel.context import ToolContext
from codeward.kernel.result import ErrorKind, Result
from codeward.kernel.workspace import Access
from codeward.tools.arguments import Scope

TOOLSET = "analysis"
PYTHON_TOOLSET = "python"
"""``py_find_usages`` and ``py_get_hierarchy`` sit with the other ``py_*`` tools."""
BIG_REFRESH_FILES = 200
MAX_USAGES = 500
IDENTIFIER_NAME = re.compile(r"^(?!\d)\w+(\.(?!\d)\w+)*$")
r"""A name or a dotted name (``\w`` covers Unicode letters, as Python identifiers do)."""
TARGET_WITH_PATH = re.compile(r"^(.*?[^:]):(?!:)(.+)$")
"""``path:name`` (the first single colon; ``ns::f`` has none)."""



# -- output models ----------------------------------------------------------------------------


class SymbolEntry(BaseModel):
    name: str
    qualname: str
    kind: str
    path: str
    line: int
    end_line: int
    language: str
    signature: str
    bases: list[str] = Field(default_factory=list)

    @classmethod
    def of(cls, symbol: Symbol, display: str) -> SymbolEntry:
        return cls(name=symbol.name, qualname=symbol.qualname, kind=symbol.kind, path=display, line=symbol.line,
                   end_line=symbol.end_line, language=symbol.language, signature=symbol.signature,
                   bases=list(symbol.bases))

    def location(self) -> str:
        return f"{self.path}:{self.line}-{self.end_line}" if self.end_line > self.line else f"{self.path}:{self.line}"


class SymbolMatches(BaseModel):
    query: str
    total: int
    symbols: list[SymbolEntry]

    def render(self) -> str:
        lines = [f"{self.total} definition{'s' if self.total != 1 else ''} of {self.query!r}"
                 + (f" (showing {len(self.symbols)})" if self.total > len(self.symbols) else "") + ":"]
        lines.extend(f"{s.location()}  {s.kind} {s.qualname}  │ {s.signature}" for s in self.symbols)
        return "\n".join(lines)


class UsageEntry(BaseModel):
    path: str
    line: int
    column: int
    text: str
    definition: bool = False
    in_comment_or_string: bool = False


class UsageReport(BaseModel):
    name: str
    scope: str
    total: int
    usages: list[UsageEntry]

    def render(self) -> str:
        if not self.usages:
            return f"no usages of {self.name!r} in {self.scope}"
        head = f"{self.total} usage{'s' if self.total != 1 else ''} of {self.name!r} in {self.scope}"
        if self.total > len(self.usages):
            head += f" (showing the first {len(self.usages)})"
        lines = [head + ":"]
        for usage in self.usages:
            mark = " [definition]" if usage.definition else (" [comment/string]" if usage.in_comment_or_string
                                                             else "")
            lines.append(f"{usage.path}:{usage.line}:{usage.column}:{mark} {usage.text.strip()}")
        return "\n".join(lines)


class HierarchyEntry(BaseModel):
    name: str
    qualname: str
    path: str
    line: int
    base: str
    depth: int


class Hierarchy(BaseModel):
    class_name: str
    scope: str
    defined_at: list[str]
    subclasses: list[HierarchyEntry]

    def render(self) -> str:
        where = ", ".join(self.defined_at) if self.defined_at else "not defined in the index"
        lines = [f"{self.class_name} ({where})"]
        if not self.subclasses:
            lines.append(f"  no subclasses in {self.scope}")
        for entry in self.subclasses:
            lines.append(f"{'  ' * entry.depth}└─ {entry.qualname} ({entry.path}:{entry.line})"
                         + (f" via {entry.base}" if entry.depth > 1 else ""))
        return "\n".join(lines)


class CallPathNode(BaseModel):
    name: str
    qualname: str
    kind: str
    path: str
    line: int
    end_line: int
    note: str = ""
    other_candidates: int = 0
    calls: list[CallPathNode] = Field(default_factory=list)
    unresolved_calls: list[str] = Field(default_factory=list)


class CodePath(BaseModel):
    target: str
    max_depth: int
    functions: int
    truncated: bool
    root: CallPathNode

    def render(self) -> str:
        lines: list[str] = []
        _render_node(self.root, "", "", lines)
        if self.truncated:
            lines.append("[... stopped: the tree is large; lower max_depth or start from a narrower function]")
        return "\n".join(lines)


def _render_node(node: CallPathNode, prefix: str, child_prefix: str, lines: list[str]) -> None:
    span = f"{node.path}:{node.line}" + (f"-{node.end_line}" if node.end_line > node.line else "")
    notes = [node.note] if node.note else []
    if node.other_candidates:
        notes.append(f"{node.other_candidates} other definition{'s' if node.other_candidates > 1 else ''}")
    lines.append(f"{prefix}{node.qualname} ({span})" + (f" [{'; '.join(notes)}]" if notes else ""))
    for position, child in enumerate(node.calls):
        last = position == len(node.calls) - 1 and not node.unresolved_calls
        _render_node(child, child_prefix + ("└── " if last else "├── "), child_prefix + ("    " if last else "│   "),
                     lines)
    if node.unresolved_calls:
        shown = ", ".join(node.unresolved_calls[:12]) + (" ..." if len(node.unresolved_calls) > 12 else "")
        lines.append(f"{child_prefix}└── (not in the index: {shown})")


CallPathNode.model_rebuild()


# -- shared plumbing --------------------------------------------------------------------------


def _resolve_existing(ctx: ToolContext, raw: str, param: str = "path") -> Result[Path]:
    resolved = ctx.workspace.resolve(raw, Access.READ, param=param)
    if not resolved.ok:
        return resolved
    if not resolved.data.exists():
        display = ctx.workspace.display(resolved.data)
        return Result.fail(ErrorKind.NOT_FOUND, f"{param} {display!r} does not exist",
                           "List the parent directory (list_directory) to see what exists.", data=resolved.data)
    return resolved


def _existing_and_index(ctx: ToolContext, path: str, *, references: bool = True
                        ) -> Result[tuple[Path, SymbolIndex]]:
    """An existing path argument and the (refreshed) index of the root that holds it."""
    resolved = _resolve_existing(ctx, path)
    failed: Result[Any]
    if not resolved.ok:
        failed = resolved.cast(None)
        return failed
    opened = _open_index(ctx, resolved.data, references=references)
    if not opened.ok:
        failed = opened.cast(None)
        return failed
    return Result.success((resolved.data, opened.data), *opened.notes)


def _open_index(ctx: ToolContext, real: Path, *, references: bool = True) -> Result[SymbolIndex]:
    """The index of the root holding ``real``, refreshed (with progress) before use.

    ``references=False`` is enough for questions about definitions only: a cold build then
    takes them from universal-ctags (much faster) and leaves references for later.
    """
    root = index_root_for(ctx.workspace, real)
    if not (real == root or real.is_relative_to(root)):
        return Result.fail(ErrorKind.INVALID_INPUT, f"{ctx.workspace.display(real)} is an allowed file outside "
                           "the workspace roots, which the symbol index does not cover",
                           "Ask about a path under one of the roots, or use the per-file tools (py_*, code_*).")
    opened = SymbolIndex.open(ctx.workspace, root)
    if not opened.ok:
        return opened
    index = opened.data

    def report(done: int, total: int | None, message: str) -> None:
        ctx.progress(done, total, f"symbol index: {message}")

    try:
        stats = index.refresh(progress=report, cancelled=ctx.cancelled, references=references,
                              ctags=ctx.services.get(IndexSettings).ctags)
    except Exception:
        index.close()
        raise
    notes = list(opened.notes)
    if stats.parsed >= BIG_REFRESH_FILES:
        notes.append(f"[symbol index updated: {stats.describe()}]")
    if stats.cancelled:
        notes.append("[the index refresh was cancelled; answers may miss files]")
    return Result(data=index, notes=notes)


def _scope_of(index: SymbolIndex, real: Path) -> str:
    """A resolved path as the index's relative scope ('' for the whole root)."""
    if real == index.root:
        return ""
    return real.relative_to(index.root).as_posix()


def _display(ctx: ToolContext, index: SymbolIndex, rel: str) -> str:
    return ctx.workspace.display(index.root / rel)


def _not_found_hint(index: SymbolIndex, name: str, *, language: str = "", what: str = "definitions") -> str:
    close = [found for found in index.closest_names(name, language=language) if found != name]
    part = name.replace("::", ".").rsplit(".", 1)[-1]
    if close:
        return f"Closest defined names: {', '.join(close)}. Check the spelling, or search by part: '*{part}*'."
    return f"No {what} look like it either; search by part with a glob such as '*{part}*'."


# -- tools ------------------------------------------------------------------------------------


@tool(toolset=TOOLSET, read_only=True, title="Find where a symbol is defined", output=SymbolMatches,
      examples=[{"name": "Store"}, {"name": "total_*", "match": "glob"}])
def find_symbol(
    ctx: ToolContext,
    name: Annotated[str, Field(description="Plain, qualified (Class.method, ns::f), a glob, or a regex with "
                                           "match=regex.")],
    kind: Annotated[str, Field(description="class, function, method, struct, enum, macro, variable...")] = "",
    path: Scope = ".",
    match: Annotated[Literal["auto", "exact", "glob", "regex"],
                     Field(description="auto: glob if name has * ? [")] = "auto",
    limit: Annotated[int, Field(ge=1, le=500)] = 50,
) -> Result[SymbolMatches | None]:
    """Where a symbol is defined, in any language of the repository: file, lines, kind, signature (from the
    symbol index: faster than searching text)."""
    if not name.strip():
        return Result.fail(ErrorKind.INVALID_INPUT, "name is empty",
                           "Give a symbol's name, qualified or not, or a glob with * and ?.")
    if match == "regex":
        try:
            re.compile(name)
        except re.error as exc:
            return Result.fail(ErrorKind.INVALID_INPUT, f"name {name!r} is not a valid regular expression: {exc}",
                               "Fix the pattern, or use match='glob' with * and ?.")
    located = _existing_and_index(ctx, path, references=False)
    if not located.ok:
        return located.cast(None)
    real, opened_index = located.data
    with opened_index as index:
        kinds = [k.strip() for k in kind.split(",") if k.strip()]
        symbols, total = index.find(name, mode=match, kinds=kinds, under=_scope_of(index, real),
                                    limit=limit)
        if not symbols:
            scope = ctx.workspace.display(real)
            what = f" of kind {kind!r}" if kind else ""
            return Result(data=None, errors=Result.fail(
                ErrorKind.NOT_FOUND, f"no definition{what} matches {name!r} in {scope}",
                _not_found_hint(index, name)).errors, notes=located.notes)
        entries = [SymbolEntry.of(s, _display(ctx, index, s.path)) for s in symbols]
        notes = list(located.notes)
        if any(symbol.id == 0 for symbol in symbols):  # answered by the quick (universal-ctags) tier
            notes.append("[from the quick index (universal-ctags): a range starts at the name's line, without "
                         "decorators; exact ranges come once references are built, by the first usage question]")
        return Result(data=SymbolMatches(query=name, total=total, symbols=entries), notes=notes)


@tool(toolset=TOOLSET, read_only=True, title="Repository map",
      examples=[{"path": ".", "max_tokens": 400}])
def repo_map(
    ctx: ToolContext,
    path: str = ".",
    max_tokens: Annotated[int, Field(ge=64, le=32000)] = 1024,
    focus: Annotated[list[str], Field(description="Files you work on: ranks what they use and what uses them "
                                                  "higher.")] = [],  # noqa: B006
) -> Result[str]:
    """A first look at a repository: its most used definitions, ranked, within max_tokens."""
    resolved = _resolve_existing(ctx, path)
    if not resolved.ok:
        return resolved.cast("")
    if not resolved.data.is_dir():
        return Result.fail(ErrorKind.INVALID_INPUT, f"{ctx.workspace.display(resolved.data)} is a file",
                           "Give a directory; for one file use get_file_summary.", data="")
    opened = _open_index(ctx, resolved.data)
    if not opened.ok:
        return opened.cast("")
    with opened.data as index:
        focus_rel: list[str] = []
        for raw in focus:
            focused = _resolve_existing(ctx, raw, param="focus")
            if not focused.ok:
                return focused.cast("")
            if not focused.data.is_relative_to(index.root):
                return Result.fail(ErrorKind.INVALID_INPUT, f"focus {raw!r} is not under the mapped root",
                                   "Give files inside the directory being mapped.", data="")
            focus_rel.append(focused.data.relative_to(index.root).as_posix())
        built = build_repo_map(index, under=_scope_of(index, resolved.data), focus=tuple(focus_rel),
                               max_tokens=max_tokens)
        scope = ctx.workspace.display(resolved.data)
        if not built.text:
            return Result(data=f"no definitions indexed under {scope} (no supported source files?)",
                          notes=opened.notes)
        header = (f"Repository map of {scope}: {built.shown} of {built.definitions} definitions in "
                  f"{built.files} files, ranked by use (≈{built.tokens} tokens)\n")
        return Result(data=header + built.text, notes=opened.notes)


@tool(toolset=PYTHON_TOOLSET, read_only=True, title="Find usages of a Python name", output=UsageReport,
      examples=[{"path": "src", "name": "total_price"}])
def py_find_usages(
    ctx: ToolContext,
    path: Scope,
    name: Annotated[str, Field(description="An identifier, or dotted (module.name, Class.attr).")],
) -> Result[UsageReport | None]:
    """Every use of a Python name, whatever it refers to (whole identifiers). For the uses of one symbol,
    py_find_references."""
    if not IDENTIFIER_NAME.match(name.strip()):
        return Result.fail(ErrorKind.INVALID_INPUT, f"name {name!r} is not an identifier",
                           "Give a Python name such as 'load_config' or a dotted one such as 'os.path.join'.")
    name = name.strip()
    resolved = _resolve_existing(ctx, path)
    if not resolved.ok:
        return resolved.cast(None)
    real = resolved.data
    scope = ctx.workspace.display(real)
    if real.is_file():
        return _usages_in_file(ctx, real, name)
    opened = _open_index(ctx, real)
    if not opened.ok:
        return opened.cast(None)
    with opened.data as index:
        under = _scope_of(index, real)
        notes = list(opened.notes)
        members = _defined_members(index, name)
        if members:  # Class.method: its uses are attribute accesses (obj.method), rarely the dotted text
            found, total = _member_usages(index, name, members, under)
            notes.append(_member_note(name, members, index.root, ctx))
        else:
            found, total = index.usages(name, under=under, language="python", limit=MAX_USAGES)
        entries = [UsageEntry(path=_display(ctx, index, u.path), line=u.line, column=u.column, text=u.text,
                              definition=u.definition) for u in found]
        if not entries:
            hint = _not_found_hint(index, name, language="python", what="names")
            return Result(data=UsageReport(name=name, scope=scope, total=0, usages=[]),
                          notes=[*notes, f"[no Python code in {scope} uses {name!r}. {hint}]"])
        return Result(data=UsageReport(name=name, scope=scope, total=total, usages=entries), notes=notes)


def _defined_members(index: SymbolIndex, name: str) -> list[Symbol]:
    """The Python definitions whose qualified name is exactly the dotted ``name`` (a method, a nested class)."""
    if "." not in name:
        return []
    symbols, _total = index.find(name, mode="exact", language="python", limit=20)
    return [symbol for symbol in symbols if symbol.qualname == name]


def _member_usages(index: SymbolIndex, name: str, members: list[Symbol], under: str) -> tuple[list[Usage], int]:
    """Uses of a member's own name as an attribute (``x.member``), and the member's definitions."""
    last = name.rsplit(".", 1)[-1]
    plain, _total = index.usages(last, under=under, language="python", limit=MAX_USAGES * 10)
    own = {(symbol.path, symbol.name_line) for symbol in members}
    kept = [u for u in plain if ((u.path, u.line) in own if u.definition else _is_attribute_access(u.text, u.column))]
    return kept[:MAX_USAGES], len(kept)


def _is_attribute_access(line: str, column: int) -> bool:
    """Whether the name at 1-based ``column`` of ``line`` follows a dot (``obj.name``, ``obj . name``)."""
    return line[: column - 1].rstrip().endswith(".")


def _member_note(name: str, members: list[Symbol], root: Path, ctx: ToolContext) -> str:
    where = ", ".join(f"{ctx.workspace.display(root / m.path)}:{m.line}" for m in members[:3])
    last = name.rsplit(".", 1)[-1]
    return (f"[{name} is defined at {where}; its uses are found by the attribute name .{last} (static: a "
            f".{last} of another class is counted too)]")


def _usages_in_file(ctx: ToolContext, real: Path, name: str) -> Result[UsageReport | None]:
    """One file, as the seed did it: every exact occurrence, comments and strings marked."""
    display = ctx.workspace.display(real)
    loaded = read_text(real, display, ctx.workspace)
    if not loaded.ok:
        return loaded.cast(None)
    source = loaded.data.text.encode("utf-8", "surrogateescape")
    language = tagged_language(real.name)
    spans = SpanTable.unpack(Extractors().extract(language, source).masked if language else b"")
    member_lines = _member_lines(loaded.data.text, name) if language == "python" else set()
    if member_lines:  # Class.method: the attribute name after a dot, and the definition itself
        last = name.rsplit(".", 1)[-1]
        matches = [m for m in locate_matches(source, usage_pattern(last), spans)
                   if m.line in member_lines or _is_attribute_access(m.text, m.column)]
    else:
        matches = locate_matches(source, usage_pattern(name), spans)
    usages = [UsageEntry(path=display, line=m.line, column=m.column, text=m.text, in_comment_or_string=m.masked,
                         definition=m.line in member_lines) for m in matches]
    return Result.success(UsageReport(name=name, scope=display, total=len(usages), usages=usages[:MAX_USAGES]))


def _member_lines(text: str, name: str) -> set[int]:
    """The ``def``/``class`` lines of the file's definitions named exactly ``name`` (dotted), if any."""
    if "." not in name:
        return set()

    try:
        module = parse_module(text)
    except SyntaxError:
        return set()
    return {getattr(symbol.node, "lineno", symbol.start_line) for symbol in module.find(name)}


@tool(toolset=PYTHON_TOOLSET, read_only=True, title="Python class hierarchy", output=Hierarchy,
      examples=[{"path": "src", "class_name": "Item"}])
def py_get_hierarchy(
    ctx: ToolContext,
    path: Scope,
    class_name: Annotated[str, Field(description="Plain, or qualified by its module.")],
) -> Result[Hierarchy | None]:
    """Every subclass of a Python class, transitively."""
    class_name = class_name.strip()
    if not IDENTIFIER_NAME.match(class_name):
        return Result.fail(ErrorKind.INVALID_INPUT, f"class_name {class_name!r} is not a class name",
                           "Give the base class's name, plain or qualified by its module (dots between the parts).")
    located = _existing_and_index(ctx, path)
    if not located.ok:
        return located.cast(None)
    real, opened_index = located.data
    with opened_index as index:
        scope = _scope_of(index, real)
        short = class_name.rsplit(".", 1)[-1]
        definitions, _total = index.find(short, mode="exact", kinds=CLASS_KINDS, language="python", limit=20)
        found = index.subclasses(short, language="python")
        in_scope = [(s, base, depth) for s, base, depth in found
                    if not scope or s.path == scope or s.path.startswith(scope.rstrip("/") + "/")]
        if not definitions and not found:
            return Result(data=None, errors=Result.fail(
                ErrorKind.NOT_FOUND, f"no Python class named {class_name!r} is defined or subclassed in the "
                f"workspace", _not_found_hint(index, short, language="python", what="classes")).errors,
                notes=located.notes)
        entries = [HierarchyEntry(name=s.name, qualname=s.qualname, path=_display(ctx, index, s.path), line=s.line,
                                  base=base, depth=depth) for s, base, depth in _tree_order(in_scope)]
        defined = [f"{_display(ctx, index, d.path)}:{d.line}" for d in definitions]
        hierarchy = Hierarchy(class_name=class_name, scope=ctx.workspace.display(real), defined_at=defined,
                              subclasses=entries)
        notes = list(located.notes)
        if entries:
            notes.append("[bases are matched by name; classes named alike in different modules are not told apart]")
        return Result(data=hierarchy, notes=notes)


def _tree_order(found: list[tuple[Symbol, str, int]]) -> list[tuple[Symbol, str, int]]:
    """Breadth-first results reordered depth-first, so each subclass follows its base."""
    children: dict[str, list[tuple[Symbol, str, int]]] = {}
    for item in found:
        children.setdefault(item[1], []).append(item)
    ordered: list[tuple[Symbol, str, int]] = []
    seen: set[int] = set()

    def visit(key: str, depth: int) -> None:
        for item in children.get(key, []):
            symbol = item[0]
            if symbol.id in seen or item[2] != depth:
                continue
            seen.add(symbol.id)
            ordered.append(item)
            visit(symbol.name, depth + 1)

    roots = sorted({item[1] for item in found if item[2] == 1})
    for root in roots:
        visit(root, 1)
    ordered.extend(item for item in found if item[0].id not in seen)
    return ordered


@tool(toolset=TOOLSET, read_only=True, title="Trace a call path", output=CodePath,
      examples=[{"target": "summary", "max_depth": 2}])
def derive_code_path(
    ctx: ToolContext,
    target: Annotated[str, Field(description="A function or Class.method; path:name when several files "
                                             "define it.")],
    max_depth: Annotated[int, Field(ge=1, le=10)] = 3,
) -> Result[CodePath | None]:
    """The tree of what a function calls, across files, max_depth calls deep."""
    parsed = _parse_target(ctx, target)
    if not parsed.ok:
        return parsed.cast(None)
    real, name = parsed.data
    opened = _open_index(ctx, real or ctx.workspace.primary)
    if not opened.ok:
        return opened.cast(None)
    with opened.data as index:
        under = _scope_of(index, real) if real is not None else ""
        candidates, _total = index.find(name, mode="exact", kinds=CALLABLE_KINDS, under=under, limit=50)
        exact = [c for c in candidates if c.qualname == name.replace("::", ".")]
        candidates = exact or candidates
        if not candidates:
            return Result(data=None, errors=Result.fail(
                ErrorKind.NOT_FOUND, f"no function or method named {name!r}"
                + (f" in {ctx.workspace.display(real)}" if real is not None else " in the workspace"),
                _not_found_hint(index, name)).errors, notes=opened.notes)
        bodies = [c for c in candidates if c.kind != "prototype"] or candidates
        if len({(c.path, c.qualname) for c in bodies}) > 1:
            listed = "; ".join(f"{_display(ctx, index, c.path)}:{c.qualname}" for c in bodies[:10])
            return Result(data=None, errors=Result.fail(
                ErrorKind.CONFLICT, f"{name!r} is defined {len(bodies)} times: {listed}",
                "Pick one with 'path:name', e.g. target='" + f"{_display(ctx, index, bodies[0].path)}:"
                f"{bodies[0].qualname}'.").errors, notes=opened.notes)
        builder = CallGraphBuilder(index, max_depth)
        tree = builder.build(bodies[0])
        result = CodePath(target=target, max_depth=max_depth, functions=builder.nodes, truncated=builder.truncated,
                          root=_to_model(ctx, index, tree))
        notes = [*opened.notes, "[calls are resolved by name (static); dynamic dispatch is not followed]"]
        return Result(data=result, notes=notes)


def _parse_target(ctx: ToolContext, target: str) -> Result[tuple[Path | None, str]]:
    text = target.strip()
    if not text:
        return Result.fail(ErrorKind.INVALID_INPUT, "target is empty",
                           "Give a function name such as 'main' or 'app.py:main'.", data=(None, ""))
    with_path = TARGET_WITH_PATH.match(text)
    real: Path | None = None
    if with_path:
        resolved = _resolve_existing(ctx, with_path.group(1).strip(), param="target path")
        if not resolved.ok:
            return resolved.cast((None, ""))
        text = with_path.group(2).strip()
        real = resolved.data
    if not IDENTIFIER_NAME.match(text.replace("::", ".")):
        return Result.fail(ErrorKind.INVALID_INPUT, f"target {target!r} does not name a function",
                           "Give a function's name (a method: its class, a dot, its name), optionally after "
                           "the file's path and a colon.", data=(None, ""))
    return Result.success((real, text))


def _to_model(ctx: ToolContext, index: SymbolIndex, node: CallNode) -> CallPathNode:
    symbol = node.symbol
    return CallPathNode(
        name=symbol.name, qualname=symbol.qualname, kind=symbol.kind, path=_display(ctx, index, symbol.path),
        line=symbol.line, end_line=symbol.end_line, note=node.note, other_candidates=node.alternatives,
        calls=[_to_model(ctx, index, child) for child in node.calls], unresolved_calls=list(node.unresolved),
    )


@tool(toolset=TOOLSET, read_only=True, title="Summarize a file",
      examples=[{"path": "src/inventory/store.py"}])
def get_file_summary(ctx: ToolContext, path: str) -> Result[str]:
    """A file in brief: a Python file's imports, classes, functions and constants; TOML tables; Markdown
    headings; other code's outline."""
    resolved = _resolve_existing(ctx, path)
    if not resolved.ok:
        return resolved.cast("")
    display = ctx.workspace.display(resolved.data)
    if resolved.data.is_dir():
        return Result.fail(ErrorKind.INVALID_INPUT, f"{display} is a directory",
                           "Give a file; for a directory use repo_map or get_tree.", data="")
    loaded = read_text(resolved.data, display, ctx.workspace)
    if not loaded.ok:
        return loaded.cast("")
    return summarize(loaded.data.text, display)


@tool(toolset=TOOLSET, read_only=True, title="Git diff",
      examples=[{"path": "src"}])
def get_git_diff(
    ctx: ToolContext,
    path: str = ".",
    base_rev: Annotated[str, Field(description="'': the index (staged changes).")] = "HEAD",
    head_rev: Annotated[str, Field(description="'': the files on disk.")] = "",
    context_lines: Annotated[int, Field(ge=0, le=50)] = 3,
) -> Result[str]:
    """The git diff of a file or folder between two revisions; by default your uncommitted changes (HEAD to
    the files on disk)."""
    resolved = _resolve_existing(ctx, path)
    if not resolved.ok:
        return resolved.cast("")
    revisions: list[str] = []
    for param, value in (("base_rev", base_rev), ("head_rev", head_rev)):
        if not value.strip():
            revisions.append("")
            continue
        checked = check_revision(value, param)
        if not checked.ok:
            return checked
        if ".." in checked.data:
            return Result.fail(ErrorKind.INVALID_INPUT, f"{param} {value!r} is a range",
                               "Give the two ends separately: base_rev='main', head_rev='HEAD'.", data="")
        revisions.append(checked.data)
    if not revisions[0] and revisions[1]:
        return Result.fail(ErrorKind.INVALID_INPUT, "head_rev is set but base_rev is empty",
                           "Give base_rev too (e.g. base_rev='HEAD~1', head_rev='HEAD').", data="")
    repository = Repository.discover(ctx.workspace, resolved.data)
    if not repository.ok:
        return repository.cast("")
    ran = repository.data.diff(resolved.data, revisions[0], revisions[1], context_lines)
    if not ran.ok or ran.data:
        return ran
    display = ctx.workspace.display(resolved.data)
    base = revisions[0] or "the index"
    head = revisions[1] or "the files on disk"
    return Result(data=f"no differences in {display} between {base} and {head}", notes=ran.notes)
