"""The differential suite's tools: real projects unpacked, one MCP session per fixture, the references.

Every comparison goes through the official Python MCP client talking to a real ``codeward
serve`` subprocess (:class:`McpSession`, a blocking facade so that hypothesis can drive it),
and against the standard tool itself run in a hermetic environment: git with no system or
user configuration (:func:`git`), ripgrep as installed (:func:`rg`), ``find``, pytest.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import shutil
import stat
import subprocess
import sys
import tarfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import HealthCheck, settings
from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult

from codeward.engines.files import ripgrep

FIXTURES = Path(__file__).parent / "fixtures"
PROJECTS = {
    "iniconfig": "iniconfig-2.3.1.tar.gz",
    "tomli": "tomli-2.5.0.tar.gz",
    "pluggy": "pluggy-1.7.0-slice.tar.gz",
}
"""Vendored sdists (see fixtures/README.md for their sources and licences)."""

CALL_TIMEOUT = 240.0
"""Seconds one tool call may take (run_tests included) before the test fails instead of hanging."""
BOUNDED = settings(derandomize=True, deadline=None, max_examples=40, database=None,
                   suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                          HealthCheck.data_too_large])
"""Generated cases: the same examples every run (derandomized), bounded in number, no timing limit."""


def unpack(project: str, into: Path) -> Path:
    """The project's sdist unpacked under ``into`` as ``into/<project>``; its path."""
    target = into / project
    with tarfile.open(FIXTURES / PROJECTS[project]) as archive:
        top = archive.getmembers()[0].name.split("/")[0]
        archive.extractall(into, filter="data")
    (into / top).rename(target)
    return target


# -- the references -----------------------------------------------------------------------------


NO_HOME = Path("/nonexistent/codeward-differential-home")
"""git's HOME: no ``~/.gitconfig``, no ``~/.config/git/ignore`` (the user's global excludes)."""


def git_env() -> dict[str, str]:
    """git with no system or user configuration, fixed identities and dates."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    env.update(HOME=str(NO_HOME), XDG_CONFIG_HOME=str(NO_HOME / ".config"), GIT_CONFIG_NOSYSTEM="1",
               GIT_AUTHOR_NAME="Ada Lovelace", GIT_AUTHOR_EMAIL="ada@example.org",
               GIT_COMMITTER_NAME="Ada Lovelace", GIT_COMMITTER_EMAIL="ada@example.org",
               GIT_AUTHOR_DATE="2024-05-01T12:00:00Z", GIT_COMMITTER_DATE="2024-05-01T12:00:00Z",
               LC_ALL="C")
    return env


def git(cwd: Path, *args: str, input: bytes | None = None, check: bool = True) -> subprocess.CompletedProcess[bytes]:
    """Run git in ``cwd`` hermetically (no ``~/.gitconfig``, no global excludes, no autocrlf)."""
    return subprocess.run(["git", "-c", "core.autocrlf=false", "-c", "init.defaultBranch=main",
                           "-c", "core.quotepath=false", *args], cwd=cwd, input=input, capture_output=True,
                          env=git_env(), check=check)


def git_text(cwd: Path, *args: str) -> str:
    return git(cwd, *args).stdout.decode("utf-8", "surrogateescape")


def git_init(folder: Path, *, commit: bool = True) -> None:
    """``folder`` as a git repository, everything not ignored committed once."""
    git(folder, "init", "-q")
    if commit:
        git(folder, "add", "-A")
        git(folder, "commit", "-q", "--allow-empty", "-m", "import")


def rg(cwd: Path, *args: str) -> list[str]:
    """ripgrep's output lines, run as a person would (no config file), hidden files searched."""
    binary = ripgrep.find_binary()
    assert binary is not None
    done = subprocess.run([binary, "--no-config", "--hidden", *args], cwd=cwd, capture_output=True, check=False,
                          env={**os.environ, "LC_ALL": "C"})
    assert done.returncode in (0, 1), done.stderr
    return [line for line in done.stdout.decode("utf-8", "surrogateescape").split("\n") if line]


def find_entries(top: Path, *extra: str) -> list[str]:
    """``find`` below ``top`` (``.git`` pruned): each entry as '<type> <path>' (d, f, l)."""
    done = subprocess.run(["find", ".", "-mindepth", "1", "-name", ".git", "-prune", "-o", *extra,
                           "-printf", "%y %P\\0"], cwd=top, capture_output=True, check=True)
    return sorted(item for item in done.stdout.decode("utf-8", "surrogateescape").split("\0") if item)


def tree_digest(top: Path, *, skip: tuple[str, ...] = (".codeward",)) -> str:
    """A hash of everything under ``top``: each path with its kind, mode and bytes (empty folders count)."""
    digest = hashlib.sha256()
    for folder, dirs, files in os.walk(top):
        dirs[:] = sorted(name for name in dirs if name not in skip)
        for name in sorted([*dirs, *files]):
            path = Path(folder) / name
            info = os.lstat(path)
            rel = path.relative_to(top).as_posix()
            if stat.S_ISLNK(info.st_mode):
                body = os.readlink(path).encode("utf-8", "surrogateescape")
            elif stat.S_ISREG(info.st_mode):
                body = path.read_bytes()
            else:
                body = b""
            digest.update(f"{rel}\0{stat.S_IFMT(info.st_mode)}\0{stat.S_IMODE(info.st_mode):o}\0".encode(
                "utf-8", "surrogateescape") + hashlib.sha256(body).digest())
    return digest.hexdigest()


def copy_tree(source: Path, target: Path) -> Path:
    shutil.copytree(source, target, symlinks=True)
    return target


# -- the official client, blocking ---------------------------------------------------------------


@dataclass
class McpSession:
    """One ``codeward serve`` subprocess and the official client connected to it, called synchronously."""

    portal: BlockingPortal = field(repr=False)
    client: Client = field(repr=False)
    root: Path

    def call(self, tool: str, **arguments: Any) -> CallToolResult:
        """The tool's result; a call that takes longer than :data:`CALL_TIMEOUT` fails the test."""
        result: CallToolResult = self.portal.call(self._call, tool, arguments)
        return result

    async def _call(self, tool: str, arguments: dict[str, Any]) -> CallToolResult:
        with anyio.fail_after(CALL_TIMEOUT):
            return await self.client.call_tool(tool, arguments)

    def ok(self, tool: str, **arguments: Any) -> CallToolResult:
        """The call's result, which must not be an error."""
        result = self.call(tool, **arguments)
        assert not result.is_error, (tool, arguments, text(result))
        return result

    def text(self, tool: str, **arguments: Any) -> str:
        return text(self.ok(tool, **arguments))

    def data(self, tool: str, **arguments: Any) -> dict[str, Any]:
        result = self.ok(tool, **arguments)
        structured: dict[str, Any] | None = result.structured_content
        assert structured is not None, (tool, text(result))
        return structured

    def refused(self, tool: str, **arguments: Any) -> str:
        """The error text of a call that must fail."""
        result = self.call(tool, **arguments)
        assert result.is_error, (tool, arguments, text(result))
        return text(result)


def text(result: CallToolResult) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


@contextmanager
def mcp_session(root: Path, *, cwd: Path | None = None, env: Mapping[str, str] | None = None
                ) -> Iterator[McpSession]:
    """A real server on ``root`` over stdio, and the official client, for the ``with`` block."""
    server = StdioServerParameters(command=sys.executable, args=["-m", "codeward", "serve", str(root)],
                                   cwd=str(cwd or root), env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(Client(server)) as client:
        yield McpSession(portal, client, root)


@dataclass
class World:
    """A module's workspace root and its one server session; ``counter`` names each generated case."""

    root: Path
    session: McpSession = field(repr=False)
    counter: Iterator[int] = field(default_factory=itertools.count, repr=False)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(f"{type(self).__name__}({self.root})")  # what hypothesis prints for a failing example
