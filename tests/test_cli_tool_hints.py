"""A person at the terminal is told the command to run, never an MCP tool's name: the hints of
``undo``, ``registry``, ``call`` and ``review`` failures, through the real ``codeward`` command."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from codeward.apps.cli import main
from codeward.apps.cli.tool_hints import CALLED, COMMANDS, for_the_terminal

BARE_TOOL = re.compile(rf"(?<![\w/`-])(?<!call )({'|'.join([*COMMANDS, *CALLED])})\b")


def test_command_hints_name_commands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    """The command line's entry in this process (a process per command would cost seconds each)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CODEWARD_HOME", str(tmp_path / "home"))
    (tmp_path / "app.py").write_text("print('hi')\n", encoding="utf-8")
    cases = [
        (("undo",), "Hint: `codeward undo --list` shows what was recorded"),
        (("undo", "--to", "99"), "Hint: `codeward undo --list` shows the checkpoints"),
        (("registry", "help", "nosuch"), "Search with `codeward registry search`"),
        (("registry", "run", "nosuch"), "Search with `codeward registry search`"),
        (("call", "read_file", "path=missing.txt"), "Check the name with `codeward call list_directory`"),
        (("review", "missing.py"), "Check the name with `codeward call list_directory`"),
    ]
    for args, hint in cases:
        code = main(list(args))
        err = capsys.readouterr().err
        assert code != 0 and hint in err, (args, err)
        assert not BARE_TOOL.search(err), (args, err)


def test_the_rewrite_leaves_paths_and_cli_lines_alone() -> None:
    assert for_the_terminal("See the parameters with registry_help(name='fmt').") == \
        "See the parameters with `codeward registry help fmt`."
    assert for_the_terminal("Next: registry_execute(name=..., params={...}) to run a tool.") == \
        "Next: `codeward registry run ...` to run a tool."
    unchanged = "src/list_directory.py and `codeward call code_list_languages` and my_registry_search_tool"
    assert for_the_terminal(unchanged) == unchanged
