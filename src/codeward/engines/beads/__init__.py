"""Beads issue tracking: the ``bd`` CLI when installed, else a built-in store of its JSONL format.

Beads keeps a project's issues in ``.beads/issues.jsonl``, one JSON object per line, so they
travel with the code through git. :mod:`codeward.engines.beads.store` reads and writes that file with
a file lock and atomic rewrites; :mod:`codeward.engines.beads.bd_cli` delegates to ``bd --json``;
:mod:`codeward.engines.beads.tracker` picks one of the two for a workspace.
"""

from codeward.engines.beads.store import beads_init

__all__ = ["beads_init"]
