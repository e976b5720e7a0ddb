"""``python -m codeward serve`` wrapped in a probe that reports on the process from inside it.

Some promises are about the server process itself — what it imported at start, which models it
built, when its garbage collector ran — and only the process can tell. A probe script runs the
command as a client starts it (``runpy`` on ``codeward``, so ``__main__`` runs as it does for
``python -m codeward``) and, at exit, writes its report to the file named by ``PROBE_REPORT``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mcp import StdioServerParameters

RUN_AS_PYTHON_M_CODEWARD = (
    "sys.argv = ['codeward', *sys.argv[1:]]\n"
    "runpy.run_module('codeward', run_name='__main__', alter_sys=True)\n"
)
"""The end of every probe: the command, run as ``python -m codeward`` runs it."""


def probed_serve(tmp_path: Path, probe: str, notes: str = "alpha\n") -> tuple[StdioServerParameters, Path]:
    """The parameters to start ``probe`` as ``serve ROOT`` over stdio (ROOT holds ``notes.txt``, codeward's
    home is fresh), and the file its report will be in."""
    root = tmp_path / "root"
    root.mkdir()
    (root / "notes.txt").write_text(notes)
    script = tmp_path / "probe.py"
    script.write_text(probe)
    report = tmp_path / "probe-report.json"
    params = StdioServerParameters(command=sys.executable, args=[str(script), "serve", str(root)], cwd=str(root),
                                   env={**os.environ, "CODEWARD_HOME": str(tmp_path / "home"),
                                        "PROBE_REPORT": str(report)})
    return params, report
