"""Every ``codeward`` line the README and ``docs/*.md`` print is accepted as printed: the command,
its subcommand, every option and ``key=value`` word, through the very parser ``codeward`` runs.
A renamed option or command fails here, naming the file and line. The banners' lines are run
for real by ``tests/test_client_banners.py``; the README's first steps by
``tests/test_readme_first_hour.py``."""

from __future__ import annotations

import contextlib
import io

import pytest

from codeward.apps.cli import build_parser
from codeward.apps.cli import parse as parse_command_line
from codeward.apps.cli.parser import CodewardParser
from tests.conftest import REPO
from tests.docs_commands import DocCommand, commands_in

DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def printed_commands() -> list[DocCommand]:
    return [command for path in DOCUMENTS for command in commands_in(path)]


def test_the_docs_print_commands_to_check() -> None:
    commands = printed_commands()
    assert len(commands) > 80 and {c.path.name for c in commands} >= {"README.md", "cli.md", "gateway.md"}


@pytest.fixture(scope="module")
def parser() -> CodewardParser:
    """The whole command line, built once (parsing does not change it)."""
    return build_parser()


@pytest.mark.parametrize("command", printed_commands(), ids=lambda c: f"{c.path.name}:{c.line}")
def test_each_printed_command_parses_as_printed(command: DocCommand, parser: CodewardParser) -> None:
    errors = io.StringIO()
    try:
        with contextlib.redirect_stderr(errors), contextlib.redirect_stdout(io.StringIO()):
            args = parse_command_line(parser, list(command.words))
    except SystemExit as exit_:
        if exit_.code in (0, None):  # --help, --version
            return
        pytest.fail(f"{command.where}\n{errors.getvalue()}")
    assert getattr(args, "handler", None) is not None or "--help" in command.words, \
        f"{command.where}: names no command that runs"
