"""Tree-sitter plumbing: which grammar a file needs, loading it lazily, parsing, syntax errors.

Grammars come from ``tree-sitter-language-pack`` (0.x bundles compiled grammars; each one
is a separate extension module imported the first time a file of that language is parsed,
so a session that never touches Rust never loads the Rust grammar). Nothing here keeps
state: ``importlib`` caches the grammar modules, and a :class:`tree_sitter.Parser` is cheap
to create, so every caller gets its own parser and threads never share one.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import PurePath
from types import MappingProxyType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Language, Node, Parser, Tree


@dataclass(frozen=True, slots=True)
class LanguageInfo:
    """A language the code tools support: its grammar name, display name and file extensions."""

    name: str
    """The grammar's name in tree-sitter-language-pack (``cpp``, ``csharp``, ``tsx``...)."""
    display: str
    extensions: tuple[str, ...]
    """Lower-case suffixes with the dot (``.hpp``); matched case-insensitively."""


LANGUAGES: tuple[LanguageInfo, ...] = (
    LanguageInfo("c", "C", (".c",)),
    LanguageInfo("cpp", "C++", (".cc", ".cpp", ".cxx", ".c++", ".cp", ".h", ".hh", ".hpp", ".hxx", ".h++",
                                ".hp", ".ipp", ".tpp", ".txx", ".inl", ".cppm", ".ixx")),
    LanguageInfo("python", "Python", (".py", ".pyi", ".pyw")),
    LanguageInfo("javascript", "JavaScript", (".js", ".mjs", ".cjs", ".jsx")),
    LanguageInfo("typescript", "TypeScript", (".ts", ".mts", ".cts")),
    LanguageInfo("tsx", "TSX", (".tsx",)),
    LanguageInfo("go", "Go", (".go",)),
    LanguageInfo("rust", "Rust", (".rs",)),
    LanguageInfo("java", "Java", (".java",)),
    LanguageInfo("csharp", "C#", (".cs",)),
    LanguageInfo("ruby", "Ruby", (".rb", ".rake", ".gemspec", ".ru")),
    LanguageInfo("php", "PHP", (".php", ".phtml", ".php8", ".inc")),
    LanguageInfo("kotlin", "Kotlin", (".kt", ".kts")),
    LanguageInfo("swift", "Swift", (".swift",)),
    LanguageInfo("lua", "Lua", (".lua",)),
    LanguageInfo("bash", "Bash", (".sh", ".bash")),
)
"""Every language the code tools handle. ``.h`` counts as C++ (as universal-ctags does): the
C++ grammar reads C headers well, the C grammar cannot read C++ ones; the ``ts_c_*`` tools
parse any file as C regardless."""

_BY_NAME = MappingProxyType({info.name: info for info in LANGUAGES})
_BY_EXTENSION = MappingProxyType({ext: info.name for info in LANGUAGES for ext in info.extensions})


class GrammarUnavailable(RuntimeError):
    """The grammar for a language could not be loaded (package missing or broken)."""


def language_for_path(path: str | PurePath) -> str | None:
    """The grammar name for a file, chosen by its extension; ``None`` when unsupported."""
    suffix = PurePath(path).suffix.lower()
    return _BY_EXTENSION.get(suffix)


def language_info(name: str) -> LanguageInfo | None:
    return _BY_NAME.get(name)


def supported_languages() -> tuple[str, ...]:
    return tuple(info.name for info in LANGUAGES)


def supported_extensions() -> tuple[str, ...]:
    return tuple(ext for info in LANGUAGES for ext in info.extensions)


def extensions_text() -> str:
    """A one-line list for error messages: ``C++ (.cc .cpp ...), Go (.go), ...``."""
    return "; ".join(f"{info.display} ({' '.join(info.extensions)})" for info in LANGUAGES)


def get_language(name: str) -> Language:
    """The tree-sitter ``Language`` for a grammar name, imported on first use."""
    if name not in _BY_NAME:
        raise GrammarUnavailable(f"no grammar configured for {name!r}; supported: {', '.join(_BY_NAME)}")
    try:
        from tree_sitter_language_pack import get_language as pack_language

        return pack_language(name)  # type: ignore[arg-type]
    except (ImportError, LookupError, OSError) as exc:
        raise GrammarUnavailable(f"cannot load the {name} grammar: {exc}") from exc


def get_parser(name: str) -> Parser:
    """A fresh parser for a grammar name (parsers are not shared between threads)."""
    from tree_sitter import Parser

    return Parser(get_language(name))


def parse(source: str | bytes, language: str) -> Tree:
    """Parse text (UTF-8) with the named grammar. Byte offsets in the tree are UTF-8 offsets."""
    data = source.encode("utf-8", "surrogatepass") if isinstance(source, str) else source
    return get_parser(language).parse(data)


@dataclass(frozen=True, slots=True)
class SyntaxProblem:
    """One ERROR or MISSING node: where it is (1-based line and column) and what it is."""

    line: int
    column: int
    end_line: int
    start_byte: int
    end_byte: int
    missing: bool
    text: str

    def describe(self) -> str:
        if self.missing:
            return f"line {self.line}, column {self.column}: missing {self.text!r}"
        snippet = self.text if len(self.text) <= 40 else self.text[:37] + "..."
        return f"line {self.line}, column {self.column}: cannot parse {snippet!r}"


def syntax_problems(tree: Tree, limit: int = 20) -> list[SyntaxProblem]:
    """The outermost ERROR and MISSING nodes of a tree, in source order (at most ``limit``)."""
    found: list[SyntaxProblem] = []
    if not tree.root_node.has_error:
        return found
    for node in _error_nodes(tree.root_node):
        text = node.type if node.is_missing else (node.text or b"").decode("utf-8", "replace")
        found.append(SyntaxProblem(
            line=node.start_point[0] + 1,
            column=node.start_point[1] + 1,
            end_line=node.end_point[0] + 1,
            start_byte=node.start_byte,
            end_byte=node.end_byte,
            missing=node.is_missing,
            text=text,
        ))
        if len(found) >= limit:
            break
    return found


def _error_nodes(root: Node) -> Iterator[Node]:
    """Outermost ERROR/MISSING nodes in source order (iterative: error chains can be deep)."""
    stack = [root]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            yield node
        elif node.has_error:
            stack.extend(reversed(node.children))
