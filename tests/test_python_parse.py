"""Every parse of Python source in codeward goes through ``kernel/python_parse.py``.

A server answers calls in worker threads; on CPython 3.11/3.12 two trees built at once can fail with
``SystemError: AST constructor recursion depth mismatch`` (python/cpython#106905), which a CI run hit
when a client edited many files in parallel. One direct ``ast.parse`` brings that back.
"""

from __future__ import annotations

import ast
from pathlib import Path

import codeward

SOURCE = Path(codeward.__file__).parent
ALLOWED = {"kernel/python_parse.py"}


def _direct_ast_calls(path: Path) -> list[str]:
    """``ast.parse(...)`` and ``compile(<tree>...)`` calls in a module's own code (strings run elsewhere aside)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "parse" and isinstance(func.value, ast.Name) \
                and func.value.id == "ast":
            found.append(f"line {node.lineno}: ast.parse")
        elif isinstance(func, ast.Name) and func.id == "compile" and node.args \
                and not isinstance(node.args[0], ast.Constant) and "tree" in ast.unparse(node.args[0]):
            found.append(f"line {node.lineno}: compile of a tree")
    return found


def test_no_module_builds_an_ast_outside_the_kernels_lock() -> None:
    offenders = {str(path.relative_to(SOURCE)): calls for path in sorted(SOURCE.rglob("*.py"))
                 if str(path.relative_to(SOURCE)) not in ALLOWED and (calls := _direct_ast_calls(path))}
    assert not offenders, f"use codeward.kernel.python_parse (parse_python, compile_tree): {offenders}"


def test_the_guard_sees_a_direct_call(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("import ast\ntree = ast.parse('x')\ncode = compile(tree, 'm', 'exec')\n")
    assert _direct_ast_calls(module) == ["line 2: ast.parse", "line 3: compile of a tree"]
