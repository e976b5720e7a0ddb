"""No import circles in ``src/``, and nothing outside the command line imports it.

An *import circle* is a set of modules that reach each other through imports: ``a`` imports
``b`` (directly, or through ``c``...) and ``b`` imports ``a``. Every import counts, at the top of
a module or inside a function body: a function-level import only moves the moment the circle
closes to the first call, where it fails as a half-initialized module or hides a layering
mistake. Imports under ``if TYPE_CHECKING:`` do not count: they never run, they only name
types for mypy.

To break a circle, find the edge that goes the wrong way (a low module reaching up) and:

* move the shared piece down, into the lower module or a new small one both can import
  (a dataclass, a constant, a protocol);
* or pass the thing in instead of importing it (a callback, a value built by the caller);
* or, when only a type annotation needs the name, import it under ``if TYPE_CHECKING:``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

from tests.conftest import REPO

SRC = REPO / "src"


def module_files(src: Path) -> dict[str, Path]:
    """Dotted module name → file, for every module and package under ``src``."""
    found: dict[str, Path] = {}
    for path in sorted(src.rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts:
            found[".".join(parts)] = path
    return found


class _Imports(ast.NodeVisitor):
    """Every module an AST imports (top level and in function bodies), minus ``TYPE_CHECKING`` blocks."""

    def __init__(self, package: str, known: Mapping[str, Path]) -> None:
        self.package = package
        self.known = known
        self.targets: set[str] = set()

    def _resolve(self, name: str) -> str | None:
        while name and name not in self.known:
            name = name.rpartition(".")[0]
        return name or None

    def visit_If(self, node: ast.If) -> None:
        test = node.test
        if (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
                isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"):
            for other in node.orelse:
                self.visit(other)
            return
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            target = self._resolve(alias.name)
            if target:
                self.targets.add(target)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            base = self.package.split(".")[: len(self.package.split(".")) - node.level + 1]
            module = ".".join([*base, *([node.module] if node.module else [])])
        else:
            module = node.module or ""
        for alias in node.names:
            full = f"{module}.{alias.name}"
            target = full if full in self.known else self._resolve(module)
            if target:
                self.targets.add(target)


def import_graph(src: Path) -> dict[str, set[str]]:
    """Module → the modules of the same tree it imports."""
    known = module_files(src)
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        visitor = _Imports(package, known)
        visitor.visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
        graph[name] = visitor.targets - {name}
    return graph


def circles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def cycle_path(graph: Mapping[str, set[str]], component: list[str]) -> list[str]:
    """One concrete loop through a component, for the failure message (``a -> b -> a``)."""
    members = set(component)
    start = component[0]
    path, seen = [start], {start}
    node = start
    while True:
        nxt = sorted(graph[node] & members)
        step = next((n for n in nxt if n == start), None) or next((n for n in nxt if n not in seen), nxt[0])
        path.append(step)
        if step in seen:
            return path[path.index(step):]
        seen.add(step)
        node = step


def describe(graph: Mapping[str, set[str]], found: list[list[str]]) -> str:
    lines = [f"{len(found)} import circle(s) in src/ (see this test's docstring for how to break one):"]
    for component in found:
        lines.append(f"  {' -> '.join(cycle_path(graph, component))}"
                     + (f"   (component of {len(component)}: {', '.join(component)})" if len(component) > 2 else ""))
    return "\n".join(lines)


def test_src_has_no_import_circles() -> None:
    graph = import_graph(SRC)
    assert "codeward.apps.cli" in graph and len(graph) > 100, "the graph must cover the whole package"
    found = circles(graph)
    assert not found, describe(graph, found)


def test_only_the_command_line_imports_the_command_line() -> None:
    graph = import_graph(SRC)
    def in_cli(name: str) -> bool:
        return name == "codeward.apps.cli" or name.startswith("codeward.apps.cli.")

    offenders = sorted(name for name, targets in graph.items()
                       if not in_cli(name) and name != "codeward.__main__" and any(in_cli(t) for t in targets))
    assert not offenders, (f"domain modules import the command line: {', '.join(offenders)}; move what they "
                           "need out of codeward.apps.cli (or the command-line code into it)")


def test_the_detector_finds_circles_at_module_and_function_level(tmp_path: Path) -> None:
    """The check above can fail: a planted circle (one edge inside a function) is found and named."""
    pkg = tmp_path / "demo"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from demo.b import thing\n")
    (pkg / "b.py").write_text("def thing():\n    from demo import c\n    return c\n")
    (pkg / "c.py").write_text("import demo.a\n")
    (pkg / "d.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from demo.e import x\n")
    (pkg / "e.py").write_text("from . import d\n")
    graph = import_graph(tmp_path)
    found = circles(graph)
    assert found == [["demo.a", "demo.b", "demo.c"]], found
    message = describe(graph, found)
    assert "demo.a -> demo.b -> demo.c -> demo.a" in message
    assert "demo.d" not in message, "a TYPE_CHECKING import is not a circle"
