"""Import paths that scripts use from before the layered layout, kept working.

The modules moved into their floors (docs/architecture.md): ``codeward.apps.control`` is
``codeward.apps.control`` now, ``codeward.kernel.workspace`` is ``codeward.kernel.workspace``, and so on.
For the paths in :data:`MOVED`, an import finder hands out the module under its new name —
the same module object, so ``isinstance`` and identity hold across both names — and warns once with
a :class:`DeprecationWarning` naming the new path. Submodules follow (``codeward.engines.sandbox.overlay``
is ``codeward.engines.sandbox.overlay``). Only these documented paths are kept; everything else moved
with no alias, and its new home is in docs/architecture.md.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import warnings
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec

# codemod: keep (the old names stay old: the layout's codemod leaves this table alone)
MOVED: dict[str, str] = {
    "codeward.catalog": "codeward.kernel.catalog",
    "codeward.cli": "codeward.apps.cli",
    "codeward.coding": "codeward.engines.execution",
    "codeward.coding.sandbox": "codeward.engines.sandbox",
    "codeward.context": "codeward.kernel.context",
    "codeward.control": "codeward.apps.control",
    "codeward.result": "codeward.kernel.result",
    "codeward.stack": "codeward.serving.stack",
    "codeward.workspace": "codeward.kernel.workspace",
}
"""An old module path → where it lives now (a package's submodules follow it)."""
# codemod: end


_LONGEST_FIRST = tuple(sorted(MOVED, key=len, reverse=True))


def new_name(old: str) -> str | None:
    """Where the module once called ``old`` lives now, or None if that name did not move."""
    if not old.startswith("codeward."):  # every import of the process asks: answer most at once
        return None
    for prefix in _LONGEST_FIRST:
        if old == prefix or old.startswith(prefix + "."):
            return MOVED[prefix] + old[len(prefix):]
    return None


class _Alias:
    """Loads an old name as the module under its new name, unchanged (a loader by protocol: importing
    ``importlib.abc`` would cost every start its ``importlib.resources``)."""

    def __init__(self, new: str) -> None:
        self.new = new
        self._spec: ModuleSpec | None = None

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        module = importlib.import_module(self.new)
        self._spec = module.__spec__
        warnings.warn(f"{spec.name} moved to {self.new}; import it from there (the old name is kept working)",
                      DeprecationWarning, stacklevel=2)
        return module

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = self._spec  # the import system set the alias's spec on the module: put its own back


class MovedNames:
    """The finder for :data:`MOVED` (installed by :func:`install`)."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        new = new_name(fullname)
        if new is None:
            return None
        found = importlib.util.find_spec(new)
        if found is None:
            return None
        alias = _Alias(new)  # typeshed asks loaders for the legacy load_module; the import system uses exec_module
        return importlib.util.spec_from_loader(fullname, alias,  # type: ignore[arg-type]
                                               is_package=found.submodule_search_locations is not None)


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once per interpreter)."""
    if not any(isinstance(finder, MovedNames) for finder in sys.meta_path):
        sys.meta_path.insert(0, MovedNames())
