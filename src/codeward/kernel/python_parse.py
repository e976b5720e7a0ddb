"""``ast.parse`` and ``compile`` of a tree, one thread at a time.

CPython 3.11 and 3.12 keep the counter that guards AST construction against deep recursion in
interpreter-wide state, not per thread: two threads building trees at once (a server answers
calls in worker threads) can see each other's count and fail with ``SystemError: AST constructor
recursion depth mismatch`` on perfectly good code (python/cpython#106905). Building a tree holds
the GIL throughout, so serializing it costs no parallelism.

The lock orders codeward's own parses; a library in the same process can still build a tree
outside it (on 3.11 formatting any traceback does: ``traceback`` parses the failing line to place
its ``^^^`` marks), and a garbage collection inside the C code that builds the tree can let that
thread run mid-build. The tree is then fine and only the counter is off, so a parse that fails
that way is tried again (:data:`ATTEMPTS` in all); a full run of the suite saw it once.
"""

from __future__ import annotations

import ast
import threading
from collections.abc import Callable
from typing import TypeVar

_AST_LOCK = threading.Lock()
"""Guards the interpreter's AST recursion counter; holds nothing of codeward's."""
ATTEMPTS = 3
"""Tries of a tree built while another thread's build moved the shared counter."""
COUNTER_RACE = "AST constructor recursion depth mismatch"
T = TypeVar("T")


def parse_python(source: str | bytes, filename: str = "<unknown>") -> ast.Module:
    """:func:`ast.parse` of a module, safe to call from several threads."""
    return _built(lambda: ast.parse(source, filename=filename))


def compile_tree(tree: ast.Module, filename: str) -> object:
    """``compile`` of an AST (it converts the tree back through the same counter), safe from threads."""
    return _built(lambda: compile(tree, filename, "exec", dont_inherit=True))


def _built(build: Callable[[], T]) -> T:
    for attempt in range(1, ATTEMPTS + 1):
        with _AST_LOCK:
            try:
                return build()
            except SystemError as exc:
                if COUNTER_RACE not in str(exc) or attempt == ATTEMPTS:
                    raise
    raise AssertionError("unreachable")  # the loop returns or raises
