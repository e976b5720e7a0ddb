"""The contract test's world: a copy of the example project, the local peers its examples reach,
and one runner that puts every tool's example calls through an MCP client.

The examples (``@tool(examples=...)``) are written for ``tests/fixtures/contract_project``. Three
of them reach past the project: ``fetch_url`` and ``web_search`` (the public web, which cannot be
reached here) and ``coding_run_in_docker`` (a Docker engine, which does not run here). They get
local stand-ins speaking the real protocols — the recorded-pages HTTP server of
``tests/fixtures/web`` (named in the project's ``codeward.toml``, the example URL's origin pointed
at it) and the Docker Engine API fake of ``tests/test_sandbox_docker.py``, which runs each
container's command in codeward's sandbox.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from mcp import StdioServerParameters

from codeward.kernel.catalog import Catalog

FIXTURE_PROJECT = Path(__file__).resolve().parent / "fixtures" / "contract_project"
GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_AUTHOR_NAME": "codeward tests",
           "GIT_AUTHOR_EMAIL": "tests@codeward.invalid", "GIT_COMMITTER_NAME": "codeward tests",
           "GIT_COMMITTER_EMAIL": "tests@codeward.invalid"}
DOCKER_IMAGES = ("python:3.11-slim",)


@dataclass
class ContractWorld:
    """A fresh copy of the example project and the environment its server runs in."""

    project: Path
    env: dict[str, str]
    web_base: str

    def serve_params(self, *extra: str) -> StdioServerParameters:
        """``codeward serve PROJECT`` over stdio, started in the project (its codeward.toml applies)."""
        return StdioServerParameters(command=sys.executable,
                                     args=["-m", "codeward", "serve", str(self.project), *extra],
                                     cwd=str(self.project), env=self.env)

    def arguments(self, catalog: Catalog, tool: str, example: Mapping[str, Any]) -> dict[str, Any]:
        """An example's arguments as sent here: a public URL's origin becomes the local web server's."""
        arguments = dict(example)
        spec = catalog.get(tool)
        if spec is not None and spec.annotations.open_world and isinstance(arguments.get("url"), str):
            local = urlsplit(self.web_base)
            parts = urlsplit(arguments["url"])
            arguments["url"] = urlunsplit((local.scheme, local.netloc, parts.path, parts.query, parts.fragment))
        return arguments


@contextmanager
def contract_world(tmp_path: Path) -> Iterator[ContractWorld]:
    """The example project copied under ``tmp_path`` (a git repository, one commit) with its peers running."""
    from tests.fixtures.web.server import serve_fixtures
    from tests.test_sandbox_docker import FakeEngine

    project = tmp_path / "contract_project"
    shutil.copytree(FIXTURE_PROJECT, project, ignore=shutil.ignore_patterns("__pycache__", ".codeward"))
    git_env = {**os.environ, **GIT_ENV}
    for command in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "the example project"]):
        subprocess.run(["git", "-c", "commit.gpgsign=false", *command], cwd=project, env=git_env, check=True)
    with ExitStack() as stack:
        web_base, _seen = stack.enter_context(serve_fixtures())
        # The lean listing with the opt-in lsp toolset served and listed (a client reaches every other
        # toolset through `toolsets`); language servers off: their examples answer from the index, as they do
        # where no server is installed (tests/test_navigation_servers.py runs the servers' answers through the
        # official client).
        (project / "codeward.toml").write_text(
            f'[server]\ntoolsets = ["core", "lsp"]\n\n[lsp]\nenabled = false\n\n'
            f'[web]\nallow_hosts = ["127.0.0.1"]\nsearch_endpoint = "{web_base}/html/"\n', encoding="utf-8")
        socket_dir = Path(tempfile.mkdtemp(prefix="cw-docker-"))  # a unix socket path must stay short
        stack.callback(shutil.rmtree, socket_dir, ignore_errors=True)
        engine = FakeEngine(socket_dir / "docker.sock", DOCKER_IMAGES)
        stack.callback(engine.close)
        env = {key: value for key, value in os.environ.items()
               if not key.startswith(("CODEWARD_MODEL", "CODEWARD_REGISTRY_HUB", "OPENAI_", "OPENROUTER_"))}
        env.update({"PYTHONUNBUFFERED": "1", "CODEWARD_USER_AI_DIR": str(tmp_path / "user-ai"),
                    "DOCKER_HOST": f"unix://{socket_dir / 'docker.sock'}"})
        yield ContractWorld(project, env, web_base)


@dataclass
class CallRecord:
    """One example call as a client saw it."""

    tool: str
    accepted: bool
    is_error: bool = False
    structured: bool = False
    detail: str = ""


def planned_calls(world: ContractWorld, catalog: Catalog, listed: list[str], prefix: str = "") -> tuple[
        list[tuple[str, dict[str, Any]]], list[str]]:
    """Every listed tool's example calls, in list order, and the tools that have none (each a failure)."""
    calls: list[tuple[str, dict[str, Any]]] = []
    missing: list[str] = []
    for name in listed:
        native = name.removeprefix(prefix)
        spec = catalog.get(native)
        if spec is None or not spec.examples:
            missing.append(name)
            continue
        calls += [(name, world.arguments(catalog, native, example)) for example in spec.examples]
    return calls, missing


REFUSED_WITHOUT_A_PERSON = {"git_commit": ("needs a person's approval", "nothing to commit")}
"""Tools that always ask a person (``ask_always``): these clients answer no elicitation, so the example
must come back as one of these clear refusals (and the client must accept that answer)."""


def _refused_as_expected(record: CallRecord) -> bool:
    native = record.tool.rsplit("__", 1)[-1]
    return any(words in record.detail for words in REFUSED_WITHOUT_A_PERSON.get(native, ()))


def problems_of(records: list[CallRecord], with_schema: set[str]) -> list[str]:
    """What a client refused, what failed, and structured results missing where a schema promises one."""
    found: list[str] = []
    for record in records:
        if not record.accepted:
            found.append(f"{record.tool}: the client rejected the answer: {record.detail}")
        elif record.is_error and _refused_as_expected(record):
            continue
        elif record.is_error:
            found.append(f"{record.tool}: the example failed: {record.detail}")
        elif record.tool in with_schema and not record.structured:
            found.append(f"{record.tool}: declares an outputSchema but sent no structuredContent")
    return found


def typescript_run(plan: dict[str, Any], timeout: float = 900) -> dict[str, Any]:
    """Run ``tests/node/contract_client.mjs`` (the official TypeScript SDK client) on a plan."""
    from tests.conftest import REPO, node22_env

    script = REPO / "tests" / "node" / "contract_client.mjs"
    done = subprocess.run(["node", str(script)], input=json.dumps(plan), capture_output=True, text=True,
                          timeout=timeout, env=node22_env(), cwd=script.parent)
    if done.returncode != 0:
        raise AssertionError(f"the TypeScript client failed (exit {done.returncode}): {done.stderr[-3000:]}")
    answer: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return answer


def sdk_installed() -> bool:
    from tests.conftest import REPO

    return (REPO / "tests" / "node" / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json").is_file()
