"""The ``codeward`` command lines the README and ``docs/*.md`` print, as a person would copy them.

Every fenced ``sh``/``bash``/``shell``/``console`` block (and an unlabelled one) is read the way a
shell reads it: ``\\`` continues a line, ``#`` starts a comment, ``&&``, ``||``, ``;`` and ``|``
separate commands, ``VAR=value`` before a command is its environment, ``$ `` is a prompt. Each
command whose program is ``codeward`` (or a path ending in ``/codeward``) is one :class:`DocCommand`,
with the file and line it came from.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

SHELL_BLOCKS = {"", "sh", "bash", "shell", "console", "zsh"}
SEPARATORS = {"&&", "||", ";", "|", "&"}
REDIRECTIONS = {"<", ">", ">>", "2>", "2>>", "&>"}
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")


@dataclass(frozen=True)
class DocCommand:
    path: Path
    line: int
    words: tuple[str, ...]
    """The command's words after the program (``codeward``)."""

    @property
    def where(self) -> str:
        return f"{self.path.name}:{self.line}: codeward {shlex.join(self.words)}"


def shell_lines(text: str) -> list[tuple[int, str]]:
    """The logical lines of the document's shell blocks, with the number of each one's first line."""
    lines: list[tuple[int, str]] = []
    fence: str | None = None
    pending: tuple[int, str] | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        opening = FENCE.match(raw)
        if fence is None:
            if opening:
                fence = opening.group(2) if opening.group(3).lower() in SHELL_BLOCKS else "skip:" + opening.group(2)
            continue
        if opening and raw.strip().startswith(fence.removeprefix("skip:")) and not opening.group(3):
            fence = None
            continue
        if fence.startswith("skip:"):
            continue
        line = raw.strip()
        if line.startswith("$ "):
            line = line[2:]
        start, before = pending if pending is not None else (number, "")
        if line.endswith("\\"):
            pending = (start, before + line[:-1] + " ")
            continue
        pending = None
        lines.append((start, before + line))
    return lines


def commands_in(path: Path) -> list[DocCommand]:
    found: list[DocCommand] = []
    for number, line in shell_lines(path.read_text(encoding="utf-8")):
        try:
            words = shlex.split(line, comments=True)
        except ValueError:  # not shell (an unlabelled block of something else)
            continue
        command: list[str] = []
        redirected = False
        for word in [*words, ";"]:
            if redirected:  # the file of a redirection is the shell's, not the command's
                redirected = False
                continue
            if word in REDIRECTIONS:
                redirected = True
                continue
            if word not in SEPARATORS:
                command.append(word)
                continue
            while command and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", command[0]):
                command.pop(0)
            if command and (command[0] == "codeward" or command[0].endswith("/codeward")):
                found.append(DocCommand(path, number, tuple(command[1:])))
            command = []
    return found
