"""A short structural summary of one file, by type.

* Python (stdlib ``ast``): module docstring, imports, classes with bases and methods,
  functions with signatures, module constants;
* TOML (``tomllib``): its tables and arrays of tables, with key counts;
* Markdown (``markdown-it-py``): the heading tree, code blocks ignored;
* JSON: the top-level shape;
* any language tree-sitter reads: the outline of its definitions;
* anything else: size and line count.

Pure text work: the caller reads the file through the workspace gate.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable, Mapping
from pathlib import PurePath
from types import MappingProxyType
from typing import Any

from codeward.engines.code_intel.treesitter import GrammarUnavailable, language_for_path, language_info
from codeward.kernel.python_parse import parse_python
from codeward.kernel.result import ErrorKind, Result

MAX_ITEMS = 200
PREVIEW_CHARS = 60


def summarize(text: str, name: str) -> Result[str]:
    """The summary of a file's text; ``name`` (its path) picks the format."""
    suffix = PurePath(name).suffix.lower()
    summarizer = SUMMARIZERS.get(suffix)
    if summarizer is not None:
        return summarizer(text, name)
    language = language_for_path(name)
    if language is not None:
        return _outline_summary(text, name, language)
    return Result.success(_header(text, name, "text") + "\n(no structural summary for this file type; "
                          "read it with read_file, or page it with offset/limit)")


def _header(text: str, name: str, kind: str) -> str:
    lines = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
    return f"{name} — {kind}, {lines} lines"


def _python_summary(text: str, name: str) -> Result[str]:
    try:
        tree = parse_python(text, filename=name)
    except (SyntaxError, ValueError) as exc:
        outline = _outline_summary(text, name, "python")
        reason = f"{exc.msg} (line {exc.lineno})" if isinstance(exc, SyntaxError) else str(exc)
        note = (f"[the file does not parse as Python: {reason}; this outline comes from the error-tolerant "
                "tree-sitter parser]")
        return Result(data=outline.data, errors=outline.errors, notes=[note])
    out = [_header(text, name, "Python")]
    doc = ast.get_docstring(tree)
    if doc:
        out.append(f"docstring: {doc.strip().splitlines()[0]}")
    imports = _python_imports(tree)
    if imports:
        out.append("imports: " + ", ".join(imports))
    classes = [node for node in tree.body if isinstance(node, ast.ClassDef)]
    if classes:
        out.append("classes:")
        for cls in classes[:MAX_ITEMS]:
            bases = ", ".join(ast.unparse(base) for base in cls.bases)
            methods = [f.name for f in cls.body if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)]
            head = f"  {cls.name}({bases})" if bases else f"  {cls.name}"
            line = f"{head}  L{cls.lineno}-{cls.end_lineno}"
            if methods:
                line += f": {', '.join(methods)}"
            out.append(line)
    functions = [node for node in tree.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]
    if functions:
        out.append("functions:")
        for func in functions[:MAX_ITEMS]:
            prefix = "async def" if isinstance(func, ast.AsyncFunctionDef) else "def"
            returns = f" -> {ast.unparse(func.returns)}" if func.returns else ""
            out.append(f"  {prefix} {func.name}({ast.unparse(func.args)}){returns}  L{func.lineno}")
    constants = _python_constants(tree)
    if constants:
        out.append("constants:")
        out.extend(f"  {c}" for c in constants[:MAX_ITEMS])
    if len(out) == 1:
        out.append("(no imports, classes, functions or constants)")
    return Result.success("\n".join(out))


def _python_imports(tree: ast.Module) -> list[str]:
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            names.extend(f"{module}.{alias.name}" if module.strip(".") or alias.name == "*" else f"{module}{alias.name}"
                         for alias in node.names)
    return list(dict.fromkeys(names))


def _python_constants(tree: ast.Module) -> list[str]:
    found: list[str] = []
    for node in tree.body:
        targets: list[ast.expr] = []
        value: ast.expr | None = None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        for target in targets:
            if isinstance(target, ast.Name) and (target.id.isupper() or target.id == "__all__") and value is not None:
                preview = " ".join(ast.unparse(value).split())
                if len(preview) > PREVIEW_CHARS:
                    preview = preview[: PREVIEW_CHARS - 3] + "..."
                found.append(f"{target.id} = {preview}  L{node.lineno}")
    return found


def _toml_summary(text: str, name: str) -> Result[str]:
    import tomllib

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return Result.fail(ErrorKind.INVALID_INPUT, f"{name} is not valid TOML: {exc}",
                           "Fix the TOML syntax at that position (or read the file with read_file).", data="")
    out = [_header(text, name, "TOML")]
    scalars = [key for key, value in data.items() if not isinstance(value, dict) and not _is_table_array(value)]
    if scalars:
        out.append("top-level keys: " + ", ".join(scalars[:MAX_ITEMS]))
    tables: list[str] = []
    _toml_tables(data, (), tables)
    if tables:
        out.append("tables:")
        out.extend(f"  {t}" for t in tables[:MAX_ITEMS])
        if len(tables) > MAX_ITEMS:
            out.append(f"  ... {len(tables) - MAX_ITEMS} more")
    return Result.success("\n".join(out))


def _is_table_array(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(item, dict) for item in value)


def _toml_tables(data: dict[str, Any], prefix: tuple[str, ...], out: list[str]) -> None:
    for key, value in data.items():
        path = (*prefix, key)
        dotted = ".".join(_toml_key(part) for part in path)
        if isinstance(value, dict):
            keys = [k for k, v in value.items() if not isinstance(v, dict) and not _is_table_array(v)]
            out.append(f"[{dotted}] ({_count(len(keys), 'key')})")
            _toml_tables(value, path, out)
        elif _is_table_array(value):
            out.append(f"[[{dotted}]] ({_count(len(value), 'entry', 'entries')})")


def _toml_key(key: str) -> str:
    bare = key.replace("-", "").replace("_", "")
    return key if bare.isalnum() and key.isascii() else json.dumps(key)


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def _markdown_summary(text: str, name: str) -> Result[str]:
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").parse(text)
    out = [_header(text, name, "Markdown")]
    headings: list[str] = []
    for at, token in enumerate(tokens):
        if token.type != "heading_open":
            continue
        level = int(token.tag[1:])
        inline = tokens[at + 1] if at + 1 < len(tokens) else None
        title = inline.content.strip() if inline is not None else ""
        line = token.map[0] + 1 if token.map else 0
        headings.append(f"{'  ' * (level - 1)}{'#' * level} {title}  L{line}")
    if headings:
        out.append("headings:")
        out.extend(headings[:MAX_ITEMS])
        if len(headings) > MAX_ITEMS:
            out.append(f"... {len(headings) - MAX_ITEMS} more headings")
    else:
        out.append("(no headings)")
    return Result.success("\n".join(out))


def _json_summary(text: str, name: str) -> Result[str]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return Result.fail(ErrorKind.INVALID_INPUT, f"{name} is not valid JSON: {exc.msg} (line {exc.lineno}, "
                           f"column {exc.colno})", "Fix the JSON at that position (or read the file with read_file).",
                           data="")
    out = [_header(text, name, "JSON")]
    if isinstance(data, dict):
        out.append(f"object with {_count(len(data), 'key')}:")
        out.extend(f"  {key}: {_shape(value)}" for key, value in list(data.items())[:MAX_ITEMS])
    else:
        out.append(_shape(data))
    return Result.success("\n".join(out))


def _shape(value: Any) -> str:
    if isinstance(value, dict):
        return f"object ({_count(len(value), 'key')})"
    if isinstance(value, list):
        kinds = sorted({_shape(item).split(" ")[0] for item in value[:50]})
        return f"array of {len(value)}" + (f" ({', '.join(kinds)})" if kinds else "")
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    return "number"


def _outline_summary(text: str, name: str, language: str) -> Result[str]:
    from codeward.engines.code_intel.outline_model import parse_source

    try:
        parsed = parse_source(text, language)
    except (GrammarUnavailable, KeyError, ImportError) as exc:
        return Result.success(_header(text, name, language) + f"\n(no outline: {exc})")
    info = language_info(language)
    out = [_header(text, name, info.display if info else language)]
    symbols = parsed.symbols
    if not symbols:
        out.append("(no definitions found)")
    for symbol in symbols[:MAX_ITEMS]:
        span = f"L{symbol.start_line}-{symbol.end_line}" if symbol.end_line > symbol.start_line else \
            f"L{symbol.start_line}"
        detail = f" {symbol.detail}" if symbol.detail else ""
        out.append(f"{'  ' * symbol.depth}{symbol.kind} {symbol.local}{detail}  {span}")
    if len(symbols) > MAX_ITEMS:
        out.append(f"... {len(symbols) - MAX_ITEMS} more definitions")
    return Result.success("\n".join(out))


SUMMARIZERS: Mapping[str, Callable[[str, str], Result[str]]] = MappingProxyType({
    ".py": _python_summary, ".pyi": _python_summary, ".pyw": _python_summary,
    ".toml": _toml_summary,
    ".md": _markdown_summary, ".markdown": _markdown_summary,
    ".json": _json_summary,
})
