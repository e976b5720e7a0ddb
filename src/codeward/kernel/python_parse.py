"""``ast.parse`` and ``compile`` of a tree, one thread at a time.

CPython 3.11 and 3.12 keep the counter that guards AST construction against deep recursion in
interpreter-wide state, not per thread: two threads building trees at once (a server answers
calls in worker threads) can see each other's count and fail with ``SystemError: AST constructor
recursion depth mismatch`` on perfectly good code (python/cpython#106905). Building a tree holds
the GIL throughout, so serializing it costs no parallelism.
"""

from __future__ import annotations

import ast
import threading

_AST_LOCK = threading.Lock()
"""Guards the interpreter's AST recursion counter; holds nothing of codeward's."""


def parse_python(source: str | bytes, filename: str = "<unknown>") -> ast.Module:
    """:func:`ast.parse` of a module, safe to call from several threads."""
    with _AST_LOCK:
        return ast.parse(source, filename=filename)


def compile_tree(tree: ast.Module, filename: str) -> object:
    """``compile`` of an AST (it converts the tree back through the same counter), safe from threads."""
    with _AST_LOCK:
        return compile(tree, filename, "exec", dont_inherit=True)
