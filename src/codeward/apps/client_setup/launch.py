"""The command that starts this codeward installation, as a client config or a banner must spell it.

A client starts a stdio server with its own environment and working directory, where
``.venv/bin`` or a pipx folder is rarely on ``PATH``; a bare ``codeward`` then fails. So configs get
an absolute path: the ``codeward`` script this process was started from (a pipx link stays a link,
so it survives ``pipx upgrade``), else this interpreter with ``-m codeward``.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class LaunchCommand:
    """An executable and the arguments before the subcommand (``["-m", "codeward"]`` or none)."""

    command: str
    prefix: tuple[str, ...] = ()

    def argv(self, *args: str) -> list[str]:
        return [self.command, *self.prefix, *args]

    def shell(self, *args: str) -> str:
        """The command line a person can paste into a POSIX shell."""
        return shlex.join(self.argv(*args))


def installed_command(argv0: str | None = None, executable: str | None = None) -> LaunchCommand:
    """The absolute command that starts this installation of codeward."""
    script = Path(argv0 if argv0 is not None else sys.argv[0])
    if script.name == "codeward" and script.is_file() and os.access(script, os.X_OK):
        return LaunchCommand(str(script.absolute()))
    python = executable if executable is not None else sys.executable
    sibling = Path(python).parent / "codeward"
    if sibling.is_file() and os.access(sibling, os.X_OK):
        return LaunchCommand(str(sibling.absolute()))
    return LaunchCommand(str(Path(python).absolute()), ("-m", "codeward"))


def ephemeral_environment(prefix: str | None = None) -> bool:
    """Whether this codeward runs from a tool cache that may be cleaned away (``uvx``'s archive)."""
    parts = Path(prefix if prefix is not None else sys.prefix).parts
    return any(part.startswith("archive-v") for part in parts) and any("uv" in part for part in parts)


def display_command(launch: LaunchCommand, environ: Mapping[str, str] | None = None) -> LaunchCommand:
    """``codeward`` when the ``codeward`` on ``PATH`` is this very one, else the absolute command."""
    env = os.environ if environ is None else environ
    if not launch.prefix:
        found = shutil.which("codeward", path=env.get("PATH", ""))
        if found is not None and _same_file(found, launch.command):
            return LaunchCommand("codeward")
    return launch


def shell_words(words: Sequence[str]) -> str:
    return shlex.join(list(words))


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False
