"""The folders a program needs visible to run in the sandbox: its own installation, not the host.

An analyzer installed with codeward lives in a virtualenv (its ``bin/`` script, the interpreter
that script names, that interpreter's own installation); a Node tool in a ``node_modules``
folder. The sandbox shows ``/usr`` to every run already; for anything else, the folder that
holds the installation is shown read-only — never a folder as wide as ``/``, a top-level folder,
a home folder or one that holds a workspace root (then only the program's own folder).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import shutil
from collections.abc import Iterable
from pathlib import Path

_SH_LAUNCHER = re.compile(rb"^'''exec' \"?([^\"\s]+)\"? \"\$0\" \"\$@\"")
"""The second line of pip's (distlib's) ``/bin/sh`` launcher; the group is the interpreter."""
SYSTEM_PREFIXES = ("/usr/", "/bin/", "/sbin/", "/lib/", "/lib32/", "/lib64/", "/libx32/")
"""Visible in every sandbox already (read-only)."""


def installation_of(executable: str, roots: Iterable[Path] = ()) -> list[str]:
    """The folders an analyzer needs to be visible to run: its installation (a virtualenv, a
    ``node_modules``) and its interpreter's, found from the executable, its link target and its
    ``#!`` line. Nothing under ``/usr`` (always visible), never a folder as wide as ``/``, a
    top-level folder, a home folder or one holding a workspace root (then only the executable's
    own folder)."""
    found: list[str] = []
    held = tuple(roots)
    for path in _program_paths(executable):
        folder = _installation_folder(path, held)
        if folder is not None and str(folder) not in found:
            found.append(str(folder))
    return found


def _program_paths(executable: str) -> list[Path]:
    """The executable, where its link leads, and the interpreter its ``#!`` line names (likewise)."""
    paths: list[Path] = []
    pending = [Path(executable)]
    while pending and len(paths) < 8:
        path = pending.pop()
        real = Path(os.path.realpath(path))
        for candidate in (path, real):
            if candidate not in paths:
                paths.append(candidate)
        interpreter = _shebang(real)
        if interpreter is not None and Path(interpreter) not in paths:
            pending.append(Path(interpreter))
    return paths


def _shebang(path: Path) -> str | None:
    """The program a script's ``#!`` line runs (``/usr/bin/env node`` → ``node`` on PATH), if any.

    pip writes a script whose interpreter path is too long for a ``#!`` line as a ``/bin/sh``
    launcher that names the interpreter on its second line: that interpreter is the one it runs."""
    try:
        with open(path, "rb") as handle:
            first = handle.readline(512)
            second = handle.readline(4096)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    launcher = _SH_LAUNCHER.match(second) if first.rstrip() == b"#!/bin/sh" else None
    if launcher is not None:
        return launcher.group(1).decode("utf-8", "replace")
    words = first[2:].decode("utf-8", "replace").split()
    if not words:
        return None
    if Path(words[0]).name == "env" and len(words) > 1:
        return shutil.which(words[-1])
    return words[0]


def _installation_folder(path: Path, roots: tuple[Path, ...]) -> Path | None:
    text = str(path)
    if text.startswith(SYSTEM_PREFIXES) or not path.is_absolute():
        return None
    parts = path.parts
    if "node_modules" in parts:
        folder = Path(*parts[:parts.index("node_modules") + 1])
    elif path.parent.name == "bin":
        folder = path.parent.parent
    else:
        folder = path.parent
    return path.parent if _too_wide(folder, roots) else folder


def _too_wide(folder: Path, roots: tuple[Path, ...]) -> bool:
    """A folder that holds far more than one installation: ``/``, a top-level folder, a home, an
    ancestor of a workspace root (it would show the project's neighbours)."""
    if len(folder.parts) <= 2 or any(root != folder and root.is_relative_to(folder) for root in roots):
        return True
    homes = {Path.home()}
    with contextlib.suppress(OSError):
        homes.update(Path(entry.pw_dir) for entry in pwd.getpwall())
    return folder in homes
