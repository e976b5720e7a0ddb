"""Structural code tools over tree-sitter: outline, skeleton, definition, signature, update.

Two families share one engine (:mod:`codeward.engines.code_intel.outline_ops`):

* ``ts_c_*`` and ``ts_cpp_*`` (toolset ``cpp``) parse any file as C or C++ — headers
  without an extension (``<vector>``) included;
* ``code_*`` (toolset ``code``) pick the language from the file extension: C, C++, Python,
  JavaScript, TypeScript/TSX, Go, Rust, Java, C#, Ruby, PHP, Kotlin, Swift, Lua, Bash.

Updates replace one definition, re-parse the file, and refuse (writing nothing) when the
new text introduces a syntax error; writes are atomic and keep encoding, BOM and newlines.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel

from codeward.engines.code_intel.outline_model import OutlineCache, ParsedSource, Symbol
from codeward.engines.code_intel.outline_ops import (
    C_FAMILY,
    definition_text,
    find_symbol,
    replace_definition,
    signature_text,
    skeleton,
)
from codeward.engines.code_intel.treesitter import GrammarUnavailable, extensions_text, language_for_path, language_info
from codeward.engines.files.textfile import TextFile, read_text, write_text
from codeward.kernel.catalog import tool
from codeward.kernel.context import ToolContext
from codeward.kernel.result import ErrorKind, Result
from codeward.kernel.workspace import Access
from codeward.tools.arguments import CodeSymbol, NewDefinition

MAX_SOURCE_BYTES = 8_000_000


class OutlineSymbol(BaseModel):
    """One definition: its own name, full name, and the name as shown under its parent."""

    name: str
    qualified_name: str
    display_name: str
    """Relative to the enclosing symbol: ``Foo::bar`` for an out-of-line method at file level."""
    kind: str
    start_line: int
    end_line: int
    depth: int
    detail: str = ""
    definition: bool = True


class CodeOutline(BaseModel):
    """Definitions of one file in source order, nested by ``depth``."""

    path: str
    language: str
    symbols: list[OutlineSymbol]

    def render(self) -> str:
        if not self.symbols:
            return f"{self.path} ({self.language}): no definitions found"
        lines = [f"{self.path} ({self.language}, {len(self.symbols)} symbols)"]
        for s in self.symbols:
            detail = f" {s.detail}" if s.detail else ""
            declared = "" if s.definition or s.kind == "prototype" else " (declaration)"
            lines.append(f"{'  ' * s.depth}[{s.kind.capitalize()}] {s.display_name}{detail}{declared} "
                         f"(Lines {s.start_line}-{s.end_line})")
        return "\n".join(lines)


@dataclass(frozen=True)
class _Source:
    real: Path
    display: str
    file: TextFile
    parsed: ParsedSource
    language_display: str


def _load(ctx: ToolContext, path: str, forced: str | None, access: Access = Access.READ) -> Result[_Source | None]:
    resolved = ctx.workspace.resolve(path, access)
    if not resolved.ok:
        return resolved.cast(None)
    real = resolved.data
    display = ctx.workspace.display(real)
    language = _choose_language(real, display, forced)
    if not language.ok:
        return language.cast(None)
    if real.is_file() and real.stat().st_size > MAX_SOURCE_BYTES:
        return Result.fail(ErrorKind.TOO_LARGE, f"{display} is {real.stat().st_size:,} bytes, more than the "
                           f"{MAX_SOURCE_BYTES:,} these tools parse", "Use get_file_slice or search on it instead.")
    loaded = read_text(real, display, ctx.workspace)
    if not loaded.ok:
        return loaded.cast(None)
    try:
        parsed = ctx.services.runtimes.get(OutlineCache, OutlineCache).parse(loaded.data.text, language.data)
    except GrammarUnavailable as exc:
        return Result.fail(ErrorKind.UNAVAILABLE, str(exc),
                           "Reinstall codeward's dependencies (tree-sitter-language-pack).")
    except RecursionError:
        return Result.fail(ErrorKind.TOO_LARGE, f"{display} is nested too deeply to outline",
                           "Use get_file_slice or search_files on it instead.")
    info = language_info(language.data)
    return Result.success(_Source(real, display, loaded.data, parsed, info.display if info else language.data))


def _choose_language(real: Path, display: str, forced: str | None) -> Result[str]:
    detected = language_for_path(real)
    if forced is None:
        if detected is None:
            return Result.fail(
                ErrorKind.INVALID_INPUT,
                f"{display}: the extension {real.suffix or '(none)'!r} is not a supported source language",
                f"Supported: {extensions_text()}. For C/C++ headers without an extension use the ts_cpp_* tools.",
                data="")
        return Result.success(detected)
    if detected is not None and detected not in C_FAMILY:
        info = language_info(detected)
        name = info.display if info else detected
        return Result.fail(ErrorKind.INVALID_INPUT, f"{display} is a {name} file, not C or C++",
                           "Use the code_* tools (code_get_outline, code_get_definition, ...) for other languages.",
                           data="")
    return Result.success(forced)


def _outline(ctx: ToolContext, path: str, forced: str | None) -> Result[CodeOutline | None]:
    loaded = _load(ctx, path, forced)
    if not loaded.ok or loaded.data is None:
        return loaded.cast(None)
    source = loaded.data
    symbols = [OutlineSymbol(name=s.name, display_name=s.local, qualified_name=s.qualified, kind=s.kind,
                             start_line=s.start_line, end_line=s.end_line, depth=s.depth, detail=s.detail,
                             definition=s.definition) for s in source.parsed.symbols]
    return Result.success(CodeOutline(path=source.display, language=source.language_display, symbols=symbols))


def _skeleton(ctx: ToolContext, path: str, forced: str | None) -> Result[str]:
    loaded = _load(ctx, path, forced)
    if not loaded.ok or loaded.data is None:
        return loaded.cast("")
    return Result.success(skeleton(loaded.data.parsed))


def _find(ctx: ToolContext, path: str, name: str, forced: str | None, *, unique: bool,
          access: Access = Access.READ) -> Result[tuple[_Source, Symbol] | None]:
    loaded = _load(ctx, path, forced, access)
    if not loaded.ok or loaded.data is None:
        return loaded.cast(None)
    found = find_symbol(loaded.data.parsed, name, loaded.data.display, unique=unique)
    if not found.ok or found.data is None:
        return found.cast(None)
    return Result((loaded.data, found.data), notes=found.notes)


def _definition(ctx: ToolContext, path: str, name: str, forced: str | None) -> Result[str]:
    found = _find(ctx, path, name, forced, unique=False)
    if not found.ok or found.data is None:
        return found.cast("")
    source, symbol = found.data
    return found.cast(definition_text(source.parsed, symbol))


def _signature(ctx: ToolContext, path: str, name: str, forced: str | None) -> Result[str]:
    found = _find(ctx, path, name, forced, unique=False)
    if not found.ok or found.data is None:
        return found.cast("")
    source, symbol = found.data
    return found.cast(signature_text(source.parsed, symbol))


def _update(ctx: ToolContext, path: str, name: str, new_content: str, forced: str | None) -> Result[str]:
    found = _find(ctx, path, name, forced, unique=True, access=Access.WRITE)
    if not found.ok or found.data is None:
        return found.cast("")
    source, symbol = found.data
    replaced = replace_definition(source.parsed, symbol, new_content, source.display)
    if not replaced.ok:
        return replaced.cast("")
    change = replaced.data
    if change.text == source.file.text:
        return Result.success(f"{symbol.qualified} in {source.display} is already exactly that; nothing was written.")
    written = write_text(source.real, source.file, change.text, source.display, ctx.workspace)
    if not written.ok:
        return written.cast("")
    old_lines = f"{symbol.start_line}-{symbol.end_line}"
    return Result.success(f"Replaced {symbol.kind} {symbol.qualified} in {source.display} "
                          f"(was lines {old_lines}, now lines {change.start_line}-{change.end_line}).", *change.notes)


# -- C ------------------------------------------------------------------------------------


@tool(toolset="cpp", read_only=True, output=CodeOutline, title="C outline",
      examples=[{"path": "native/ring_buffer.c"}])
def ts_c_get_code_outline(ctx: ToolContext, path: str) -> Result[CodeOutline | None]:
    """A C file's definitions with their lines: structs, functions, prototypes, enums, typedefs."""
    return _outline(ctx, path, "c")


@tool(toolset="cpp", read_only=True, title="C skeleton",
      examples=[{"path": "native/ring_buffer.c"}])
def ts_c_get_skeleton(ctx: ToolContext, path: str) -> Result[str]:
    """A C file with function bodies elided."""
    return _skeleton(ctx, path, "c")


@tool(toolset="cpp", read_only=True, title="C definition",
      examples=[{"path": "native/ring_buffer.c", "name": "ring_push"}])
def ts_c_get_definition(ctx: ToolContext, path: str, name: CodeSymbol) -> Result[str]:
    """One C function, struct, union, enum or typedef, whole."""
    return _definition(ctx, path, name, "c")


@tool(toolset="cpp", title="Replace a C definition",
      examples=[
          {
              "path": "native/ring_buffer.c",
              "name": "ring_sum",
              "new_content": ("int ring_sum(const struct ring *r)\n"
                              "{\n"
                              "    int sum = 0;\n"
                              "    for (size_t i = 0; i < r->count; i++)\n"
                              "        sum += r->items[(r->head + i) % RING_CAPACITY];\n"
                              "    return sum;\n"
                              "}"),
          },
      ])
def ts_c_update_definition(ctx: ToolContext, path: str, name: CodeSymbol, new_content: NewDefinition) -> Result[str]:
    """Replace one C definition; refused if the file would not parse."""
    return _update(ctx, path, name, new_content, "c")


@tool(toolset="cpp", read_only=True, title="C signature",
      examples=[{"path": "native/ring_buffer.c", "name": "ring_push"}])
def ts_c_get_signature(ctx: ToolContext, path: str, name: CodeSymbol) -> Result[str]:
    """A C function's or struct's declaration, without the body."""
    return _signature(ctx, path, name, "c")


# -- C++ ----------------------------------------------------------------------------------


@tool(toolset="cpp", read_only=True, output=CodeOutline, title="C++ outline",
      examples=[{"path": "native/matrix.cpp"}])
def ts_cpp_get_code_outline(ctx: ToolContext, path: str) -> Result[CodeOutline | None]:
    """A C++ file's definitions with their lines: namespaces, classes and bases, methods, functions."""
    return _outline(ctx, path, "cpp")


@tool(toolset="cpp", read_only=True, title="C++ skeleton",
      examples=[{"path": "native/matrix.cpp"}])
def ts_cpp_get_skeleton(ctx: ToolContext, path: str) -> Result[str]:
    """A C++ file with function bodies elided."""
    return _skeleton(ctx, path, "cpp")


@tool(toolset="cpp", read_only=True, title="C++ definition",
      examples=[{"path": "native/matrix.cpp", "name": "geometry::Matrix::at"}])
def ts_cpp_get_definition(ctx: ToolContext, path: str, name: CodeSymbol) -> Result[str]:
    """One C++ class, struct, function or method, whole."""
    return _definition(ctx, path, name, "cpp")


@tool(toolset="cpp", title="Replace a C++ definition",
      examples=[
          {
              "path": "native/matrix.cpp",
              "name": "Matrix::at",
              "new_content": ("double Matrix::at(int row, int col) const\n"
                              "{\n"
                              "    return cells_.at(row * cols_ + col);\n"
                              "}"),
          },
      ])
def ts_cpp_update_definition(ctx: ToolContext, path: str, name: CodeSymbol, new_content: NewDefinition) -> Result[str]:
    """Replace one C++ definition; refused if the file would not parse."""
    return _update(ctx, path, name, new_content, "cpp")


@tool(toolset="cpp", read_only=True, title="C++ signature",
      examples=[{"path": "native/matrix.cpp", "name": "Matrix::transposed"}])
def ts_cpp_get_signature(ctx: ToolContext, path: str, name: CodeSymbol) -> Result[str]:
    """A C++ function's declaration, or a class head with its bases."""
    return _signature(ctx, path, name, "cpp")


# -- any supported language -----------------------------------------------------------------


@tool(toolset="code", read_only=True, output=CodeOutline, title="Code outline",
      examples=[{"path": "web/cart.js"}])
def code_get_outline(ctx: ToolContext, path: str) -> Result[CodeOutline | None]:
    """A source file's classes, functions and methods with their lines, in any language tree-sitter
    parses (Python, JS/TS, Go, Rust, Java, C/C++...)."""
    return _outline(ctx, path, None)


@tool(toolset="code", read_only=True, title="Code skeleton",
      examples=[{"path": "web/cart.js"}])
def code_get_skeleton(ctx: ToolContext, path: str) -> Result[str]:
    """A source file with function bodies elided."""
    return _skeleton(ctx, path, None)


@tool(toolset="code", read_only=True, title="Code definition",
      examples=[{"path": "web/cart.js", "name": "Cart.total"}])
def code_get_definition(ctx: ToolContext, path: str, name: CodeSymbol) -> Result[str]:
    """One class, function or method, whole, in any supported language."""
    return _definition(ctx, path, name, None)


@tool(toolset="code", title="Replace a definition",
      examples=[
          {
              "path": "web/cart.js",
              "name": "formatTotal",
              "new_content": ("export function formatTotal(cart, currency = \"EUR\") {\n"
                              "  return `${cart.total().toFixed(2)} ${currency}`;\n"
                              "}"),
          },
      ])
def code_update_definition(ctx: ToolContext, path: str, name: CodeSymbol, new_content: NewDefinition) -> Result[str]:
    """Replace one definition in any supported language; refused if the file would not parse."""
    return _update(ctx, path, name, new_content, None)


@tool(toolset="code", read_only=True, title="Code signature",
      examples=[{"path": "web/cart.js", "name": "Cart.add"}])
def code_get_signature(ctx: ToolContext, path: str, name: CodeSymbol) -> Result[str]:
    """A function's, method's or type's declaration, without the body."""
    return _signature(ctx, path, name, None)
