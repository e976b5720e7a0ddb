"""Analyzer configuration written by the agent, read where it cannot reach anything (issue
"Nothing the agent writes is read or run on the host", route 1).

The agent writes an analyzer's configuration with ``write_file`` — ``ruff.toml`` whose ``extend``
names ``/etc/shadow``, ``/etc/passwd``, the project's ``.env``, a key, a file outside the roots,
``~/.netrc``; the same in ``.ruff.toml`` and ``[tool.ruff]`` of ``pyproject.toml``; a
``.shellcheckrc`` that follows ``source`` into files outside; a C file including one; a vulture
whitelist outside — then asks for a review through ``coding_analyze_file``,
``coding_analyze_project`` and the ``codeward review`` command. On the host ruff followed the
path and quoted the line it could not parse (``1 | API_TOKEN=...``). In the sandbox those files
are absent or empty: no secret, no line of ``/etc/passwd`` or ``/etc/shadow`` may appear in any
output, and a benign configuration (``extend`` of a file in the project) still gives its findings.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.redteam.harness import SECRET_NAMED, Host
from tests.sandbox_support import bwrap_works

pytestmark = [pytest.mark.anyio,
              pytest.mark.skipif(not bwrap_works(), reason="bubblewrap cannot create namespaces here")]

RUFF = Path(sys.executable).parent / "ruff"
TARGETS = {
    "shadow": "/etc/shadow",
    "passwd": "/etc/passwd",
    "dotenv": "../.env",
    "key": "../deploy/server.key",
    "outside": "../../outside/settings.toml",
    "netrc": "~/.netrc",
}
"""Each attack's folder and the path its ruff configuration extends (relative to that folder)."""


def first_line(path: str) -> str | None:
    try:
        return Path(path).read_text().splitlines()[0]
    except (OSError, IndexError):
        return None


def scene(host: Host) -> None:
    """Secrets where an agent-written configuration would point: the user's ``~/.netrc``, a settings
    file beside the project; and ruff at a path the unprivileged user can run (the operator's setting)."""
    (host.home / ".netrc").write_text(f"machine api.example.com login me password {SECRET_NAMED}\n")
    (host.outside / "settings.toml").write_text(f"token = {SECRET_NAMED}\n")
    (host.outside / "lib.sh").write_text(f'TOKEN={SECRET_NAMED}\nif [ $TOKEN = "{SECRET_NAMED}" ]; then echo; fi\n')
    (host.outside / "leak.h").write_text(f"int {SECRET_NAMED.replace('-', '_')} = ;\n{SECRET_NAMED}\n")
    for path in (host.home / ".netrc", host.outside / "settings.toml", host.outside / "lib.sh",
                 host.outside / "leak.h"):
        os.chown(path, host.principal.uid, host.principal.gid)
    config = host.project / "codeward.toml"
    config.write_text(config.read_text() + f'\n[review.executables]\nruff = "{RUFF}"\n')
    host.rebaseline()


async def test_agent_written_analyzer_configuration_reads_nothing_outside(host: Host) -> None:
    if not os.access(RUFF, os.X_OK):
        pytest.skip(f"ruff is not installed next to {sys.executable}")
    scene(host)
    writes: dict[str, str] = {f"{name}/ruff.toml": f'extend = "{target}"\n' for name, target in TARGETS.items()}
    writes |= {name: "import os\n" for name in (f"{folder}/app.py" for folder in [*TARGETS, "dot", "pyproj", "good",
                                                                                 "vult"])}
    writes |= {
        "dot/.ruff.toml": 'extend = "../.env"\n',
        "pyproj/pyproject.toml": '[tool.ruff]\nextend = "../../outside/settings.toml"\n',
        "good/ruff.toml": 'extend = "base.toml"\n',
        "good/base.toml": '[lint]\nselect = ["F401"]\n',
        "sh/.shellcheckrc": "external-sources=true\nsource-path=../../outside\n",
        "sh/run.sh": "#!/bin/sh\n# shellcheck source=../../outside/lib.sh\n. ../../outside/lib.sh\necho $1\n",
        "c/main.c": '#include "../../outside/leak.h"\nint main(void) { int a[2]; return a[2]; }\n',
        "vult/pyproject.toml": '[tool.vulture]\npaths = ["../../outside/settings.toml"]\n',
    }
    async with host.serve() as session:
        for path, content in writes.items():  # the agent writes the configuration, as a model would
            written = await session.call("write_file", {"path": path, "content": content})
            assert not written.is_error, written.text
        files = {name: await session.call("coding_analyze_file", {"file_path": f"{name}/app.py",
                                                                  "analysis_types": ["lint"]})
                 for name in [*TARGETS, "dot", "pyproj", "good"]}
        shell = await session.call("coding_analyze_file", {"file_path": "sh/run.sh"})
        cfile = await session.call("coding_analyze_file", {"file_path": "c/main.c"})
        project = await session.call("coding_analyze_project", {"path": ".", "analysis_types": ["lint"]})
    review = host.codeward("review", "pyproj", "--format", "json", "--gates", "max_errors=off", "max_warnings=off")
    assert review.returncode in (0, 1) and "Traceback" not in review.stderr, review.stderr
    outputs = "\n".join(host.outputs)
    for leaked in filter(None, (first_line("/etc/passwd"), first_line("/etc/shadow"))):
        assert leaked not in outputs  # nothing of the host's /etc, whoever the server runs as
    # ...and the fixture searches every output (tools and the command line) for the planted secrets.
    for name in TARGETS:
        assert "ruff" in files[name].text, files[name].text  # ruff ran (and failed or not) in the box
    good = files["good"]
    assert not good.is_error and "F401" in good.text and "ANALYSIS FAILED" not in good.text, good.text
    assert not project.is_error and "ruff" in project.text, project.text  # one ruff run for all: its configs failed
    if "shellcheck" in shell.text and "not installed" not in shell.text:
        assert "SC2086" in shell.text  # the script's own finding still comes
    if "cppcheck" in cfile.text and "not installed" not in cfile.text:
        assert "arrayIndexOutOfBounds" in cfile.text, cfile.text
