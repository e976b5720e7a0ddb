"""A tool's words for a person at the terminal: hints that name an MCP tool name the command instead.

The tools' errors and next steps are written for the model that calls them ("list_checkpoints shows the
checkpoints", "see registry_help(name='fmt')", "List the folder (list_directory)"). Printed by a
``codeward`` command, each names what a person types: the command that does the same
(``codeward undo --list``, ``codeward registry help fmt``), else the tool through ``codeward call``.
"""

from __future__ import annotations

import re

COMMANDS = {
    "list_checkpoints": "codeward undo --list",
    "registry_search": "codeward registry search",
    "registry_load": "codeward registry load",
    "registry_help": "codeward registry help",
    "registry_execute": "codeward registry run",
}
"""Tools a command of its own does the work of."""
CALLED = ("list_directory", "search_files", "get_tree", "get_file_summary", "code_list_languages")
"""Tools hints name that have no command of their own: ``codeward call NAME``."""

_NAMES = "|".join(sorted([*COMMANDS, *CALLED], key=len, reverse=True))
# A tool's name as a word (not part of a path or another name, not quoted, not already after `codeward call`), with
# an optional call of the form NAME(name='x', ...) or NAME(...).
_MENTION = re.compile(rf"(?<![\w/.`'\"-])(?<!call )({_NAMES})(?:\((?:name=(['\"]?)([\w.-]+)\2)?[^()]*\))?(?![\w/-])")


def for_the_terminal(text: str) -> str:
    """``text`` with each tool a hint names replaced by what a person runs, in backquotes."""

    def command(match: re.Match[str]) -> str:
        tool, item = match.group(1), match.group(3)
        line = COMMANDS.get(tool, f"codeward call {tool}")
        return f"`{line}{' ' + item if item else ''}`"

    return _MENTION.sub(command, text)
