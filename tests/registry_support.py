"""Helpers for the registry tests: item files on disk, an isolated user space and signing key, and
calls made as the person at the terminal (who may sign and approve first installs)."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from codeward.engines.registry.settings import USER_DIR_ENV, VENV_DIR_ENV
from codeward.kernel.catalog import Catalog
from codeward.kernel.context import CallInfo, ToolContext
from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.user_dirs import HOME_ENV

Call = Callable[..., ToolOutcome]


@pytest.fixture
def user_space(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user space (``~/.ai``) and codeward's data folder (the signing key) in a temporary
    folder, for every registry call of the test."""
    folder = tmp_path / "home" / ".ai"
    monkeypatch.setenv(USER_DIR_ENV, str(folder))
    monkeypatch.setenv(VENV_DIR_ENV, str(tmp_path / "venvs"))
    monkeypatch.setenv(HOME_ENV, str(tmp_path / "home" / "codeward-data"))
    return folder


@pytest.fixture
def person(catalog: Catalog, ctx: ToolContext, user_space: Path) -> Call:
    """Call a tool as the person at the terminal: signing and a first install need no further question."""
    approved = ctx.child(call=CallInfo(approved=True))

    def run(tool_name: str, /, **arguments: Any) -> ToolOutcome:
        return catalog.call(tool_name, arguments, approved)

    return run


def sign(person: Call, name: str, **extra: Any) -> ToolOutcome:
    """Sign ``name`` as the person would (``codeward sign NAME``); fails the test when refused."""
    outcome = person("registry_execute", name=name, action="sign", **extra)
    assert not outcome.is_error, outcome.text
    return outcome


GREETING = "    return {'greeting': 'Hello, ' + name + '!'}"


def python_tool(body: str = GREETING, *, executor: str | None = "python_runtime", version: str = "1.0.0",
                category: str = "utility", params: str = "name",
                schema: str = "", header: str = "", tool_type: str = "python",
                description: str = "Greet someone by name.") -> str:
    """A tool file's text (unsigned)."""
    section = f"\n\nConfig Schema:\n    {schema}\n" if schema else ""
    lines = [f'"""{description}{section}"""', header, f'__version__ = "{version}"',
             f'__tool_type__ = "{tool_type}"', f"__executor_id__ = {executor!r}", f'__category__ = "{category}"',
             "", "", f"def main({params}):", body, ""]
    return "\n".join(lines)


def write(folder: Path, relative: str, text: str) -> Path:
    path = folder / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def runtime(name: str, executor: str, config: str = "{}") -> str:
    return textwrap.dedent(f'''\
        """Runtime {name}: runs tools on {executor}."""

        __version__ = "1.0.0"
        __tool_type__ = "runtime"
        __executor_id__ = "{executor}"
        __category__ = "runtimes"
        CONFIG = {config}
        ''')


def without_state(files: dict[str, bytes]) -> dict[str, bytes]:
    """A snapshot without the registry's search index (a cache that every read refreshes)."""
    return {k: v for k, v in files.items() if not k.startswith(".codeward/")}
