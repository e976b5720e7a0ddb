"""codeward: a secure Model Context Protocol toolkit for AI coding agents.

The layers are packages (docs/architecture.md); the import paths scripts used before the layout keep
working (:mod:`codeward.kernel.moved_names`).
"""

from codeward.kernel.moved_names import install

__version__ = "0.1.0"

install()
