"""Programs codeward starts on project content, fed what the agent wrote: they read and run it in
the sandbox, where nothing of the host is in reach (issue "Nothing the agent writes is read or run
on the host", route 1).

**Analyzer configuration.** The agent writes an analyzer's configuration with ``write_file`` —
``ruff.toml`` whose ``extend`` names ``/etc/shadow``, ``/etc/passwd``, the project's ``.env``, a
key, a file outside the roots, ``~/.netrc``; the same in ``.ruff.toml`` and ``[tool.ruff]`` of
``pyproject.toml``; a ``.shellcheckrc`` that follows ``source`` into files outside; a C file
including one; a vulture whitelist outside — then asks for a review through
``coding_analyze_file``, ``coding_analyze_project`` and the ``codeward review`` command. On the
host ruff followed the path and quoted the line it could not parse (``1 | API_TOKEN=...``). In
the sandbox those files are absent or empty: no secret, no line of ``/etc/passwd`` or
``/etc/shadow`` may appear in any output, and a benign configuration (``extend`` of a file in the
project) still gives its findings.

**Beads hooks.** ``bd`` runs the executable scripts of ``.beads/hooks/`` (``on_create``...) on
its events — files an agent can write or a cloned repository can ship. bd itself cannot be
installed here (its packages download a binary at install time); a stand-in answers like
``bd create --json`` and runs ``.beads/hooks/on_create`` as bd does (``internal/hooks/hooks.go``
in steveyegge/beads: ``hook <issue id> <event>``, the issue as JSON on stdin). The planted hook
must run in the box, not on the host.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from codeward.engines.beads import beads_init
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


STAND_IN = """#!/bin/sh
# bd's stand-in: answer `bd create ... --json`, running .beads/hooks/on_create first, as bd does.
issue='{"id": "app-1", "title": "planted", "description": "", "status": "open", "priority": 2, "issue_type": "task"}'
if [ -x .beads/hooks/on_create ]; then printf '%s' "$issue" | .beads/hooks/on_create app-1 create >&2; fi
printf '%s\\n' "$issue"
"""


def scene(host: Host) -> None:
    """Secrets where an agent-written configuration would point: the user's ``~/.netrc``, a settings
    file beside the project; ruff at a path the unprivileged user can run and bd's stand-in (the
    operator's settings); and a repository that arrived with a Beads hook."""
    stand_in = host.base / "bin" / "bd"
    stand_in.parent.mkdir()
    stand_in.write_text(STAND_IN)
    stand_in.chmod(0o755)
    beads_init(host.project, prefix="app")
    hook = host.project / ".beads" / "hooks" / "on_create"
    hook.parent.mkdir()
    hook.write_text(f"#!/bin/sh\n{host.marker_command('beads-hook')}\ncat {host.home / '.netrc'} >&2\n")
    hook.chmod(0o755)
    for path in (host.project / ".beads", hook.parent, hook, *(host.project / ".beads").iterdir()):
        os.chown(path, host.principal.uid, host.principal.gid)
    (host.home / ".netrc").write_text(f"machine api.example.com login me password {SECRET_NAMED}\n")
    (host.outside / "settings.toml").write_text(f"token = {SECRET_NAMED}\n")
    (host.outside / "lib.sh").write_text(f'TOKEN={SECRET_NAMED}\nif [ $TOKEN = "{SECRET_NAMED}" ]; then echo; fi\n')
    (host.outside / "leak.h").write_text(f"int {SECRET_NAMED.replace('-', '_')} = ;\n{SECRET_NAMED}\n")
    for path in (host.home / ".netrc", host.outside / "settings.toml", host.outside / "lib.sh",
                 host.outside / "leak.h"):
        os.chown(path, host.principal.uid, host.principal.gid)
    config = host.project / "codeward.toml"
    config.write_text(config.read_text() + f'\n[review.executables]\nruff = "{RUFF}"\n\n'
                      f'[beads]\nbackend = "bd"\nbd_command = "{stand_in}"\n')
    host.rebaseline()


async def test_analyzers_and_bd_read_and_run_project_content_only_in_the_box(host: Host) -> None:
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
        created = await session.call("bd_create", {"title": "planted"})  # bd runs the planted hook
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
    assert not created.is_error and "Created app-1" in created.text, created.text
    assert not (host.markers / "beads-hook").exists()  # the hook ran, in the box, out of the host's reach
