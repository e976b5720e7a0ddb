"""A machine without bubblewrap: every executor refuses, naming what to install — until the
operator chooses plain processes, and then every result says it was not isolated (issue "Nothing
the agent writes is read or run on the host", route 6: ``coding_execute_code`` used to fall back
to a host process silently while ``run_shell`` refused).

The server runs in a mount namespace of its own where ``/usr/bin/bwrap`` is covered by
``/dev/null`` — the way ``codeward`` looks for bwrap (``PATH``, then ``/usr/bin/bwrap``) finds
nothing executable — and with ``DOCKER_HOST`` naming no engine. ``codeward doctor`` is asked in
both situations.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from codeward.engines.sandbox.bwrap import find_bwrap
from codeward.engines.sandbox.choice import Executor
from tests.redteam.harness import SERVER_TIMEOUT_S, Host, Session
from tests.redteam.test_registry_attacks import person_configures, person_signs, place, tool_text

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(os.geteuid() != 0, reason="hiding bubblewrap needs a mount namespace, which needs root"),
    pytest.mark.skipif(find_bwrap() is None, reason="bubblewrap is not installed: nothing to hide"),
]

RUFF = Path(sys.executable).parent / "ruff"
INSTALL = "apt-get install bubblewrap"


def hidden(host: Host, argv: list[str]) -> tuple[list[str], dict[str, str]]:
    """``argv`` (already wrapped for the principal) started where bwrap and Docker are missing."""
    bwrap = find_bwrap()
    assert bwrap is not None
    cover = ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
             'mount --bind /dev/null "$0" && exec "$@"', os.path.realpath(bwrap)]
    env = {**host.principal.env(host.home), "DOCKER_HOST": "unix:///nonexistent/docker.sock"}
    return [*cover, *argv], env


@asynccontextmanager
async def serve_without_bwrap(host: Host) -> AsyncIterator[Session]:
    argv, env = hidden(host, host.server_argv())
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=env, cwd=str(host.project))
    async with Client(params, read_timeout_seconds=SERVER_TIMEOUT_S) as client:
        yield Session(client, host)


def doctor(host: Host, *options: str) -> subprocess.CompletedProcess[str]:
    argv, env = hidden(host, host.principal.wrap([*host.principal.python, "-m", "codeward", "doctor", *options]))
    done = subprocess.run(argv, cwd=host.project, env=env, capture_output=True, text=True, timeout=120, check=False)
    host.record(done.stdout + done.stderr)
    return done


CALLS: dict[str, dict[str, Any]] = {
    "run_shell": {"script": "echo ran > shell-ran.txt"},
    "coding_execute_code": {"language": "python", "code": "print('code ran')"},
    "run_tests": {"command": "echo ran > tests-ran.txt"},
    "coding_analyze_file": {"file_path": "src/app.py", "analysis_types": ["lint"]},
    "registry_execute": {"name": "hello"},
}
"""One call of every executor: the shell, code execution, the tests, the analyzers, a registry tool."""


async def test_without_bubblewrap_every_executor_refuses_until_the_operator_chooses_processes(host: Host) -> None:
    place(host, ".ai/tools/utility/hello.py",
          tool_text("    open('tool-ran.txt', 'w').write('ran')\n    return 'hello'", description="Say hello."))
    person_signs(host, "hello")
    if os.access(RUFF, os.X_OK):  # ruff where the unprivileged user can run it (the operator's setting)
        person_configures(host, f'\n[review.executables]\nruff = "{RUFF}"\n')
    async with serve_without_bwrap(host) as session:
        refused = {name: await session.call(name, arguments) for name, arguments in CALLS.items()}
        languages = await session.call("code_list_languages")
    for name, answer in [*refused.items(), ("code_list_languages", languages)]:
        assert answer.refused("cannot run: no isolating sandbox works here", INSTALL,
                              '[sandbox] backend = "process"'), f"{name}: {answer.text}"
        assert "bubblewrap is not installed" in answer.text, f"{name}: {answer.text}"
    assert not [p.name for p in host.project.glob("*-ran.txt")]  # nothing ran, nothing was written
    checked = doctor(host)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "[MISS] bubblewrap installed" in checked.stdout and INSTALL in checked.stdout
    assert all(str(executor) in checked.stdout for executor in Executor)
    assert checked.stdout.count("REFUSES") == len(Executor)

    person_configures(host, '\n[sandbox]\nbackend = "process"\n')
    async with serve_without_bwrap(host) as session:
        ran = {name: await session.call(name, arguments) for name, arguments in CALLS.items()}
    for name, answer in ran.items():
        assert not answer.is_error, f"{name}: {answer.text}"
        assert "NOT isolated" in answer.text, f"{name}: {answer.text}"
    assert ran["coding_execute_code"].structured["isolated"] is False
    assert "code ran" in ran["coding_execute_code"].text
    assert {p.name for p in host.project.glob("*-ran.txt")} == {"shell-ran.txt", "tests-ran.txt", "tool-ran.txt"}
    checked = doctor(host, "--json")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    report = json.loads(checked.stdout)
    assert report["ok"] is True and report["configured"]["[sandbox] backend"] == "process"
    assert {(e["backend"], e["isolated"]) for e in report["executors"]} == {("process", False)}
    assert len(report["executors"]) == len(Executor) and all("NOT isolated" in e["why"] for e in report["executors"])
    for made in host.project.glob("*-ran.txt"):  # what the operator's unisolated runs wrote: theirs to keep
        made.unlink()
