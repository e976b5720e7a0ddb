"""Helpers for the registry tests: item files on disk, an isolated user space, a signing shortcut."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from codeward.registry.settings import USER_DIR_ENV, VENV_DIR_ENV


@pytest.fixture
def user_space(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user space (``~/.ai``) in a temporary folder, for every registry call of the test."""
    folder = tmp_path / "home" / ".ai"
    monkeypatch.setenv(USER_DIR_ENV, str(folder))
    monkeypatch.setenv(VENV_DIR_ENV, str(tmp_path / "venvs"))
    return folder


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
